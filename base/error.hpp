#pragma once
// The error types every podplane library throws. main() turns them into
// "podplane: error: …" and an exit code (Error → 1, UsageError → 2).
#include <memory>
#include <stdexcept>
#include <string>

namespace podplane {

// A failure the user can act on. The message says what and where; when it
// compares values it puts "  expected: …" and "  got:      …" on lines of their own.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message)
      : std::runtime_error(message), message_(std::make_shared<const std::string>(message)) {}
  explicit Error(const char* message) : Error(std::string(message)) {}

  // The whole message: a NUL byte from outside (a config key, an upstream string) would end
  // what() early and hide the rest. main() prints this one.
  const std::string& message() const { return *message_; }

 private:
  std::shared_ptr<const std::string> message_;  // shared: copying an exception must not throw
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
