#include "tests/support/gpg_keys.hpp"

#include <stdexcept>

namespace podplane::test {

GpgKeys::GpgKeys() {
  if (!have_program("gpg")) throw std::runtime_error("gpg is not installed (apt-get install gpg)");
  make("rsa", "rsa2048");
  make("ed25519", "ed25519");
  make("wrong", "ed25519");
}

std::string GpgKeys::sign(const std::string& name, const std::string& data, bool armored) {
  auto file = scratch_ / ("data-" + std::to_string(++counter_));
  write_file(file, data);
  std::vector<std::string> args = gpg({"--local-user", fingerprint(name), "--detach-sign"});
  if (armored) args.push_back("--armor");
  args.insert(args.end(), {"--output", file.string() + ".sig", file.string()});
  auto result = run(args);
  if (result.exit_code != 0) throw std::runtime_error("gpg sign failed: " + result.err);
  return read_file(file.string() + ".sig");
}

std::vector<std::string> GpgKeys::gpg(std::vector<std::string> args) const {
  std::vector<std::string> all{"gpg", "--homedir", home_.path().string(), "--batch", "--yes", "--quiet",
                               "--pinentry-mode", "loopback", "--passphrase", ""};
  all.insert(all.end(), args.begin(), args.end());
  return all;
}

void GpgKeys::make(const std::string& name, const std::string& algo) {
  std::string uid = "Test " + name + " <" + name + "@test.invalid>";
  auto result = run(gpg({"--quick-gen-key", uid, algo, "sign", "never"}));
  if (result.exit_code != 0) throw std::runtime_error("gpg keygen failed: " + result.err);
  auto listing = run(gpg({"--with-colons", "--list-keys", uid})).out;
  auto at = listing.find("\nfpr:");
  fingerprints_[name] = listing.substr(at + 13, 40);
  armors_[name] = run(gpg({"--armor", "--export", fingerprints_[name]})).out;
}

GpgKeys& gpg_keys() {
  static GpgKeys instance;
  return instance;
}

}  // namespace podplane::test
