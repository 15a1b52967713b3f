#pragma once
// The error types every podplane library throws. main() turns them into
// "podplane: error: …" and an exit code (Error → 1, UsageError → 2).
#include <stdexcept>
#include <string>

namespace podplane {

// A failure the user can act on. The message says what and where; when it
// compares values it puts "  expected: …" and "  got:      …" on lines of their own.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad command-line input: exit code 2 and a "Try 'podplane … --help'" hint.
class UsageError : public Error {
 public:
  using Error::Error;
};

// "what\n  expected: E\n  got:      G", the one shape for every mismatch message.
inline std::string mismatch_message(const std::string& what, const std::string& expected,
                                    const std::string& got) {
  return what + "\n  expected: " + expected + "\n  got:      " + got;
}

}  // namespace podplane
