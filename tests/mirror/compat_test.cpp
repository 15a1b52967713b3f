// Compatibility: a second deps root filled by `podplane deps tf` from `mirror serve` (and from
// the export hosted by Debian's nginx over TLS) ends with the same objects and index rows as
// the first root, which `deps tf` filled from the fixture upstream. The served registry answers
// pass every trust check of our own client: original SHA256SUMS, signature and keys.
#include <gtest/gtest.h>

#include <set>

#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

// Every object digest of a deps root.
std::set<std::string> objects(const fs::path& root) {
  std::set<std::string> digests;
  for (const auto& entry : fs::recursive_directory_iterator(root / "store" / "objects" / "sha256"))
    if (entry.is_regular_file())
      digests.insert(entry.path().parent_path().filename().string() + entry.path().filename().string());
  return digests;
}

// What the index says about content (not times or upstream URLs, which name the source).
std::string content_rows(const fs::path& root) {
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  std::vector<std::string> lines;
  for (const auto& a : store.artifacts())
    lines.push_back(std::string(cache::to_string(a.kind)) + " " + a.address + " " + a.version + " " + a.platform + " " +
                    a.filename + " " + a.digest + " " + a.h1 + " " + std::string(cache::to_string(a.trust)));
  for (const auto& tree : store.module_trees()) lines.push_back("module " + tree.address + " " + tree.version + " " + tree.h1);
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

podplane::test::ProcessResult deps_tf(const fs::path& root, const fs::path& cli_config, const fs::path& ca) {
  podplane::test::ProcessOptions options;
  options.env = {{"PODPLANE_DEPS_CACHE_DIR", root.string()},
                 {"TF_CLI_CONFIG_FILE", cli_config.string()},
                 {"SSL_CERT_FILE", ca.string()}};
  options.unset_env = {"PODPLANE_DEPS_URL", "TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY",
                       "ALL_PROXY"};
  return run_podplane({"deps", "tf", "--platform", "linux_amd64", "--platform", "linux_arm64"}, options);
}

TEST(Compat, DepsTfFromMirrorServeAndFromNginxHostedExportMatchesTheFirstRoot) {
  TempDir dir;
  std::set<std::string> first_objects;
  std::string first_rows;
  {
    podplane::test::FixtureUpstream upstream;
    upstream.write_cli_config(dir / "upstream.tfrc");
    podplane::test::ProcessOptions options;
    options.env = upstream.env(dir / "first", dir / "upstream.tfrc");
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    auto filled = run_podplane({"deps", "tf", "--platform", "linux_amd64", "--platform", "linux_arm64"}, options);
    ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;
  }  // the upstream is gone: from here on only the mirror answers
  first_objects = objects(dir / "first");
  first_rows = content_rows(dir / "first");
  ASSERT_NE(first_rows.find("provider_signature"), std::string::npos);

  test::write_test_tls(dir.path());
  Background serve({podplane::test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--tls-cert",
                    (dir / "cert.pem").string(), "--tls-key", (dir / "key.pem").string()},
                   {{"PODPLANE_DEPS_CACHE_DIR", (dir / "first").string()}}, dir / "serve.err");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << read_file(dir / "serve.err");
  write_file(dir / "mirror.tfrc", podplane::test::mirror_serve_host_blocks(base));
  auto second = deps_tf(dir / "second", dir / "mirror.tfrc", dir / "cert.pem");
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err << "\nserver log:\n" << read_file(dir / "serve.err");
  EXPECT_EQ(content_rows(dir / "second"), first_rows);
  EXPECT_EQ(objects(dir / "second"), first_objects);
  std::string log = read_file(dir / "serve.err");
  EXPECT_NE(log.find("_SHA256SUMS.sig HTTP/1.1\" 200"), std::string::npos) << "the client fetched the signature from us";
  EXPECT_NE(log.find("/download HTTP/1.1\" 204"), std::string::npos);

  // The export, hosted by nginx over TLS (a static tree answers the module download with a 200).
  podplane::test::ProcessOptions export_options;
  export_options.env["PODPLANE_DEPS_CACHE_DIR"] = (dir / "first").string();
  auto exported = run_podplane({"mirror", "export", (dir / "export").string()}, export_options);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  fs::path prefix = dir / "nginx";
  fs::create_directories(prefix / "tmp");
  int port = free_port();
  std::string p = prefix.string();
  write_file(prefix / "nginx.conf",
             "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + p + "/nginx.pid;\nerror_log " + p +
                 "/error.log warn;\nevents { worker_connections 256; }\nhttp {\n  access_log " + p + "/access.log;\n"
                 "  client_body_temp_path " + p + "/tmp/body;\n  proxy_temp_path " + p + "/tmp/proxy;\n"
                 "  fastcgi_temp_path " + p + "/tmp/fastcgi;\n  uwsgi_temp_path " + p + "/tmp/uwsgi;\n"
                 "  scgi_temp_path " + p + "/tmp/scgi;\n"
                 "  types { text/html html; application/json json; application/zip zip; application/gzip gz; }\n"
                 "  default_type application/octet-stream;\n"
                 "  server {\n    listen 127.0.0.1:" + std::to_string(port) + " ssl;\n"
                 "    ssl_certificate " + (dir / "cert.pem").string() + ";\n"
                 "    ssl_certificate_key " + (dir / "key.pem").string() + ";\n"
                 "    root " + (dir / "export").string() + ";\n"
                 "    location ~ /\\.(?!well-known/) { return 404; }\n"
                 "    location ~ ^/v1/modules/.+/download$ {\n      default_type application/json;\n"
                 "      add_header X-Terraform-Get ./package.tar.gz always;\n    }\n"
                 "    location /v1/providers/ { default_type application/json; }\n"
                 "    location /v1/modules/ { default_type application/json; }\n  }\n}\n");
  std::string nginx = fs::exists("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx";
  Background web({nginx, "-e", (prefix / "error.log").string(), "-p", p, "-c", (prefix / "nginx.conf").string()}, {},
                 prefix / "stderr.log");
  ASSERT_TRUE(wait_for_port(port)) << read_file(prefix / "stderr.log");
  write_file(dir / "nginx.tfrc", podplane::test::mirror_serve_host_blocks("https://127.0.0.1:" + std::to_string(port) + "/"));
  auto third = deps_tf(dir / "third", dir / "nginx.tfrc", dir / "cert.pem");
  ASSERT_EQ(third.exit_code, 0) << third.out << third.err << "\nnginx log:\n" << read_file(prefix / "access.log");
  EXPECT_EQ(content_rows(dir / "third"), first_rows);
  EXPECT_EQ(objects(dir / "third"), first_objects);
}

}  // namespace
}  // namespace podplane::serve_test
