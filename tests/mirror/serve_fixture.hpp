#pragma once
// Shared by the serve tests and the serve benchmark: a synthetic store filled through the
// Store API (real zips, a SHA256SUMS signed by real gpg, keys JSON, a module tree, vmconfig
// rows), a libcurl fetch helper, background processes with a readiness line, and free ports.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/digest.hpp"
#include "cache/store.hpp"
#include "lockfile/hash.hpp"
#include "tests/support/background.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/tls.hpp"

namespace podplane::serve_test {

namespace fs = std::filesystem;
using podplane::test::run;
using podplane::test::show;
using podplane::test::write_file;

inline std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 gen(seed);
  std::string bytes(size, '\0');
  for (auto& c : bytes) c = static_cast<char>(gen() & 0xff);
  return bytes;
}

inline void must(const podplane::test::ProcessResult& result, const std::string& what) {
  if (result.exit_code != 0) throw std::runtime_error(what + " failed: " + result.err + result.out);
}

// What the synthetic store holds, for assertions.
struct Provider {
  std::string address, version;
  std::map<std::string, std::string> zip_digest;  // platform → sha256
  std::map<std::string, std::string> zip_h1;
  std::map<std::string, fs::path> zip_file;
  std::string shasums_text, keys_json;
  std::string signature;
  bool signed_release = true;
};

struct StoreContents {
  std::vector<Provider> providers;
  std::string module_address = "registry.opentofu.org/nstance-dev/nstance/aws";
  std::string module_version = "2.0.1";
  std::map<std::string, std::string> module_files;  // path → content
  std::string manifest_name = "vmconfig_knc_debian-13_amd64.json";
  std::string manifest_text;
  std::string artifact_path = "/vmconfig/artifacts/containerd/2.3.1/containerd-2.3.1-linux-amd64.tar.gz";
  std::string artifact_bytes;
  fs::path gnupg_home;
};

// A provider zip as published: one executable inside, made by Info-ZIP's zip.
inline fs::path make_provider_zip(const fs::path& work, const std::string& type, const std::string& version,
                                  const std::string& platform, std::size_t payload) {
  fs::path dir = work / ("zip-" + type + "-" + version + "-" + platform);
  std::string exe = "terraform-provider-" + type + "_v" + version + "_x5";
  write_file(dir / exe, "#!/bin/sh\n# " + platform + "\n" + random_bytes(payload, static_cast<unsigned>(payload + platform.size())));
  fs::path zip = work / ("terraform-provider-" + type + "_" + version + "_" + platform + ".zip");
  must(run({"zip", "-q", "-X", "-j", zip.string(), (dir / exe).string()}), "zip");
  return zip;
}

// The provider_package row of `zip`, whose bytes it adds to `store` (the row itself is not added).
inline cache::Artifact package_row(cache::Store& store, const fs::path& zip, const std::string& address,
                                   const std::string& version, const std::string& platform, cache::Trust trust) {
  cache::Artifact artifact = podplane::test::provider_package_row(store.add_file(zip), platform, address, version);
  artifact.filename = zip.filename().string();
  artifact.size = static_cast<std::int64_t>(fs::file_size(zip));
  artifact.h1 = lockfile::h1_hash_of_zip(zip);
  artifact.zh = cache::zh_of(artifact);
  artifact.upstream_url = "https://releases.podplane.invalid/" + artifact.filename;
  artifact.trust = trust;
  return artifact;
}

// hashicorp/null `version` for `platforms`, added to the store at `deps_root` as an unsigned
// release in one transaction: what a delta import or a fill adds while a server watches.
inline void add_null_release(const fs::path& deps_root, const fs::path& work, const std::string& version,
                             const std::vector<std::string>& platforms) {
  auto store = cache::Store::open(deps_root);
  store.in_transaction([&] {
    for (const auto& platform : platforms) {
      fs::path zip = make_provider_zip(work, "null", version, platform, 2048);
      (void)store.add_artifact(
          package_row(store, zip, "registry.opentofu.org/hashicorp/null", version, platform, cache::Trust::unverified));
    }
  });
}

inline std::string digest_of(const std::string& bytes) { return "sha256:" + sha256_hex(bytes); }

// Fills `deps_root` through the Store API. Signs the SHA256SUMS with a fresh gpg key whose
// user id is `signer` (upstream text: the catalogue tests make it hostile).
inline StoreContents fill_store(const fs::path& deps_root, const fs::path& work, std::size_t zip_payload = 4096,
                                std::size_t artifact_size = 3 * 1024 * 1024,
                                const std::string& signer = "Podplane Test Signer <test@podplane.invalid>") {
  StoreContents contents;
  auto store = cache::Store::open(deps_root);

  contents.gnupg_home = work / "gnupg";
  fs::create_directories(contents.gnupg_home);
  fs::permissions(contents.gnupg_home, fs::perms::owner_all);
  podplane::test::ProcessOptions gpg_env;
  gpg_env.env["GNUPGHOME"] = contents.gnupg_home.string();
  must(run({"gpg", "--batch", "--passphrase", "", "--quick-gen-key", signer,
            "ed25519", "sign", "never"},
           gpg_env),
       "gpg --quick-gen-key");
  auto armored = run({"gpg", "--batch", "--armor", "--export"}, gpg_env);
  must(armored, "gpg --export");
  auto listed = run({"gpg", "--batch", "--with-colons", "--list-keys"}, gpg_env);
  std::string key_id;
  for (std::size_t at = listed.out.find("pub:"); at != std::string::npos;) {
    auto line = listed.out.substr(at, listed.out.find('\n', at) - at);
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (std::size_t colon; (colon = line.find(':', start)) != std::string::npos; start = colon + 1)
      fields.push_back(line.substr(start, colon - start));
    if (fields.size() > 4) key_id = fields[4];
    break;
  }
  nlohmann::json keys = {{"gpg_public_keys",
                          nlohmann::json::array({{{"key_id", key_id},
                                                  {"ascii_armor", armored.out},
                                                  {"trust_signature", ""},
                                                  {"source", "Podplane tests"},
                                                  {"source_url", "https://podplane.invalid/"}}})}};

  auto add_provider = [&](const std::string& address, const std::string& version,
                          const std::vector<std::string>& platforms, bool signed_release) {
    Provider provider;
    provider.address = address;
    provider.version = version;
    provider.signed_release = signed_release;
    std::string type = address.substr(address.rfind('/') + 1);
    std::vector<std::int64_t> ids;
    for (const auto& platform : platforms) {
      fs::path zip = make_provider_zip(work, type, version, platform, zip_payload);
      cache::Artifact artifact = package_row(store, zip, address, version, platform,
                                             signed_release ? cache::Trust::signed_upstream : cache::Trust::unverified);
      ids.push_back(store.add_artifact(artifact));
      provider.zip_digest[platform] = artifact.digest;
      provider.zip_h1[platform] = artifact.h1;
      provider.zip_file[platform] = zip;
      provider.shasums_text += artifact.digest + "  " + artifact.filename + "\n";
    }
    if (signed_release) {
      std::string base = "terraform-provider-" + type + "_" + version;
      fs::path sums = work / (base + "_SHA256SUMS");
      write_file(sums, provider.shasums_text);
      must(run({"gpg", "--batch", "--yes", "--detach-sign", "-o", (work / (base + "_SHA256SUMS.sig")).string(),
                sums.string()},
               gpg_env),
           "gpg --detach-sign");
      provider.signature = podplane::test::read_file(work / (base + "_SHA256SUMS.sig"));
      provider.keys_json = keys.dump();
      auto add_doc = [&](cache::ArtifactKind kind, const std::string& filename, const std::string& bytes) {
        cache::Artifact doc = podplane::test::provider_document_row(kind, store.add_bytes(bytes), address, version);
        doc.filename = filename;
        doc.size = static_cast<std::int64_t>(bytes.size());
        doc.upstream_url = "https://releases.podplane.invalid/" + filename;
        store.add_artifact(doc);
        return doc.digest;
      };
      cache::Provenance provenance;
      provenance.shasums_digest = add_doc(cache::ArtifactKind::provider_shasums, base + "_SHA256SUMS", provider.shasums_text);
      provenance.signature_digest = add_doc(cache::ArtifactKind::provider_signature, base + "_SHA256SUMS.sig", provider.signature);
      provenance.keys_digest = add_doc(cache::ArtifactKind::provider_keys, base + "_signing_keys.json", provider.keys_json);
      provenance.key_fingerprint = key_id;
      provenance.result = "signed";
      for (auto id : ids) {
        provenance.artifact_id = id;
        store.add_provenance(provenance);
      }
    }
    contents.providers.push_back(std::move(provider));
  };
  add_provider("registry.opentofu.org/hashicorp/null", "3.2.4", {"linux_amd64", "linux_arm64"}, true);
  add_provider("registry.opentofu.org/hashicorp/null", "3.2.3", {"linux_amd64"}, true);
  add_provider("registry.terraform.io/hashicorp/random", "3.6.0", {"linux_amd64"}, false);

  contents.module_files = {{"main.tf", "module \"cluster\" {\n  source = \"./modules/cluster\"\n}\n"},
                           {"modules/cluster/main.tf", "variable \"cluster_id\" {}\n"},
                           {"modules/cluster/outputs.tf", "output \"id\" { value = var.cluster_id }\n"},
                           {"scripts/render.sh", "#!/bin/sh\necho render\n"},
                           {"README.md", "# nstance\n"}};
  cache::ModuleTree tree;
  tree.address = contents.module_address;
  tree.version = contents.module_version;
  tree.upstream_url = "https://registry.opentofu.org/v1/modules/nstance-dev/nstance/aws/2.0.1/download";
  std::vector<std::pair<std::string, std::string>> hashed;
  for (const auto& [path, text] : contents.module_files) {
    cache::ModuleFile file;
    file.path = path;
    file.mode = path.find(".sh") != std::string::npos ? 0755 : 0644;
    file.digest = store.add_bytes(text);
    file.size = static_cast<std::int64_t>(text.size());
    tree.files.push_back(file);
    hashed.emplace_back(path, file.digest);
  }
  tree.h1 = lockfile::h1_hash(hashed);
  store.add_module_tree(tree);

  contents.artifact_bytes = random_bytes(artifact_size, 7);
  cache::Artifact artifact = podplane::test::vmconfig_artifact_row(
      store.add_bytes(contents.artifact_bytes), "containerd", "2.3.1",
      "https://github.com/containerd/containerd/releases/download/v2.3.1/containerd-2.3.1-linux-amd64.tar.gz");
  artifact.size = static_cast<std::int64_t>(contents.artifact_bytes.size());
  store.add_artifact(artifact);

  nlohmann::json manifest = {
      {"vmconfig",
       {{"version", "1.4.0"},
        {"kind", "knc"},
        {"dependencies",
         {{"containerd",
           {{"version", "2.3.1"}, {"url", artifact.upstream_url}, {"type", "tar.gz"}, {"digest", artifact.upstream_digest},
            {"size", artifact.size}}}}}}}};
  contents.manifest_text = manifest.dump(2) + "\n";
  cache::Artifact manifest_row =
      podplane::test::vmconfig_manifest_row(store.add_bytes(contents.manifest_text), "vmconfig_knc_debian-13_amd64", "1.4.0");
  manifest_row.filename = contents.manifest_name;
  manifest_row.size = static_cast<std::int64_t>(contents.manifest_text.size());
  manifest_row.upstream_url = "https://deps.podplane.dev/manifests/" + contents.manifest_name;
  manifest_row.trust = cache::Trust::checksum;
  store.add_artifact(manifest_row);

  cache::TfSelection selection;
  selection.providers = {{"registry.opentofu.org/hashicorp/null", "3.2.4", ">= 3.0.0"}};
  selection.platforms = {"linux_amd64", "linux_arm64"};
  selection.module_address = contents.module_address;
  selection.module_version = contents.module_version;
  store.set_tf_selection(selection);
  return contents;
}

// Damages a read-only store object in place, as a failing disk or a stray write would: flips
// `count` bytes in its middle and keeps its size and mtime (only the bytes and the inode's
// ctime change). Throws when the file cannot be changed.
inline void corrupt_in_place(const fs::path& object, std::size_t count = 16) {
  struct stat before {};
  if (::stat(object.c_str(), &before) != 0) throw std::runtime_error("cannot stat " + object.string());
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  {
    std::fstream file(object, std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(before.st_size / 2);
    std::string bytes(count, '\0');
    file.seekg(middle);
    file.read(bytes.data(), static_cast<std::streamsize>(count));
    for (auto& byte : bytes) byte = static_cast<char>(~byte);
    file.seekp(middle);
    file.write(bytes.data(), static_cast<std::streamsize>(count));
    if (!file) throw std::runtime_error("cannot damage " + object.string());
  }
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::remove);
  timespec times[2] = {before.st_atim, before.st_mtim};
  if (::utimensat(AT_FDCWD, object.c_str(), times, 0) != 0) throw std::runtime_error("cannot set the times of " + object.string());
}

// ---------------------------------------------------------------------------------------------
// HTTP with libcurl (our own client code; TLS verified against the test CA).

struct HttpAnswer {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-cased
  std::string body;
  std::string error;  // libcurl error text when the transfer failed
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

struct HttpRequest {
  std::string method = "GET";
  std::vector<std::string> headers;
  std::optional<fs::path> ca_file;
  bool path_as_is = true;  // send hostile paths exactly as written
};

class CurlSession {
 public:
  CurlSession() : easy_(curl_easy_init()) {}
  ~CurlSession() { curl_easy_cleanup(easy_); }
  CurlSession(const CurlSession&) = delete;
  CurlSession& operator=(const CurlSession&) = delete;

  HttpAnswer fetch(const std::string& url, const HttpRequest& request = {}) {
    HttpAnswer answer;
    curl_easy_reset(easy_);
    curl_slist* list = nullptr;
    for (const auto& header : request.headers) list = curl_slist_append(list, header.c_str());
    curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy_, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(easy_, CURLOPT_PATH_AS_IS, request.path_as_is ? 1L : 0L);
    if (request.ca_file) curl_easy_setopt(easy_, CURLOPT_CAINFO, request.ca_file->c_str());
    if (request.method == "HEAD") curl_easy_setopt(easy_, CURLOPT_NOBODY, 1L);
    else if (request.method != "GET") {
      curl_easy_setopt(easy_, CURLOPT_CUSTOMREQUEST, request.method.c_str());
      curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, "x=1");
    }
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t count, void* context) {
      static_cast<HttpAnswer*>(context)->body.append(data, size * count);
      return size * count;
    });
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(easy_, CURLOPT_HEADERFUNCTION, +[](char* data, size_t size, size_t count, void* context) {
      auto* a = static_cast<HttpAnswer*>(context);
      std::string line(data, size * count);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        const std::string name = ascii_lower(line.substr(0, colon));
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        value.erase(value.find_last_not_of(" \t\r\n") + 1);
        a->headers[name] = value;
      }
      return size * count;
    });
    curl_easy_setopt(easy_, CURLOPT_HEADERDATA, &answer);
    CURLcode code = curl_easy_perform(easy_);
    if (code != CURLE_OK) answer.error = curl_easy_strerror(code);
    curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &answer.status);
    curl_slist_free_all(list);
    return answer;
  }

 private:
  CURL* easy_;
};

// The value of the sample `series` of a /metrics exposition (name and labels exactly as
// exposed), or -1 when absent.
inline double sample_value(const std::string& exposition, const std::string& series) {
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);)
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ')
      return std::stod(line.substr(series.size() + 1));
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Processes and ports.

inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) throw std::runtime_error("bind failed");
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  int port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

inline bool port_accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

using podplane::test::Background;

// Waits (bounded) until `port` accepts connections: the readiness probe for nginx and the registry.
inline bool wait_for_port(int port, std::chrono::seconds timeout = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (port_accepts(port)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// A TCP connection to 127.0.0.1:`port` from the loopback address `source` (all of 127.0.0.0/8 is
// loopback on Linux, so one test can play several client addresses). -1 when it fails.
// `receive_buffer`: set before connect, which turns off its growth, so that a client that does
// not read blocks the server's writes soon.
inline int connect_from(const std::string& source, int port, std::optional<int> receive_buffer = std::nullopt) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (receive_buffer) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &*receive_buffer, sizeof *receive_buffer);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  remote.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True when the peer has closed (or reset) `fd`; false while it is open and quiet.
inline bool peer_closed(int fd) {
  char byte;
  ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  if (n == 0) return true;
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  return false;
}

// Waits (bounded) until the peer closes `fd`; false when `timeout` passes first.
inline bool wait_peer_closed(int fd, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 100);
    if (peer_closed(fd)) return true;
    char sink[4096];
    if (p.revents & POLLIN) (void)::recv(fd, sink, sizeof sink, MSG_DONTWAIT);  // drain an answer
  }
  return false;
}

// The port of "http[s]://127.0.0.1:PORT[/…]".
inline int port_of(const std::string& url) {
  auto colon = url.rfind(':');
  return std::stoi(url.substr(colon + 1));
}

// `podplane mirror serve` over `deps_root` with `args` in the background. url() is the base URL
// without the trailing '/', or "" when the server did not start (then exit_code() says why).
class MirrorServe {
 public:
  MirrorServe(const fs::path& deps_root, const std::vector<std::string>& args, const fs::path& err_file)
      : err_file_(err_file) {
    std::vector<std::string> argv{podplane::test::podplane_binary().string(), "mirror", "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = std::make_unique<Background>(argv, std::map<std::string, std::string>{{"PODPLANE_DEPS_CACHE_DIR", deps_root.string()}},
                                            err_file);
    url_ = process_->first_line();
    if (!url_.empty() && url_.back() == '/') url_.pop_back();
  }
  const std::string& url() const { return url_; }
  bool started() const { return !url_.empty(); }
  std::string log() const { return podplane::test::read_file(err_file_); }
  int stop() { return process_->stop(); }
  pid_t pid() const { return process_->pid(); }

 private:
  fs::path err_file_;
  std::unique_ptr<Background> process_;
  std::string url_;
};

}  // namespace podplane::serve_test
