// mirror serve: the site built from the index, and the HTTPS server answering it.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <set>
#include <thread>

#include "base/error.hpp"
#include "mirror/serve_site.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::read_file;
using podplane::test::TempDir;

std::string resolve_relative(const std::string& base_path, const std::string& reference) {
  // Minimal RFC 3986 merge for path references (what Go's ResolveReference does for ours).
  std::string dir = base_path.substr(0, base_path.rfind('/') + 1);
  std::string merged = reference.rfind('/', 0) == 0 ? reference : dir + reference;
  std::vector<std::string> out;
  std::size_t start = 1;
  while (start <= merged.size()) {
    auto end = merged.find('/', start);
    std::string segment = merged.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (segment == "..") {
      if (!out.empty()) out.pop_back();
    } else if (segment != ".") {
      out.push_back(segment);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::string path;
  for (const auto& s : out) path += "/" + s;
  return path;
}

class SiteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    contents_ = fill_store(temp_ / "deps", temp_ / "work");
  }
  TempDir temp_;
  StoreContents contents_;
};

TEST_F(SiteTest, AnswersEveryProtocolFromTheIndex) {
  auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);

  auto doc = [&](const std::string& path) {
    auto* resource = site.find(path);
    EXPECT_NE(resource, nullptr) << path;
    if (resource == nullptr) return json();
    EXPECT_EQ(resource->content_type, "application/json") << path;
    return json::parse(resource->body);
  };

  auto discovery = doc("/.well-known/terraform.json");
  EXPECT_EQ(discovery["providers.v1"], "/v1/providers/registry.opentofu.org/");
  EXPECT_EQ(discovery["modules.v1"], "/v1/modules/registry.opentofu.org/");

  // Provider registry protocol: only signed releases, newest last, every platform listed.
  auto versions = doc("/v1/providers/registry.opentofu.org/hashicorp/null/versions");
  ASSERT_EQ(versions["versions"].size(), 2u);
  EXPECT_EQ(versions["versions"][0]["version"], "3.2.3");
  EXPECT_EQ(versions["versions"][1]["version"], "3.2.4");
  EXPECT_EQ(versions["versions"][1]["platforms"].size(), 2u);
  EXPECT_EQ(site.find("/v1/providers/registry.terraform.io/hashicorp/random/versions"), nullptr)
      << "an unsigned release must not be offered through the registry protocol";

  const auto& null = contents_.providers[0];
  std::string download_path = "/v1/providers/registry.opentofu.org/hashicorp/null/3.2.4/download/linux/arm64";
  auto download = doc(download_path);
  EXPECT_EQ(download["os"], "linux");
  EXPECT_EQ(download["arch"], "arm64");
  EXPECT_EQ(download["shasum"], null.zip_digest.at("linux_arm64"));
  EXPECT_EQ(download["filename"], "terraform-provider-null_3.2.4_linux_arm64.zip");
  EXPECT_EQ(download["signing_keys"]["gpg_public_keys"][0]["ascii_armor"],
            json::parse(null.keys_json)["gpg_public_keys"][0]["ascii_armor"]);
  EXPECT_EQ(download["packages"]["linux_amd64"]["hashes"][0], null.zip_h1.at("linux_amd64"));
  // Every URL in the answer resolves (relative to the answer) to a path the site serves.
  for (const char* field : {"download_url", "shasums_url", "shasums_signature_url"}) {
    std::string target = resolve_relative(download_path, download[field]);
    auto* resource = site.find(target);
    ASSERT_NE(resource, nullptr) << field << " → " << target;
    EXPECT_EQ(resource->kind, mirror::ResourceKind::object);
  }
  auto* sums = site.find(resolve_relative(download_path, download["shasums_url"]));
  EXPECT_EQ(read_file(sums->object), null.shasums_text) << "the ORIGINAL SHA256SUMS is served";
  auto* sig = site.find(resolve_relative(download_path, download["shasums_signature_url"]));
  EXPECT_EQ(read_file(sig->object), null.signature);

  // Network mirror protocol: every version (signed or not), h1 and zh for every platform.
  auto index = doc("/v1/mirror/registry.opentofu.org/hashicorp/null/index.json");
  EXPECT_EQ(index, json::parse(R"({"versions":{"3.2.3":{},"3.2.4":{}}})"));
  auto archives = doc("/v1/mirror/registry.opentofu.org/hashicorp/null/3.2.4.json")["archives"];
  ASSERT_EQ(archives.size(), 2u);
  EXPECT_EQ(archives["linux_amd64"]["url"], "terraform-provider-null_3.2.4_linux_amd64.zip");
  EXPECT_EQ(archives["linux_amd64"]["hashes"],
            json::array({null.zip_h1.at("linux_amd64"), "zh:" + null.zip_digest.at("linux_amd64")}));
  EXPECT_NE(site.find("/v1/mirror/registry.terraform.io/hashicorp/random/3.6.0.json"), nullptr);
  auto* zip = site.find("/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip");
  ASSERT_NE(zip, nullptr);
  EXPECT_EQ(zip->content_type, "application/zip");
  EXPECT_EQ(read_file(zip->object), read_file(null.zip_file.at("linux_amd64")));

  // Module registry protocol.
  auto module_versions = doc("/v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/versions");
  EXPECT_EQ(module_versions, json::parse(R"({"modules":[{"versions":[{"version":"2.0.1"}]}]})"));
  auto* module_download = site.find("/v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/2.0.1/download");
  ASSERT_NE(module_download, nullptr);
  EXPECT_EQ(module_download->kind, mirror::ResourceKind::module_download);
  EXPECT_EQ(module_download->location, "./package.tar.gz");
  EXPECT_NE(site.find("/v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/2.0.1/package.tar.gz"), nullptr);

  // vmconfig in Podplane's mirror layout.
  auto* manifest = site.find("/vmconfig/manifests/" + contents_.manifest_name);
  ASSERT_NE(manifest, nullptr);
  EXPECT_EQ(read_file(manifest->object), contents_.manifest_text);
  auto* artifact = site.find(contents_.artifact_path);
  ASSERT_NE(artifact, nullptr);
  EXPECT_EQ(artifact->size, static_cast<std::int64_t>(contents_.artifact_bytes.size()));

  // Nothing else: no key leaks a store path, every key is made of safe segments.
  for (const auto& [path, resource] : site.resources()) {
    ASSERT_EQ(path.front(), '/');
    std::size_t start = 1;
    while (start < path.size()) {
      auto end = path.find('/', start);
      auto segment = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
      EXPECT_TRUE(mirror::is_safe_segment(segment)) << path;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
}

// A sink that fails (a client gone, a full disk) ends the package with the sink's own error,
// carried across libarchive's write callback rather than replaced by libarchive's words.
TEST_F(SiteTest, ModulePackageSinkFailureIsTheErrorThatComesOut) {
  auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  ASSERT_EQ(site.module_packages().size(), 1u);
  const auto& package = *site.module_packages()[0];
  for (auto write : {&mirror::write_module_tar_gz, &mirror::write_module_zip}) {
    std::size_t calls = 0;
    try {
      write(package, [&](const char*, std::size_t) {
        ++calls;
        throw podplane::Error("the sink is full (test)");
      });
      ADD_FAILURE() << "a failing sink went unnoticed";
    } catch (const podplane::Error& error) {
      EXPECT_EQ(error.message(), "the sink is full (test)");
    }
    EXPECT_GE(calls, 1u);
  }
}

TEST_F(SiteTest, ModulePackageIsDeterministicAndComplete) {
  auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  ASSERT_EQ(site.module_packages().size(), 1u);
  const auto& package = *site.module_packages()[0];
  std::string first, second;
  mirror::write_module_tar_gz(package, [&](const char* d, std::size_t n) { first.append(d, n); });
  mirror::write_module_tar_gz(package, [&](const char* d, std::size_t n) { second.append(d, n); });
  EXPECT_EQ(first, second);
  podplane::test::write_file(temp_ / "pkg.tar.gz", first);

  auto listing = run({"tar", "--numeric-owner", "--full-time", "-tvzf", (temp_ / "pkg.tar.gz").string()});
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  std::vector<std::string> names;
  std::istringstream lines(listing.out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.find(" 0/0 "), std::string::npos) << line;
    EXPECT_NE(line.find("1980-01-01 00:00:00"), std::string::npos) << line;
    names.push_back(line.substr(line.rfind(' ') + 1));
    if (names.back() == "scripts/render.sh") {
      EXPECT_EQ(line.substr(0, 10), "-rwxr-xr-x");
    }
    if (names.back() == "main.tf") {
      EXPECT_EQ(line.substr(0, 10), "-rw-r--r--");
    }
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names, (std::vector<std::string>{"README.md", "main.tf", "modules/", "modules/cluster/",
                                             "modules/cluster/main.tf", "modules/cluster/outputs.tf", "scripts/",
                                             "scripts/render.sh"}));
  fs::create_directories(temp_ / "unpacked");
  ASSERT_EQ(run({"tar", "-xzf", (temp_ / "pkg.tar.gz").string(), "-C", (temp_ / "unpacked").string()}).exit_code, 0);
  EXPECT_EQ(lockfile::h1_hash_of_dir(temp_ / "unpacked"), store.find_module_tree(contents_.module_address, "2.0.1")->h1)
      << "the served tree hashes to the h1 recorded at fetch";
}

TEST_F(SiteTest, ManifestsAreServedUnderTheirPlainNames) {
  // Rows as `deps download` stores them: the plain name in `address`, a file name with the
  // fetch time and digest. The newest row (the one the store's view holds) wins.
  std::map<std::string, std::string> digests;  // file name → digest
  {
    auto store = cache::Store::open(temp_ / "deps");
    for (const auto& [stamp, version] : std::vector<std::pair<std::string, std::string>>{{"20260301T000000Z", "1.5.0"},
                                                                                          {"20260101T000000Z", "1.4.0"}}) {
      std::string text = "{\"vmconfig\": {\"version\": \"" + version + "\", \"kind\": \"knd\", \"dependencies\": {}}}\n";
      cache::Artifact row = podplane::test::vmconfig_manifest_row(store.add_bytes(text), "vmconfig_knd_debian-13_arm64", version, "linux_arm64");
      row.filename = row.address + "_" + stamp + "_" + row.digest.substr(0, 12) + ".json";
      row.upstream_url = "https://deps.podplane.dev/manifests/vmconfig_knd_debian-13_arm64.json";
      store.add_artifact(row);
      digests[row.filename] = row.digest;
    }
  }
  auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  std::string newest;  // the row indexed last (the 1.4.0 one, whatever its time stamp says)
  for (const auto& [filename, digest] : digests)
    if (filename.find("20260101T000000Z") != std::string::npos) newest = digest;
  for (const std::string prefix : {"/vmconfig/manifests/", "/manifests/"}) {
    auto* plain = site.find(prefix + "vmconfig_knd_debian-13_arm64.json");
    ASSERT_NE(plain, nullptr) << prefix;
    EXPECT_EQ(plain->digest, newest) << prefix;
    EXPECT_EQ(plain->content_type, "application/json");
    auto* fixture = site.find(prefix + contents_.manifest_name);
    ASSERT_NE(fixture, nullptr) << prefix;
    EXPECT_EQ(read_file(fixture->object), contents_.manifest_text);
  }
  // Each stored file stays reachable under its own name too.
  for (const auto& [filename, digest] : digests) {
    auto* file = site.find("/vmconfig/manifests/" + filename);
    ASSERT_NE(file, nullptr) << filename;
    EXPECT_EQ(file->digest, digest);
  }
}

// ---------------------------------------------------------------------------------------------

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    contents_ = fill_store(temp_ / "deps", temp_ / "work");
    test::write_test_tls(temp_.path());
  }

  std::string start(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{podplane::test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0",
                                  "--tls-cert", (temp_ / "cert.pem").string(), "--tls-key", (temp_ / "key.pem").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_ = std::make_unique<Background>(argv, std::map<std::string, std::string>{{"PODPLANE_DEPS_CACHE_DIR", (temp_ / "deps").string()}},
                                           temp_ / "serve.err");
    std::string url = server_->first_line();
    if (url.empty()) ADD_FAILURE() << "mirror serve did not start: " << read_file(temp_ / "serve.err");
    if (!url.empty() && url.back() == '/') url.pop_back();
    return url;
  }

  HttpRequest tls() const {
    HttpRequest request;
    request.ca_file = temp_ / "cert.pem";
    return request;
  }

  TempDir temp_;
  StoreContents contents_;
  std::unique_ptr<Background> server_;
};

// The content of the deps root (every file but SQLite's -shm/-wal, which any reader of a WAL
// database maps) with size, mtime and digest, to prove the server wrote nothing.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    auto name = entry.path().string();
    if (!entry.is_regular_file() || name.ends_with("-shm") || name.ends_with("-wal")) continue;
    struct stat info {};
    ::lstat(entry.path().c_str(), &info);
    files[name] = std::to_string(info.st_size) + " " + std::to_string(info.st_mtim.tv_sec) + "." +
                  std::to_string(info.st_mtim.tv_nsec) + " " + file_digest_hex(entry.path());
  }
  return files;
}

TEST_F(ServerTest, ServesEveryPathOverHttpsExactlyAsTheSite) {
  auto before = snapshot(temp_ / "deps");
  std::string base = start();
  ASSERT_FALSE(base.empty());
  auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  CurlSession http;
  std::size_t requests = 0;
  for (const auto& [path, resource] : site.resources()) {
    auto answer = http.fetch(base + path, tls());
    ++requests;
    ASSERT_TRUE(answer.error.empty()) << path << ": " << answer.error;
    switch (resource.kind) {
      case mirror::ResourceKind::document:
        EXPECT_EQ(answer.status, 200) << path;
        EXPECT_EQ(answer.body, resource.body) << path;
        EXPECT_EQ(answer.header("content-type"), resource.content_type) << path;
        break;
      case mirror::ResourceKind::object:
        EXPECT_EQ(answer.status, 200) << path;
        EXPECT_EQ(sha256_hex(answer.body), resource.digest) << path;
        EXPECT_EQ(answer.header("content-type"), resource.content_type) << path;
        break;
      case mirror::ResourceKind::catalogue_page:
        EXPECT_EQ(answer.status, 200) << path;
        EXPECT_EQ(answer.header("content-type"), resource.content_type) << path;
        EXPECT_NE(answer.body.find("Podplane mirror catalogue"), std::string::npos) << path;
        break;
      case mirror::ResourceKind::module_download: {
        EXPECT_EQ(answer.status, 204) << path;
        EXPECT_EQ(answer.header("x-terraform-get"), "./package.tar.gz");
        EXPECT_TRUE(answer.body.empty());
        break;
      }
      case mirror::ResourceKind::module_package: {
        EXPECT_EQ(answer.status, 200) << path;
        std::string expected;
        mirror::write_module_tar_gz(*resource.module, [&](const char* d, std::size_t n) { expected.append(d, n); });
        EXPECT_EQ(answer.body, expected) << path;
        break;
      }
    }
  }

  // Range requests on a large object, and HEAD.
  auto ranged = tls();
  ranged.headers = {"Range: bytes=1000-1999"};
  auto part = http.fetch(base + contents_.artifact_path, ranged);
  EXPECT_EQ(part.status, 206);
  EXPECT_EQ(part.body, contents_.artifact_bytes.substr(1000, 1000));
  ranged.headers = {"Range: bytes=-10"};
  EXPECT_EQ(http.fetch(base + contents_.artifact_path, ranged).body, contents_.artifact_bytes.substr(contents_.artifact_bytes.size() - 10));
  auto head = tls();
  head.method = "HEAD";
  auto headed = http.fetch(base + contents_.artifact_path, head);
  EXPECT_EQ(headed.status, 200);
  EXPECT_EQ(headed.header("content-length"), std::to_string(contents_.artifact_bytes.size()));
  requests += 3;

  // The same answers through curl(1) with --cacert.
  auto curl = run({"curl", "-sS", "--fail", "--cacert", (temp_ / "cert.pem").string(), "-o", (temp_ / "got.zip").string(),
                   "-w", "%{http_code} %{content_type}",
                   base + "/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip"});
  ASSERT_EQ(curl.exit_code, 0) << curl.err;
  EXPECT_EQ(curl.out, "200 application/zip");
  EXPECT_EQ(read_file(temp_ / "got.zip"), read_file(contents_.providers[0].zip_file.at("linux_amd64")));
  auto curl_json = run({"curl", "-sS", "--fail", "--cacert", (temp_ / "cert.pem").string(),
                        base + "/v1/mirror/registry.opentofu.org/hashicorp/null/3.2.4.json"});
  ASSERT_EQ(curl_json.exit_code, 0) << curl_json.err;
  EXPECT_EQ(json::parse(curl_json.out)["archives"]["linux_arm64"]["hashes"][1],
            "zh:" + contents_.providers[0].zip_digest.at("linux_arm64"));
  auto curl_204 = run({"curl", "-sS", "-D", "-", "-o", "/dev/null", "--cacert", (temp_ / "cert.pem").string(),
                       base + "/v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/2.0.1/download"});
  EXPECT_NE(curl_204.out.find("HTTP/1.1 204"), std::string::npos) << curl_204.out;
  EXPECT_NE(curl_204.out.find("X-Terraform-Get: ./package.tar.gz"), std::string::npos) << curl_204.out;
  requests += 3;

  // Plain HTTP to the TLS port is refused; the server keeps running.
  auto plain = http.fetch("http" + base.substr(5) + "/healthz");
  EXPECT_NE(plain.status, 200);
  EXPECT_NE(http.fetch(base + "/healthz", tls()).body.find("\"status\": \"ok\""), std::string::npos);
  ++requests;

  EXPECT_EQ(server_->stop(), 0);
  EXPECT_EQ(snapshot(temp_ / "deps"), before) << "mirror serve must never write to the store";
  std::string log = read_file(temp_ / "serve.err");
  std::size_t lines = 0;
  for (std::size_t at = log.find("\" 200 "); at != std::string::npos; at = log.find("\" 200 ", at + 1)) ++lines;
  EXPECT_GE(lines, site.resources().size()) << "one access-log line per request";
  EXPECT_NE(log.find("\"GET /v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/2.0.1/download HTTP/1.1\" 204"),
            std::string::npos)
      << log.substr(0, 2000);
}

TEST_F(ServerTest, HostilePathsAnswer404) {
  auto before = snapshot(temp_ / "deps");
  std::string base = start();
  ASSERT_FALSE(base.empty());
  CurlSession http;
  const std::string good = "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json";
  ASSERT_EQ(http.fetch(base + good, tls()).status, 200);
  std::vector<std::string> hostile = {
      "/v1/mirror/../../../../etc/passwd",
      "/v1/mirror/registry.opentofu.org/hashicorp/null/../../../../store/index.db",
      "/v1/mirror/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
      "/v1/mirror/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
      "/v1/mirror/registry.opentofu.org%2fhashicorp%2fnull/index.json",  // decodes to a real path
      "/v1/mirror/registry.opentofu.org/hashicorp/null%2Findex.json",
      "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json%00.zip",
      "/v1/mirror/registry.opentofu.org/hashicorp/null//index.json",
      "/v1/mirror/registry.opentofu.org/hashicorp/null/./index.json",
      "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json/",
      "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json%5c",
      "/v1/mirror/" + std::string(300, 'a') + "/index.json",
      "/" + std::string(5000, 'x'),
      "/store/index.db",
      "/store/objects/sha256/" + contents_.providers[0].zip_digest.at("linux_amd64").substr(0, 2) + "/" +
          contents_.providers[0].zip_digest.at("linux_amd64").substr(2),
      "/.podplane-export",
      "/catalogue/nothing/",
      "/catalogue/providers",
      "/index.html",
      "/v1/",
      "/v1/mirror/",
      "/vmconfig/artifacts/containerd/2.3.1/",
  };
  for (const auto& path : hostile) {
    auto answer = http.fetch(base + path, tls());
    EXPECT_EQ(answer.status, 404) << path.substr(0, 200) << " " << answer.error;
    EXPECT_EQ(answer.body.find("root:"), std::string::npos);
  }
  // Other methods write nothing and find nothing.
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
    auto request = tls();
    request.method = method;
    auto answer = http.fetch(base + good, request);
    EXPECT_TRUE(answer.status == 404 || answer.status == 405) << method << " answered " << answer.status;
  }
  // A raw request line with a non-origin target, sent through curl(1) as well.
  auto raw = run({"curl", "-sS", "--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                  (temp_ / "cert.pem").string(), base + "/v1/mirror/..%2f..%2f..%2fetc/passwd"});
  EXPECT_EQ(raw.out, "404");
  EXPECT_EQ(http.fetch(base + good, tls()).status, 200) << "still serving after hostile requests";
  server_->stop();
  EXPECT_EQ(snapshot(temp_ / "deps"), before);
}

TEST_F(ServerTest, LoadRun32ClientsTimes200RequestsWithoutErrors) {
  std::string base = start({"--threads", "48"});
  ASSERT_FALSE(base.empty());
  auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  std::vector<std::pair<std::string, std::string>> targets;  // path → expected sha256 of the body
  for (const auto& [path, resource] : site.resources()) {
    if (resource.kind == mirror::ResourceKind::document) targets.emplace_back(path, sha256_hex(resource.body));
    if (resource.kind == mirror::ResourceKind::object && resource.size < 1024 * 1024) targets.emplace_back(path, resource.digest);
  }
  ASSERT_GT(targets.size(), 10u);
  std::atomic<int> errors{0}, done{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 32; ++c) {
    clients.emplace_back([&, c] {
      CurlSession http;
      for (int i = 0; i < 200; ++i) {
        const auto& [path, digest] = targets[static_cast<std::size_t>(c * 200 + i) % targets.size()];
        auto answer = http.fetch(base + path, tls());
        if (answer.status != 200 || sha256_hex(answer.body) != digest) ++errors;
        ++done;
      }
    });
  }
  for (auto& client : clients) client.join();
  EXPECT_EQ(done.load(), 32 * 200);
  EXPECT_EQ(errors.load(), 0);
}

TEST_F(ServerTest, ServesAReadOnlyStore) {
  // Media mounted read-only: no write bit anywhere under the deps root. Root ignores those
  // bits, so the server then runs as nobody (setpriv, util-linux) to make them count.
  for (const auto& entry : fs::recursive_directory_iterator(temp_ / "deps"))
    if (!entry.is_symlink())
      fs::permissions(entry.path(), fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                      fs::perm_options::remove);
  fs::permissions(temp_ / "deps", fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  auto before = snapshot(temp_ / "deps");
  std::vector<std::string> argv;
  if (::geteuid() == 0) {
    ASSERT_TRUE(podplane::test::have_program("setpriv")) << "apt-get install util-linux";
    fs::permissions(temp_.path(), fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::add);
    argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  }
  argv.push_back(podplane::test::podplane_binary().string());
  for (const char* arg : {"mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"}) argv.push_back(arg);
  Background server(argv, {{"PODPLANE_DEPS_CACHE_DIR", (temp_ / "deps").string()}}, temp_ / "ro.err");
  std::string url = server.first_line();
  ASSERT_FALSE(url.empty()) << read_file(temp_ / "ro.err");
  CurlSession http;
  auto answer = http.fetch(url + "v1/mirror/registry.opentofu.org/hashicorp/null/3.2.4.json");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(json::parse(answer.body)["archives"].size(), 2u);
  auto zip = http.fetch(url + "v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip");
  EXPECT_EQ(zip.status, 200);
  EXPECT_EQ(sha256_hex(zip.body), contents_.providers[0].zip_digest.at("linux_amd64"));
  server.stop();
  EXPECT_EQ(snapshot(temp_ / "deps"), before);
}

TEST_F(ServerTest, SighupReloadsTheSiteFromTheIndex) {
  std::string base = start({"--watch-interval", "0"});
  ASSERT_FALSE(base.empty());
  CurlSession http;
  const std::string added = "/vmconfig/artifacts/runc/1.4.2/runc.amd64";
  EXPECT_EQ(http.fetch(base + added, tls()).status, 404);
  {
    auto store = cache::Store::open(temp_ / "deps");
    store.add_artifact(podplane::test::vmconfig_artifact_row(store.add_bytes("runc bytes"), "runc", "1.4.2",
                                                             "https://github.com/opencontainers/runc/releases/download/v1.4.2/runc.amd64"));
  }
  EXPECT_EQ(http.fetch(base + added, tls()).status, 404) << "the site is a snapshot until SIGHUP";
  ::kill(server_->pid(), SIGHUP);
  // Readiness probe for the reload: bounded polling of the new path.
  HttpAnswer answer;
  for (int i = 0; i < 500 && answer.status != 200; ++i) {
    answer = http.fetch(base + added, tls());
    if (answer.status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, "runc bytes");
  EXPECT_EQ(server_->stop(), 0);
}

TEST_F(ServerTest, RefusesToStartWithoutTlsUnlessAskedForPlainHttp) {
  auto env = podplane::test::ProcessOptions{};
  env.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
  auto refused = podplane::test::run_podplane({"mirror", "serve", "--listen", "127.0.0.1:0"}, env);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--tls-cert"), std::string::npos) << refused.err;
  auto bad = podplane::test::run_podplane({"mirror", "serve", "--listen", "nonsense", "--plain-http"}, env);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;

  Background plain({podplane::test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"},
                   {{"PODPLANE_DEPS_CACHE_DIR", (temp_ / "deps").string()}}, temp_ / "plain.err");
  std::string url = plain.first_line();
  ASSERT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url << read_file(temp_ / "plain.err");
  CurlSession http;
  EXPECT_NE(http.fetch(url + "healthz").body.find("\"status\": \"ok\""), std::string::npos);
}

}  // namespace
}  // namespace podplane::serve_test
