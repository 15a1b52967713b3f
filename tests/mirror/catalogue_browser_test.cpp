// The catalogue as a person sees it: Debian's headless Chromium loads the page from
// `mirror serve` and from nginx over an export, with every other host unreachable (no proxy
// that answers, every name but 127.0.0.1 resolving to nothing), and the test reads the DOM
// after the page's script ran (--dump-dom) and takes a screenshot.
#include <gtest/gtest.h>

#include <unistd.h>

#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/golden.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;
using podplane::test::TempDir;

std::string chromium_program() {
  for (const char* name : {"chromium", "chromium-browser"})
    if (podplane::test::have_program(name)) return name;
  return "";
}

class Browser {
 public:
  Browser(std::string program, fs::path profile) : program_(std::move(program)), profile_(std::move(profile)) {}

  // The DOM after load and after the page's script. (--dump-dom needs JavaScript on: with
  // scriptEnabled=false Chromium dumps nothing, so the no-script filter is told apart below
  // by rows that are absent rather than hidden.)
  std::string dump_dom(const std::string& url) {
    auto args = common();
    args.push_back("--dump-dom");
    args.push_back(url);
    auto result = run(args);
    EXPECT_EQ(result.exit_code, 0) << url << "\n" << result.err.substr(0, 2000);
    return result.out;
  }

  void screenshot(const std::string& url, const fs::path& png, const std::string& size) {
    auto args = common();
    args.push_back("--hide-scrollbars");
    args.push_back("--window-size=" + size);
    args.push_back("--screenshot=" + png.string());
    args.push_back(url);
    auto result = run(args);
    EXPECT_EQ(result.exit_code, 0) << result.err.substr(0, 2000);
  }

 private:
  std::vector<std::string> common() const {
    std::vector<std::string> args = {
        "timeout", "60", program_, "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--user-data-dir=" + profile_.string(),
        // The network is closed but for the servers under test: a proxy that refuses every
        // connection, and every host name but 127.0.0.1 resolving to nothing.
        "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"};
    // Chromium refuses to start its sandbox as root (CI containers).
    if (::geteuid() == 0) args.insert(args.begin() + 3, "--no-sandbox");
    return args;
  }
  podplane::test::ProcessResult run(const std::vector<std::string>& args) const {
    podplane::test::ProcessOptions options;
    options.env["HOME"] = profile_.string();
    return podplane::test::run(args, options);
  }

  std::string program_;
  fs::path profile_;
};

// Provider table rows in a dumped DOM: shown and hidden by the page's script.
struct Rows {
  std::size_t shown = 0, hidden = 0;
};
Rows provider_rows(const std::string& dom) {
  Rows rows;
  auto start = dom.find("id=\"providers\"");
  if (start == std::string::npos) return rows;
  auto part = dom.substr(start, dom.find("</section>", start) - start);
  for (auto at = part.find("<tr>\n"); at != std::string::npos; at = part.find("<tr>\n", at + 1)) ++rows.shown;
  for (auto at = part.find("<tr hidden=\"\">"); at != std::string::npos; at = part.find("<tr hidden=\"\">", at + 1)) ++rows.hidden;
  return rows;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The nginx of docs/mirror.md over `root`, on `port`.
std::string nginx_config(const fs::path& prefix, const fs::path& root, int port) {
  std::string p = prefix.string();
  return "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + p + "/nginx.pid;\nerror_log " + p +
         "/error.log warn;\nevents { worker_connections 64; }\nhttp {\n  access_log " + p +
         "/access.log;\n  client_body_temp_path " + p + "/tmp/body;\n  proxy_temp_path " + p +
         "/tmp/proxy;\n  fastcgi_temp_path " + p + "/tmp/fastcgi;\n  uwsgi_temp_path " + p +
         "/tmp/uwsgi;\n  scgi_temp_path " + p + "/tmp/scgi;\n"
         "  types { text/html html; application/json json; application/zip zip; application/gzip gz; }\n"
         "  default_type application/octet-stream;\n"
         "  server {\n    listen 127.0.0.1:" + std::to_string(port) + ";\n    root " + root.string() +
         ";\n    location ~ /\\.(?!well-known/) { return 404; }\n  }\n}\n";
}

class CatalogueBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = chromium_program();
    if (program_.empty()) GTEST_SKIP() << "chromium is missing: scripts/setup installs it (apt-get install chromium)";
  }
  std::string program_;
  TempDir temp_;
};

TEST_F(CatalogueBrowserTest, ServeAndNginxShowTheStoredProvidersFilteredAndTheHostileSignerAsText) {
  const std::string hostile = "<script>alert(1)</script>";
  auto contents = fill_store(temp_ / "deps", temp_ / "work", 4096, 64 * 1024, "Podplane Test Signer " + hostile);
  MirrorServe serve(temp_ / "deps", {"--listen", "127.0.0.1:0", "--plain-http"}, temp_ / "serve.err");
  ASSERT_TRUE(serve.started()) << serve.log();
  Browser browser(program_, temp_ / "profile");

  // The whole catalogue from mirror serve: every stored version and platform, the snippets
  // with the mirror's URL, the hostile user id as text and no script element but ours.
  auto dom = browser.dump_dom(serve.url() + "/");
  auto rows = provider_rows(dom);
  EXPECT_EQ(rows.shown, 4u) << dom.substr(0, 3000);
  EXPECT_EQ(rows.hidden, 0u);
  for (const auto& provider : contents.providers) {
    EXPECT_NE(dom.find("<code>" + provider.address + "</code>"), std::string::npos) << provider.address;
    EXPECT_NE(dom.find("<code>" + provider.version + "</code>"), std::string::npos) << provider.version;
    for (const auto& [platform, digest] : provider.zip_digest) EXPECT_NE(dom.find(platform), std::string::npos);
  }
  EXPECT_NE(dom.find("<span class=\"mirror-url\">" + serve.url() + "</span>/v1/mirror/"), std::string::npos);
  EXPECT_NE(dom.find("Podplane Test Signer &lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(dom.find("<script>alert"), std::string::npos);
  EXPECT_EQ(count(dom, "<script"), 1u) << "only the page's own script element";

  // mirror serve filters on the server (what a browser without JavaScript gets): ?q= leaves
  // one provider row in the page, and none merely hidden by the script.
  auto plain = browser.dump_dom(serve.url() + "/?q=linux_arm64");
  rows = provider_rows(plain);
  EXPECT_EQ(rows.shown, 1u);
  EXPECT_EQ(rows.hidden, 0u);
  EXPECT_EQ(count(plain, "<tr hidden"), 0u);
  EXPECT_NE(plain.find("value=\"linux_arm64\""), std::string::npos);

  // The export over nginx, written without --public-url: the static page ignores nothing but
  // the query, so the script filters (three rows hidden) and fills in the page's own origin.
  fs::path out = temp_ / "export";
  podplane::test::ProcessOptions env;
  env.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
  auto exported = podplane::test::run_podplane({"mirror", "export", out.string()}, env);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  fs::path prefix = temp_ / "nginx";
  fs::create_directories(prefix / "tmp");
  int port = free_port();
  write_file(prefix / "nginx.conf", nginx_config(prefix, out, port));
  std::string nginx = fs::exists("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx";
  Background web({nginx, "-e", (prefix / "error.log").string(), "-p", prefix.string(), "-c", (prefix / "nginx.conf").string()},
                 {}, prefix / "stderr.log");
  ASSERT_TRUE(wait_for_port(port)) << read_file(prefix / "stderr.log");
  std::string hosted = "http://127.0.0.1:" + std::to_string(port);

  auto live = browser.dump_dom(hosted + "/?q=linux_arm64");
  rows = provider_rows(live);
  EXPECT_EQ(rows.shown, 1u) << live.substr(0, 3000);
  EXPECT_EQ(rows.hidden, 3u);
  EXPECT_NE(live.find("1 of 4 rows"), std::string::npos);
  EXPECT_NE(live.find("<span class=\"mirror-url\">" + hosted + "</span>/v1/mirror/"), std::string::npos);
  EXPECT_EQ(live.find("mirror.example"), std::string::npos) << "the placeholder URL was replaced";
  EXPECT_EQ(count(live, "<script"), 1u);

  // A per-section page, two levels down, from nginx: its relative links still reach the site.
  auto section = browser.dump_dom(hosted + "/catalogue/providers/");
  EXPECT_EQ(provider_rows(section).shown, 4u);
  EXPECT_NE(section.find("href=\"../../catalogue.json\""), std::string::npos);
}

// The screenshot in docs/mirror.md, taken from mirror serve (PODPLANE_UPDATE_GOLDEN=1 writes it
// to docs/images/catalogue.png; otherwise it stays in the test's temp dir).
TEST_F(CatalogueBrowserTest, ScreenshotShowsThePage) {
  (void)fill_store(temp_ / "deps", temp_ / "work", 4096, 64 * 1024);
  MirrorServe serve(temp_ / "deps", {"--listen", "127.0.0.1:0", "--plain-http", "--public-url", "https://mirror.site.internal:8443"},
                    temp_ / "serve.err");
  ASSERT_TRUE(serve.started()) << serve.log();
  Browser browser(program_, temp_ / "profile");
  fs::path png = temp_ / "catalogue.png";
  browser.screenshot(serve.url() + "/", png, "1100,900");
  ASSERT_TRUE(fs::exists(png));
  auto bytes = read_file(png);
  ASSERT_GT(bytes.size(), 20000u) << "a blank page compresses to almost nothing";
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  // A phone-sized window renders too (the tables scroll inside their region).
  fs::path phone = temp_ / "phone.png";
  browser.screenshot(serve.url() + "/catalogue/providers/", phone, "390,844");
  EXPECT_GT(fs::file_size(phone), 10000u);
  if (podplane::test::updating_golden())
    fs::copy_file(png, podplane::test::source_dir() / "docs" / "images" / "catalogue.png", fs::copy_options::overwrite_existing);
}

}  // namespace
}  // namespace podplane::serve_test
