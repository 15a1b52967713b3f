#pragma once
// A throwaway gpg home with one key per algorithm ("rsa", "ed25519", and "wrong", a key no
// registry lists), made once per test binary by the real gpg, for signatures that librnp checks.
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

namespace podplane::test {

class GpgKeys {
 public:
  GpgKeys();
  GpgKeys(const GpgKeys&) = delete;
  GpgKeys& operator=(const GpgKeys&) = delete;

  std::string armor(const std::string& name) const { return armors_.at(name); }
  std::string fingerprint(const std::string& name) const { return fingerprints_.at(name); }

  // A binary (or armored) detached signature of `data` by key `name`.
  std::string sign(const std::string& name, const std::string& data, bool armored = false);

 private:
  std::vector<std::string> gpg(std::vector<std::string> args) const;
  void make(const std::string& name, const std::string& algo);

  TempDir home_;  // its destructor stops the gpg-agent that gpg started there
  TempDir scratch_;
  int counter_ = 0;
  std::map<std::string, std::string> armors_;
  std::map<std::string, std::string> fingerprints_;
};

// The keys of this test binary; throws when gpg is not installed.
GpgKeys& gpg_keys();

// The lines of `text` that librnp's own log wrote ("[signed_validate_signature()
// ./src/librepgp/stream-parse.cpp:809] signer's key not found"): none may reach a user.
inline std::vector<std::string> librnp_log_lines(const std::string& text) {
  static const std::regex logged(R"(^\[\w+\(\) [^\]]*:[0-9]+\] )");
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, logged)) lines.push_back(line);
  return lines;
}

}  // namespace podplane::test
