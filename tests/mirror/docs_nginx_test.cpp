// The nginx configuration the docs ship (docs/nginx/podplane-mirror.conf) starts as it is and
// serves an export over TLS with a certificate made by the openssl commands of docs/mirror.md
// ("TLS"), read from the page and run as written: only the listen port, the certificate pair
// and root are replaced, as the file's own comment tells a site to.
#include <gtest/gtest.h>

#include <sstream>

#include "base/ascii.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;

// The lines of the ```sh block of docs/mirror.md's TLS section that start with `program`.
std::vector<std::string> tls_section_commands(const std::string& program) {
  std::istringstream page(read_file(podplane::test::source_dir() / "docs" / "mirror.md"));
  std::vector<std::string> commands;
  bool in_section = false, in_block = false;
  for (std::string line; std::getline(page, line);) {
    if (line.starts_with("## ")) in_section = line.starts_with("## TLS");
    if (!in_section) continue;
    if (line.starts_with("```")) {
      if (in_block) break;
      in_block = line == "```sh";
      continue;
    }
    if (in_block && line.starts_with(program + " ")) commands.push_back(line);
  }
  return commands;
}

void replace_once(std::string& text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << "the shipped nginx config no longer has \"" << from << "\"";
  ASSERT_EQ(text.find(from, at + 1), std::string::npos) << "\"" << from << "\" is there twice";
  text.replace(at, from.size(), to);
}

struct Fetched {
  int status = 0;
  std::string content_type;
  std::string terraform_get;
  std::string body;
};

// curl as a site host would run it: the mirror's name resolved to loopback, the site CA trusted.
Fetched fetch(const fs::path& work, int port, const std::string& path, const fs::path& ca) {
  const fs::path body = work / "body", headers = work / "headers";
  // --tlsv1.3: the shipped config must offer TLS 1.3 (nginx 1.22 does not by default).
  auto result = run({"curl", "-sS", "--tlsv1.3", "--resolve", "mirror.site.internal:" + std::to_string(port) + ":127.0.0.1", "--cacert",
                     ca.string(), "-o", body.string(), "-D", headers.string(),
                     "https://mirror.site.internal:" + std::to_string(port) + path});
  Fetched fetched;
  if (result.exit_code != 0) {
    ADD_FAILURE() << path << ": curl failed\n" << result.err;
    return fetched;
  }
  fetched.body = read_file(body);
  std::istringstream lines(read_file(headers));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto colon = line.find(':');
    if (line.starts_with("HTTP/")) fetched.status = std::stoi(line.substr(line.find(' ') + 1, 3));
    if (colon == std::string::npos) continue;
    const std::string name = ascii_lower(line.substr(0, colon)), value = line.substr(colon + 2);
    if (name == "content-type") fetched.content_type = value.substr(0, value.find(';'));
    if (name == "x-terraform-get") fetched.terraform_get = value;
  }
  return fetched;
}

TEST(DocsNginx, ShippedConfigServesAnExportAsWritten) {
  ASSERT_TRUE(fs::exists("/usr/sbin/nginx")) << "nginx is missing: apt-get install nginx-light";
  podplane::test::TempDir temp;
  (void)fill_store(temp / "deps", temp / "work", 4096, 64 * 1024);
  const fs::path site = temp / "export";
  auto exported = podplane::test::run_podplane({"mirror", "export", site.string()}, podplane::test::with_deps_root(temp / "deps"));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;

  // The site CA and the mirror's certificate, by the page's own commands.
  const fs::path tls = temp / "tls";
  fs::create_directories(tls);
  const auto openssl = tls_section_commands("openssl");
  ASSERT_EQ(openssl.size(), 2u) << "docs/mirror.md's TLS section should make a CA and a server certificate";
  podplane::test::ProcessOptions in_tls;
  in_tls.cwd = tls;
  for (const auto& command : openssl) {
    auto made = run({"bash", "-c", command}, in_tls);
    ASSERT_EQ(made.exit_code, 0) << command << "\n" << made.err;
  }
  auto verified = run({"openssl", "verify", "-CAfile", (tls / "site-ca.crt").string(), (tls / "mirror-tls.crt").string()});
  ASSERT_EQ(verified.exit_code, 0) << verified.out << verified.err;

  std::string config = read_file(podplane::test::source_dir() / "docs" / "nginx" / "podplane-mirror.conf");
  const int port = free_port();
  replace_once(config, "listen 8443 ssl;", "listen 127.0.0.1:" + std::to_string(port) + " ssl;");
  replace_once(config, "/etc/podplane/mirror-tls.crt", (tls / "mirror-tls.crt").string());
  replace_once(config, "/etc/podplane/mirror-tls.key", (tls / "mirror-tls.key").string());
  replace_once(config, "root /srv/podplane-mirror;", "root " + site.string() + ";");
  const fs::path prefix = temp / "nginx";
  fs::create_directories(prefix);
  podplane::test::write_file(prefix / "podplane-mirror.conf", config);
  // In the foreground for the test (the file leaves daemon on, as a site starts it).
  Background nginx({"/usr/sbin/nginx", "-e", (prefix / "startup.log").string(), "-p", prefix.string(), "-c",
                    (prefix / "podplane-mirror.conf").string(), "-g", "daemon off; master_process off;"},
                   {}, prefix / "stderr.log");
  ASSERT_TRUE(wait_for_port(port)) << read_file(prefix / "stderr.log")
                                   << (fs::exists(prefix / "startup.log") ? read_file(prefix / "startup.log") : "");

  std::size_t files = 0, downloads = 0;
  for (const auto& entry : fs::recursive_directory_iterator(site)) {
    if (!entry.is_regular_file()) continue;
    const std::string path = "/" + fs::relative(entry.path(), site).string();
    if (path.find("/.") != std::string::npos) continue;  // the export marker: hidden on purpose
    ++files;
    auto got = fetch(temp.path(), port, path, tls / "site-ca.crt");
    EXPECT_EQ(got.status, 200) << path;
    EXPECT_EQ(got.body, read_file(entry.path())) << path;
    if (path.ends_with(".json") || path.starts_with("/v1/providers/")) {
      EXPECT_EQ(got.content_type, "application/json") << path;
    }
    if (path.ends_with(".html")) {
      EXPECT_EQ(got.content_type, "text/html") << path;
    }
    if (path.starts_with("/v1/modules/") && path.ends_with("/download")) {
      ++downloads;
      EXPECT_EQ(got.content_type, "application/json") << path;
      EXPECT_EQ(got.terraform_get, "./package.tar.gz") << path;
    }
  }
  EXPECT_GT(files, 10u);
  EXPECT_GT(downloads, 0u) << "the export has no module download to check";
  EXPECT_EQ(fetch(temp.path(), port, "/.podplane-export", tls / "site-ca.crt").status, 404);
}

}  // namespace
}  // namespace podplane::serve_test
