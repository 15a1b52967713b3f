#pragma once
// A real OCI registry for tests and benchmarks: Debian's docker-registry (CNCF distribution) on
// a free loopback port, and images made by tests/tools/images/make_image.py (OCI layouts,
// multi-arch, shared layers) copied into it by skopeo with their digests preserved.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {

using nlohmann::json;

// A login of the registry's htpasswd file (bcrypt, `htpasswd -B` as distribution wants it).
struct RegistryLogin {
  std::string user;
  std::string password;
  std::string pair() const { return user + ":" + password; }
};

// Debian's docker-registry (CNCF distribution) on a free loopback port, storage in `dir`;
// with `login`, every request needs it (htpasswd Basic auth).
class DockerRegistry {
 public:
  explicit DockerRegistry(const fs::path& dir, const std::optional<RegistryLogin>& login = std::nullopt)
      : dir_(dir), port_(free_port()) {
    std::string auth;
    if (login) {
      fs::create_directories(dir);
      auto made = run({"htpasswd", "-B", "-b", "-c", (dir / "htpasswd").string(), login->user, login->password});
      if (made.exit_code != 0) throw std::runtime_error("htpasswd (apache2-utils): " + made.err);
      auth = "auth:\n  htpasswd:\n    realm: fixture\n    path: " + (dir / "htpasswd").string() + "\n";
    }
    podplane::test::write_file(dir / "config.yml", "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: " +
                                                       (dir / "data").string() + "\n  delete:\n    enabled: false\nhttp:\n  addr: 127.0.0.1:" +
                                                       std::to_string(port_) + "\n" + auth);
    process_ = std::make_unique<Background>(std::vector<std::string>{"docker-registry", "serve", (dir / "config.yml").string()},
                                            std::map<std::string, std::string>{}, dir / "stderr.log");
    if (!wait_for_port(port_)) throw std::runtime_error("docker-registry did not start: " + podplane::test::read_file(dir / "stderr.log"));
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string base() const { return "http://" + host(); }
  // The file distribution keeps a blob's bytes in.
  fs::path blob_file(const std::string& digest) const {
    std::string hex = digest.substr(7);
    return dir_ / "data" / "docker" / "registry" / "v2" / "blobs" / "sha256" / hex.substr(0, 2) / hex / "data";
  }

 private:
  fs::path dir_;
  int port_;
  std::unique_ptr<Background> process_;
};

// An image written as an OCI layout by tests/tools/images/make_image.py and copied into the
// registry by skopeo, digests preserved. `summary` is make_image.py's JSON.
// `login`: the registry's, given to skopeo.
inline json push_image(const fs::path& work, const DockerRegistry& registry, const std::string& name, const std::string& tag,
                       const std::vector<std::string>& platforms, const std::string& seed,
                       const std::vector<std::string>& sizes = {}, const std::optional<RegistryLogin>& login = std::nullopt) {
  fs::path layout = work / ("layout-" + seed);
  std::vector<std::string> argv{"python3", (podplane::test::source_dir() / "tests/tools/images/make_image.py").string(),
                                layout.string(), "--tag", tag, "--seed", seed};
  for (const auto& platform : platforms) argv.insert(argv.end(), {"--platform", platform});
  argv.insert(argv.end(), sizes.begin(), sizes.end());  // --shared-size N --own-size N
  auto made = run(argv);
  must(made, "make_image.py");
  std::vector<std::string> copy{"skopeo", "copy", "--quiet", "--all", "--preserve-digests", "--dest-tls-verify=false"};
  if (login) copy.insert(copy.end(), {"--dest-creds", login->pair()});
  copy.insert(copy.end(), {"oci:" + layout.string() + ":" + tag, "docker://" + registry.host() + "/" + name + ":" + tag});
  must(run(copy), "skopeo copy into the registry");
  return json::parse(made.out);
}

}  // namespace podplane::serve_test
