#include "net/oci_auth.hpp"

#include <algorithm>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/hex.hpp"
#include "base/input_limits.hpp"
#include "base/url.hpp"

namespace podplane::net {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// An auth file is a few entries; a larger one is not an auth file.
constexpr InputLimits kAuthFileLimits{.max_bytes = std::size_t{1} << 20, .max_depth = 16};

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// Reads a file of secrets. Only its name goes into messages: a JSON parser's own error text
// quotes the bytes around the fault, which may be a password.
json read_auth_file(const fs::path& file) {
  std::string text = read_file_within_limits(file, "auth file", kAuthFileLimits);
  check_json_shape(text, file.string(), JsonComments::reject, kAuthFileLimits);
  auto document = json::parse(text, nullptr, false);
  if (!document.is_object()) throw Error("auth file " + file.string() + " is not a JSON object (containers-auth.json)");
  return document;
}

// user:password, split at the first ':' (a password may hold ':'; a user name may not).
std::optional<RegistryLogin> split_login(const std::string& text, const std::string& source) {
  auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  return RegistryLogin{text.substr(0, colon), text.substr(colon + 1), source};
}

bool unsafe_header_text(const RegistryLogin& login) {
  return (login.username + login.password).find_first_of("\r\n") != std::string::npos;
}

// key="value" pairs of a WWW-Authenticate challenge after its scheme.
std::map<std::string, std::string> challenge_parameters(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (text[at] == ' ' || text[at] == ',')) ++at;
    auto equals = text.find('=', at);
    if (equals == std::string::npos) break;
    std::string key = ascii_lower(text.substr(at, equals - at));
    std::string value;
    at = equals + 1;
    if (at < text.size() && text[at] == '"') {
      for (++at; at < text.size() && text[at] != '"'; ++at) {
        if (text[at] == '\\' && at + 1 < text.size()) ++at;
        value += text[at];
      }
      ++at;
    } else {
      auto end = text.find(',', at);
      value = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
      at = end == std::string::npos ? text.size() : end;
    }
    out[key] = value;
  }
  return out;
}

std::string basic_authorization(const RegistryLogin& login) {
  return "Authorization: Basic " + base64_encode(login.username + ":" + login.password);
}

const char* verb(RegistryAccess access) { return access == RegistryAccess::push ? "push to" : "pull"; }

}  // namespace

std::string normalise_auth_key(const std::string& key) {
  // A key with a scheme is docker's legacy form: only its authority counts ("…/v1/").
  std::string text = key;
  if (has_http_scheme(key)) {
    const auto url = split_url(key);
    text = url ? authority(*url) : "";
  }
  while (!text.empty() && text.back() == '/') text.pop_back();
  // Otherwise a registry key is host[:port][/repository…], no URL: its authority is what comes
  // before the first "/".
  auto slash = text.find('/');
  std::string registry = ascii_lower(text.substr(0, slash));
  if (registry == "index.docker.io" || registry == "registry-1.docker.io") registry = "docker.io";
  return slash == std::string::npos ? registry : registry + text.substr(slash);
}

RegistryCredentials RegistryCredentials::load(const RegistryAuthOptions& options) {
  RegistryCredentials credentials;
  if (options.creds_file) {
    const auto& file = *options.creds_file;
    std::string text = read_file_within_limits(file, "--creds-file", InputLimits{.max_bytes = 64 * 1024, .max_depth = 1});
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    auto login = split_login(text, "--creds-file " + file.string());
    if (!login || text.find('\n') != std::string::npos || unsafe_header_text(*login))
      throw Error("--creds-file " + file.string() + ": expected one line user:password");
    credentials.creds_file_ = std::move(login);
    credentials.creds_registry_ = ascii_lower(options.creds_registry);
  }

  // Explicit: --authfile, else $REGISTRY_AUTH_FILE; that file only, and it must exist.
  std::vector<fs::path> files;
  std::string explicit_source;
  if (options.authfile) {
    files.push_back(*options.authfile);
    explicit_source = "--authfile";
  } else if (auto from_env = env("REGISTRY_AUTH_FILE"); !from_env.empty()) {
    files.push_back(from_env);
    explicit_source = "$REGISTRY_AUTH_FILE";
  } else {
    if (auto runtime = env("XDG_RUNTIME_DIR"); !runtime.empty()) files.push_back(fs::path(runtime) / "containers/auth.json");
    if (auto docker = env("DOCKER_CONFIG"); !docker.empty()) {
      files.push_back(fs::path(docker) / "config.json");
    } else if (auto home = env("HOME"); !home.empty()) {
      files.push_back(fs::path(home) / ".docker/config.json");
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& file = files[i];
    std::error_code ec;
    if (!fs::exists(file, ec)) {
      if (!explicit_source.empty()) throw Error(explicit_source + " " + file.string() + ": no such file");
      continue;
    }
    auto document = read_auth_file(file);
    std::string where = "auth file " + file.string();
    if (document.contains("auths")) {
      const auto& auths = document["auths"];
      if (!auths.is_object()) throw Error(where + ": \"auths\" is not an object");
      for (const auto& [key, entry] : auths.items()) {
        std::string field = where + ": auths[\"" + key + "\"]";
        if (!entry.is_object()) throw Error(field + " is not an object");
        std::optional<RegistryLogin> login;
        if (entry.contains("auth") && entry["auth"].is_string() && !entry["auth"].get<std::string>().empty()) {
          auto decoded = base64_decode(entry["auth"].get<std::string>());
          if (decoded) login = split_login(*decoded, where);
          if (!login) throw Error(field + ".auth is not the base64 of user:password");
        } else if (entry.contains("username") && entry["username"].is_string() && entry.contains("password") &&
                   entry["password"].is_string()) {
          login = RegistryLogin{entry["username"].get<std::string>(), entry["password"].get<std::string>(), where};
          if (login->username.empty()) throw Error(field + ".username is empty");
        } else {
          continue;  // an identity token or an empty entry: nothing podplane can send
        }
        if (unsafe_header_text(*login)) throw Error(field + " holds a line break");
        credentials.entries_.push_back({i, normalise_auth_key(key), std::move(*login)});
      }
    }
    if (document.contains("credHelpers") && document["credHelpers"].is_object()) {
      for (const auto& [key, helper] : document["credHelpers"].items())
        if (helper.is_string())
          credentials.helpers_.emplace(normalise_auth_key(key), "docker-credential-" + helper.get<std::string>() + " (" + where + ")");
    }
    if (document.contains("credsStore") && document["credsStore"].is_string())
      credentials.helpers_.emplace("*", "docker-credential-" + document["credsStore"].get<std::string>() + " (" + where + ")");
  }
  return credentials;
}

std::optional<RegistryLogin> RegistryCredentials::find(const std::string& registry, const std::string& repository) const {
  std::string host = normalise_auth_key(registry);
  if (creds_file_ && host == normalise_auth_key(creds_registry_)) return creds_file_;
  // Per file in lookup order, the most specific key: host/a/b/c, host/a/b, host/a, host.
  std::size_t files = 0;
  for (const auto& entry : entries_) files = std::max(files, entry.file + 1);
  for (std::size_t file = 0; file < files; ++file) {
    std::string candidate = host + "/" + repository;
    for (;;) {
      for (const auto& entry : entries_)
        if (entry.file == file && entry.key == candidate) return entry.login;
      auto slash = candidate.rfind('/');
      if (slash == std::string::npos) break;
      candidate.erase(slash);
    }
  }
  return std::nullopt;
}

std::string RegistryCredentials::helper_note(const std::string& registry) const {
  auto it = helpers_.find(normalise_auth_key(registry));
  if (it == helpers_.end()) it = helpers_.find("*");
  if (it == helpers_.end()) return "";
  return " (a credential helper, " + it->second + ", is configured for it: podplane runs no helper program, so "
         "put the login in an auths entry)";
}

std::string RegistryAuth::how_to_log_in() const {
  std::string files = "--authfile FILE (an auths file as `skopeo login` or `docker login` writes it; by default "
                      "$REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json or ~/.docker/config.json)";
  if (access_ == RegistryAccess::push) return "give credentials with --creds-file FILE (one line user:password) or " + files;
  return "give credentials with " + files;
}

std::vector<std::string> RegistryAuth::headers(const std::string& registry, const std::string& repository) const {
  auto it = authorization_.find(key(registry, repository));
  if (it == authorization_.end()) return {};
  return {it->second.header};
}

std::string RegistryAuth::wants_credentials(const std::string& registry, const std::string& repository,
                                            const std::string& url, const std::string& status) const {
  return "the registry " + registry + " wants credentials to " + verb(access_) + " " + repository + " (" +
         redact_url(url) + ": " + status + "); " + how_to_log_in() + credentials_.helper_note(registry);
}

void RegistryAuth::answer(HttpClient& http, const std::string& registry, const std::string& repository,
                          const std::string& url, const HttpResponse& unauthorized) {
  std::string challenge = unauthorized.header("www-authenticate");
  auto space = challenge.find(' ');
  std::string scheme = ascii_lower(challenge.substr(0, space));
  auto login = credentials_.find(registry, repository);

  if (scheme == "basic") {
    if (!login) throw Error(wants_credentials(registry, repository, url, unauthorized.status_text()));
    authorization_[key(registry, repository)] = {basic_authorization(*login), login->source};
    return;
  }
  if (scheme != "bearer") {
    if (!login) throw Error(wants_credentials(registry, repository, url, unauthorized.status_text()));
    throw Error("the registry " + registry + " asks for " + (scheme.empty() ? "no known" : scheme) +
                " authentication for " + redact_url(url) + "; podplane speaks Basic and Bearer (token) auth");
  }

  auto parameters = challenge_parameters(space == std::string::npos ? "" : challenge.substr(space + 1));
  std::string realm = parameters["realm"];
  if (realm.empty()) throw Error("the registry " + registry + " sent a Bearer challenge without a realm");
  if (!has_http_scheme(realm))
    throw Error("the registry " + registry + " names a token realm that is not an http(s) URL");
  // Credentials go to the realm the registry names, but never in clear text from a TLS registry.
  if (login && ascii_istarts_with(realm, "http://") && ascii_istarts_with(url, "https://"))
    throw Error("the registry " + registry + " names a plain-http token realm (" + redact_url(realm) +
                "); podplane does not send credentials over plain http");
  std::string scope = parameters.count("scope")
                          ? parameters["scope"]
                          : "repository:" + repository + (access_ == RegistryAccess::push ? ":pull,push" : ":pull");
  std::string token_url = realm + (realm.find('?') == std::string::npos ? "?" : "&");
  if (!parameters["service"].empty()) token_url += "service=" + percent_encoded(parameters["service"]) + "&";
  // A challenge may ask for several scopes (a cross-repository mount): one parameter each.
  std::size_t at = 0;
  bool first = true;
  while (at <= scope.size()) {
    auto end = scope.find(' ', at);
    std::string one = scope.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!one.empty()) {
      token_url += std::string(first ? "" : "&") + "scope=" + percent_encoded(one);
      first = false;
    }
    if (end == std::string::npos) break;
    at = end + 1;
  }
  std::vector<std::string> headers{"Accept: application/json"};
  if (login) headers.push_back(basic_authorization(*login));
  auto answer = http.get(token_url, headers);
  if (answer.status == 401 || answer.status == 403) {
    if (!login) throw Error(wants_credentials(registry, repository, url, unauthorized.status_text()));
    throw Error("the token service " + redact_url(realm) + " of " + registry + " refused the login from " + login->source +
                " for " + repository + " (" + answer.status_text() + ")");
  }
  if (answer.status != 200)
    throw Error("cannot get a token to " + std::string(verb(access_)) + " " + repository + " from " + redact_url(realm) +
                ": " + answer.status_text());
  auto document = json::parse(answer.body, nullptr, false);
  std::string token;
  if (document.is_object()) {
    for (const char* name : {"token", "access_token"})
      if (token.empty() && document.contains(name) && document[name].is_string()) token = document[name].get<std::string>();
  }
  if (token.empty() || token.find_first_of("\r\n") != std::string::npos)
    throw Error("the token service " + redact_url(realm) + " answered no usable token for " + registry + "/" + repository);
  authorization_[key(registry, repository)] = {"Authorization: Bearer " + token, login ? login->source : ""};
}

Error RegistryAuth::refused(const std::string& registry, const std::string& repository, const std::string& url) const {
  auto it = authorization_.find(key(registry, repository));
  if (it == authorization_.end() || it->second.login_source.empty())
    return Error(wants_credentials(registry, repository, url, "HTTP 401"));
  return Error("the registry " + registry + " refused the login from " + it->second.login_source + " to " + verb(access_) +
               " " + repository + " (" + redact_url(url) + ": HTTP 401)");
}

}  // namespace podplane::net
