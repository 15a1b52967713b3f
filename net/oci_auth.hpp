#pragma once
// Container registry credentials, taken the way skopeo and docker take them and never from
// the command line: an auth file (`--authfile FILE`, else $REGISTRY_AUTH_FILE, else
// $XDG_RUNTIME_DIR/containers/auth.json, then $DOCKER_CONFIG/config.json or
// ~/.docker/config.json) with `auths` entries as `skopeo login` and `docker login` write them,
// or, for `mirror push`, `--creds-file FILE` holding `user:password` for the registry pushed to.
// RegistryAuth answers a registry's 401 challenges with them: Basic directly, Bearer through
// the token realm the challenge names (the credentials go to that realm, as the distribution
// spec says). Both the image puller (fetch/oci_registry.hpp) and `mirror push` (mirror/push.hpp)
// use it. A password is held in memory only: no message, log, row, bundle or file ever
// carries it (errors name the file it came from). Not thread-safe. Errors: podplane::Error.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "net/http.hpp"

namespace podplane::net {

// Where credentials come from, as the user gave them (both empty: the standard places).
struct RegistryAuthOptions {
  std::optional<std::filesystem::path> authfile;    // --authfile: this file and no other
  std::optional<std::filesystem::path> creds_file;  // --creds-file: user:password for `creds_registry`
  std::string creds_registry;                       // host[:port] the creds file is for
};

// One login. `source` says where it came from ("--creds-file", "auth file …/auth.json") for
// messages; the password itself is never shown.
struct RegistryLogin {
  std::string username;
  std::string password;
  std::string source;
};

class RegistryCredentials {
 public:
  RegistryCredentials() = default;  // none: every request is anonymous

  // Reads the creds file and the auth file the rules above pick (a missing standard file is
  // skipped; a missing --authfile, --creds-file or $REGISTRY_AUTH_FILE is an error). Errors
  // name the file and what is wrong with it, never a value from it.
  [[nodiscard]] static RegistryCredentials load(const RegistryAuthOptions& options);

  // The login for `repository` at `registry`: the creds file's for its registry, else the
  // auth file's most specific `auths` key (registry/namespace/repo, …, registry).
  [[nodiscard]] std::optional<RegistryLogin> find(const std::string& registry, const std::string& repository) const;

  // A note for a 401 message when a docker config names a credential helper for `registry`
  // (podplane runs no helper program), else "".
  [[nodiscard]] std::string helper_note(const std::string& registry) const;

 private:
  struct Entry {
    std::size_t file = 0;  // which auth file, in lookup order
    std::string key;       // registry[/path], normalised
    RegistryLogin login;
  };
  std::vector<Entry> entries_;
  std::optional<RegistryLogin> creds_file_;  // for creds_registry_
  std::string creds_registry_;
  std::map<std::string, std::string> helpers_;  // registry key ("*": credsStore) → "helper X in FILE"
};

// The registry key an auths entry stands for: "https://index.docker.io/v1/" → "docker.io",
// "http://host:5000/v2/" → "host:5000", "host/ns/repo" stays. Public for tests.
[[nodiscard]] std::string normalise_auth_key(const std::string& key);

enum class RegistryAccess { pull, push };

// The Authorization of each repository of one registry client, learnt from 401 challenges.
class RegistryAuth {
 public:
  RegistryAuth(RegistryCredentials credentials, RegistryAccess access)
      : credentials_(std::move(credentials)), access_(access) {}

  // How a 401 without a login tells the user to log in, for this access.
  [[nodiscard]] std::string how_to_log_in() const;

  // The header to send with a request for `repository` ({} until a challenge asked for one).
  [[nodiscard]] std::vector<std::string> headers(const std::string& registry, const std::string& repository) const;

  // After `unauthorized` (a 401 for `url`): works out the Authorization its WWW-Authenticate
  // asks for, getting a token from the realm (over `http`) for Bearer. Throws an Error that
  // names the registry, the repository and what to do when there is nothing to try: no login
  // (how_to_log_in()), or a login the token realm refused (naming its source).
  void answer(HttpClient& http, const std::string& registry, const std::string& repository, const std::string& url,
              const HttpResponse& unauthorized);

  // The Error for a second 401 after answer(): the registry refused what was sent.
  [[nodiscard]] Error refused(const std::string& registry, const std::string& repository, const std::string& url) const;

 private:
  std::string key(const std::string& registry, const std::string& repository) const { return registry + "/" + repository; }
  std::string wants_credentials(const std::string& registry, const std::string& repository, const std::string& url,
                                const std::string& status) const;

  RegistryCredentials credentials_;
  RegistryAccess access_;
  struct Authorization {
    std::string header;        // "Authorization: …"
    std::string login_source;  // where its login came from; "" for an anonymous token
  };
  std::map<std::string, Authorization> authorization_;  // registry/repository → what to send
};

}  // namespace podplane::net
