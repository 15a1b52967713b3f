// mirror export: the same site as a static tree, swapped in atomically, and hosted by
// Debian's nginx answering like mirror serve.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "base/digest.hpp"
#include "mirror/export.hpp"
#include "mirror/serve_site.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;
using podplane::test::with_deps_root;

// The nginx configuration docs/mirror.md documents, with test paths filled in.
std::string nginx_config(const fs::path& prefix, const fs::path& root, int port) {
  std::string p = prefix.string();
  return "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + p + "/nginx.pid;\nerror_log " + p +
         "/error.log warn;\nevents { worker_connections 512; }\nhttp {\n  access_log " + p +
         "/access.log;\n  client_body_temp_path " + p + "/tmp/body;\n  proxy_temp_path " + p +
         "/tmp/proxy;\n  fastcgi_temp_path " + p + "/tmp/fastcgi;\n  uwsgi_temp_path " + p +
         "/tmp/uwsgi;\n  scgi_temp_path " + p + "/tmp/scgi;\n"
         "  types { text/html html; application/json json; application/zip zip; application/gzip gz; }\n"
         "  default_type application/octet-stream;\n  sendfile on;\n  tcp_nopush on;\n"
         "  server {\n    listen 127.0.0.1:" + std::to_string(port) + ";\n    root " + root.string() + ";\n" +
         R"(    location ~ /\.(?!well-known/) { return 404; }
    location = /healthz { default_type application/json; }
    # The module registry download: a 200 with {"location": …} for OpenTofu plus the header
    # Terraform reads (a static tree cannot answer 204).
    location ~ ^/v1/modules/.+/download$ {
      default_type application/json;
      add_header X-Terraform-Get ./package.tar.gz always;
    }
    # Registry protocol answers have no file extension.
    location /v1/providers/ { default_type application/json; }
    location /v1/modules/ { default_type application/json; }
  }
}
)";
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override { contents_ = fill_store(temp_ / "deps", temp_ / "work"); }
  TempDir temp_;
  StoreContents contents_;
};

TEST_F(ExportTest, WritesTheSiteAndReplacesItAtomically) {
  fs::path out = temp_ / "www" / "mirror";
  auto first = run_podplane({"mirror", "export", out.string()}, with_deps_root(temp_ / "deps"));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  for (const auto& [path, resource] : site.resources()) {
    fs::path file = out / path.substr(1);
    if (path.back() == '/') file /= "index.html";  // the catalogue's pages
    ASSERT_TRUE(fs::is_regular_file(file)) << path;
    if (resource.kind == mirror::ResourceKind::object) {
      EXPECT_EQ(file_digest_hex(file), resource.digest) << path;
    }
    if (resource.kind == mirror::ResourceKind::document) {
      EXPECT_EQ(read_file(file), resource.body) << path;
    }
  }
  auto download = json::parse(read_file(out / "v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/2.0.1/download"));
  EXPECT_EQ(download["location"], "./package.tar.gz");
  // The network-mirror part is also a packed filesystem mirror (docs/protocols.md §5).
  EXPECT_TRUE(fs::exists(out / "v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_arm64.zip"));

  // Re-export after the store grew: one rename swaps the whole tree; nothing is left beside it.
  struct stat old_info {};
  ::stat(out.c_str(), &old_info);
  fs::path stale = out / "v1/mirror/stale-file";
  podplane::test::write_file(stale, "from an earlier export");
  {
    auto writable = cache::Store::open(temp_ / "deps");
    writable.add_artifact(podplane::test::vmconfig_artifact_row(writable.add_bytes("runc bytes"), "runc", "1.4.2",
                                                                "https://github.com/opencontainers/runc/releases/download/v1.4.2/runc.amd64"));
  }
  auto second = run_podplane({"mirror", "export", out.string()}, with_deps_root(temp_ / "deps"));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  struct stat new_info {};
  ::stat(out.c_str(), &new_info);
  EXPECT_NE(old_info.st_ino, new_info.st_ino) << "the tree is replaced by a rename, not edited in place";
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(read_file(out / "vmconfig/artifacts/runc/1.4.2/runc.amd64"), "runc bytes");
  std::vector<std::string> siblings;
  for (const auto& entry : fs::directory_iterator(out.parent_path())) siblings.push_back(entry.path().filename().string());
  EXPECT_EQ(siblings, std::vector<std::string>{"mirror"});

  // A directory that is not an export is never replaced.
  fs::path foreign = temp_ / "home";
  podplane::test::write_file(foreign / "precious.txt", "keep me");
  auto refused = run_podplane({"mirror", "export", foreign.string()}, with_deps_root(temp_ / "deps"));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("refusing to replace"), std::string::npos) << refused.err;
  EXPECT_EQ(read_file(foreign / "precious.txt"), "keep me");
}

// A URL is not a directory: gs:// and every other scheme:// target but s3:// (object storage,
// tests/mirror/s3_export_test.cpp) is a usage error (exit 2) that says a local directory or an
// s3:// bucket is what export writes, and nothing is written, neither in the working directory
// (where "gs://bucket/x" would be the path gs:/bucket/x) nor the store.
TEST_F(ExportTest, AUrlTargetIsAUsageErrorAndWritesNothing) {
  const fs::path cwd = temp_ / "cwd";
  fs::create_directories(cwd);
  auto options = with_deps_root(temp_ / "deps");
  options.cwd = cwd;
  const auto index_before = read_file(temp_ / "deps" / "store" / "index.db");
  for (const std::string target : {"gs://bucket/site", "https://mirror.site:8443/export", "file:///srv/x",
                                   "S3://Bucket"}) {
    auto refused = run_podplane({"mirror", "export", target}, options);
    EXPECT_EQ(refused.exit_code, 2) << target << "\n" << refused.err;
    EXPECT_NE(refused.err.find("a local directory or an s3:// bucket"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find(target), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("Try 'podplane mirror export --help'"), std::string::npos) << refused.err;
    EXPECT_TRUE(fs::is_empty(cwd)) << target << ": export wrote into the working directory";
  }
  EXPECT_EQ(read_file(temp_ / "deps" / "store" / "index.db"), index_before);
  // A local path that merely holds a colon is still a directory.
  auto local = run_podplane({"mirror", "export", "site:v1"}, options);
  EXPECT_EQ(local.exit_code, 0) << local.err;
  EXPECT_TRUE(fs::exists(cwd / "site:v1" / "catalogue.json"));
}

TEST_F(ExportTest, NginxServesTheExportLikeMirrorServe) {
  ASSERT_TRUE(podplane::test::have_program("nginx") || fs::exists("/usr/sbin/nginx"))
      << "nginx is missing: apt-get install nginx-light";
  Background serve({podplane::test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"},
                   {{"PODPLANE_DEPS_CACHE_DIR", (temp_ / "deps").string()}}, temp_ / "serve.err");
  std::string served = serve.first_line();
  ASSERT_FALSE(served.empty()) << read_file(temp_ / "serve.err");
  served.pop_back();

  // The export names the same mirror URL in the catalogue's snippets as mirror serve takes
  // from the request's Host, so that even the catalogue pages match byte for byte.
  fs::path out = temp_ / "export";
  auto exported = run_podplane({"mirror", "export", out.string(), "--public-url", served}, with_deps_root(temp_ / "deps"));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;

  fs::path prefix = temp_ / "nginx";
  fs::create_directories(prefix / "tmp");
  int port = free_port();
  podplane::test::write_file(prefix / "nginx.conf", nginx_config(prefix, out, port));
  std::string nginx = fs::exists("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx";
  Background web({nginx, "-e", (prefix / "error.log").string(), "-p", prefix.string(), "-c", (prefix / "nginx.conf").string()},
                 {}, prefix / "stderr.log");
  ASSERT_TRUE(wait_for_port(port)) << read_file(prefix / "stderr.log");
  std::string hosted = "http://127.0.0.1:" + std::to_string(port);

  auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  CurlSession http;
  for (const auto& [path, resource] : site.resources()) {
    auto a = http.fetch(served + path);
    auto b = http.fetch(hosted + path);
    if (resource.kind == mirror::ResourceKind::module_download) {
      EXPECT_EQ(a.status, 204);
      EXPECT_EQ(b.status, 200);
      EXPECT_EQ(b.header("x-terraform-get"), a.header("x-terraform-get")) << path;
      EXPECT_EQ(json::parse(b.body)["location"], a.header("x-terraform-get"));
      EXPECT_EQ(b.header("content-type"), "application/json");
      continue;
    }
    EXPECT_EQ(a.status, 200) << path;
    EXPECT_EQ(b.status, 200) << path;
    EXPECT_EQ(a.body, b.body) << path;
    auto media = [](const std::string& type) { return type.substr(0, type.find(';')); };
    EXPECT_EQ(media(a.header("content-type")), media(b.header("content-type"))) << path;
  }
  // Both say 404 to paths outside the site, and nginx hides the export marker.
  for (const std::string path : {"/.podplane-export", "/v1/mirror/registry.opentofu.org/hashicorp/null/nothing.json",
                                 "/v1/providers/registry.opentofu.org/hashicorp/nothing/versions"}) {
    EXPECT_EQ(http.fetch(served + path).status, 404) << path;
    EXPECT_EQ(http.fetch(hosted + path).status, 404) << path;
  }
}

}  // namespace
}  // namespace podplane::serve_test
