// The catalogue's "Trust the mirror's certificate" snippet, run with each client its sentence
// names: curl reads CURL_CA_BUNDLE; terraform, tofu and podplane read SSL_CERT_FILE. Each client
// fetches from `mirror serve` over HTTPS with its variable alone, copied from the served page
// (the CA path the test's own: the only change to what is printed), and nothing else naming a
// CA; and the same client without it fails on the mirror's certificate, so the variable is
// what made it trust the mirror. Each runs twice: on a host that names no CA store, and on one
// whose environment points SSL_CERT_DIR at the system's (as this machine's does), where curl
// ignores SSL_CERT_FILE. Terraform and tofu are not Debian packages: their tests run where the
// binary is on PATH.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <regex>

#include "base/ascii.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/catalogue_page.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::read_file;
using podplane::test::TempDir;

constexpr const char* kHeading = "Trust the mirror's certificate";

// What a client host's environment says of CA stores before the snippet's line is added.
enum class HostStore {
  unnamed,         // no variable names one
  system_cert_dir  // SSL_CERT_DIR=/etc/ssl/certs, the system's store (which lacks the site CA)
};
constexpr HostStore kHostStores[] = {HostStore::unnamed, HostStore::system_cert_dir};

std::string to_string(HostStore store) {
  return store == HostStore::unnamed ? "a host naming no CA store" : "a host with SSL_CERT_DIR=/etc/ssl/certs";
}

// A store filled from the fixture upstream for terraform (and for tofu where it runs), the
// upstream then gone, served by `mirror serve` over HTTPS; and its catalogue page. Shared by
// the suite: the fill is what takes time.
struct ServedStore {
  TempDir dir;
  std::unique_ptr<Background> serve;
  std::string url;   // https://127.0.0.1:PORT
  std::string page;  // the catalogue, GET /
  std::string fill_error;

  fs::path ca_file() const { return dir / "cert.pem"; }

  ServedStore() {
    {
      podplane::test::FixtureUpstream upstream;
      ProcessOptions options;
      options.env = upstream.env(dir / "deps", upstream.write_cli_config(dir / "upstream.tfrc"));
      options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
      std::vector<std::string> engines{"terraform"};
      if (podplane::test::have_program("tofu")) engines.push_back("tofu");
      for (const auto& engine : engines) {
        auto filled = podplane::test::run_podplane({"--quiet", "deps", "tf", "--engine", engine, "--platform", "linux_amd64"}, options);
        if (filled.exit_code != 0) fill_error += "deps tf --engine " + engine + ": " + filled.out + filled.err;
      }
    }  // the upstream is gone: only the mirror answers from here on
    test::write_test_tls(dir.path());
    serve = std::make_unique<Background>(
        std::vector<std::string>{podplane::test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0",
                                 "--tls-cert", ca_file().string(), "--tls-key", (dir / "key.pem").string()},
        std::map<std::string, std::string>{{"PODPLANE_DEPS_CACHE_DIR", (dir / "deps").string()}}, dir / "serve.err");
    url = serve->first_line();
    while (!url.empty() && url.back() == '/') url.pop_back();
    if (url.empty()) return;
    HttpRequest get;
    get.ca_file = ca_file();
    page = CurlSession().fetch(url + "/", get).body;
  }
};

class TrustSnippet : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { served_ = new ServedStore; }
  static void TearDownTestSuite() {
    delete served_;
    served_ = nullptr;
  }

  void SetUp() override {
    ASSERT_EQ(served_->fill_error, "");
    ASSERT_FALSE(served_->url.empty()) << read_file(served_->dir / "serve.err");
    ASSERT_NE(served_->page, "") << "no catalogue page";
  }

  // The snippet's `export <variable>=<file>` line, read as the shell reads it, with the test's
  // CA in place of the page's path; nullopt when the snippet has no such line.
  static std::optional<std::pair<std::string, std::string>> exported(const std::string& variable) {
    const std::string snippet = podplane::test::catalogue_snippet(served_->page, kHeading);
    std::smatch line;
    if (!std::regex_search(snippet, line, std::regex("(^|\n)export " + variable + "=(\\S+)\n"))) return std::nullopt;
    return std::pair{variable, podplane::test::with_ca_file(line[2].str(), served_->ca_file().string())};
  }

  // The sentence above the snippet names `client` and the variable it reads.
  static void expect_named(const std::string& client, const std::string& variable) {
    const std::string words = podplane::test::catalogue_snippet_words(served_->page, kHeading);
    EXPECT_NE(words.find(client), std::string::npos) << words;
    EXPECT_NE(words.find(variable), std::string::npos) << words;
  }

  // A client host's environment: a HOME of its own, no proxies, no variable naming a CA but the
  // system's store where `store` says so, and `trust` (the snippet's line for the client) when given.
  ProcessOptions client(HostStore store, const std::optional<std::pair<std::string, std::string>>& trust = std::nullopt) const {
    ProcessOptions options;
    fs::create_directories(home_);
    options.env = {{"HOME", home_.string()}, {"CHECKPOINT_DISABLE", "1"}};
    options.unset_env = {"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "TF_CLI_CONFIG_FILE",
                         "TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR", "PODPLANE_DEPS_URL", "http_proxy", "https_proxy",
                         "HTTPS_PROXY", "ALL_PROXY"};
    if (store == HostStore::system_cert_dir) options.env["SSL_CERT_DIR"] = "/etc/ssl/certs";
    if (trust) options.env[trust->first] = trust->second;
    return options;
  }

  // The catalogue's host blocks for tofu and terraform, as a CLI config file.
  fs::path host_blocks() const {
    const std::string blocks = podplane::test::catalogue_snippet(served_->page, "tofu / terraform: registry protocol");
    EXPECT_NE(blocks.find("host \""), std::string::npos) << served_->page;
    write_file(temp_ / "mirror.tfrc", blocks);
    return temp_ / "mirror.tfrc";
  }

  // `engine init` of a root requiring hashicorp/aws through the catalogue's host blocks.
  ProcessResult engine_init(const std::string& engine, const std::string& name, ProcessOptions options) const {
    const fs::path root = temp_ / name;
    write_file(root / "main.tf", "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \">= 6.0\" }\n  }\n}\n");
    options.cwd = root;
    options.env["TF_CLI_CONFIG_FILE"] = host_blocks().string();
    return podplane::test::run({engine, "init", "-backend=false", "-input=false", "-no-color"}, options);
  }

  // What a client says when it does not trust the mirror's certificate.
  static bool certificate_refused(const ProcessResult& result) {
    const std::string said = ascii_lower(result.out + result.err);
    return said.find("certificate") != std::string::npos || said.find("x509") != std::string::npos;
  }

  // `engine init` through the mirror with the page's SSL_CERT_FILE alone, for each way the host
  // may keep its CAs; without it, the certificate is refused. The same for terraform and tofu.
  void expect_engine_trusts_the_mirror_with_the_variable_alone(const std::string& engine) const {
    expect_named(engine, "SSL_CERT_FILE");
    const auto trust = exported("SSL_CERT_FILE");
    ASSERT_TRUE(trust) << podplane::test::catalogue_snippet(served_->page, kHeading);
    for (const auto store : kHostStores) {
      SCOPED_TRACE(to_string(store));
      const std::string name = store == HostStore::unnamed ? "unnamed" : "cert-dir";
      auto trusted = engine_init(engine, "trusted-" + name, client(store, trust));
      EXPECT_EQ(trusted.exit_code, 0) << trusted.out << trusted.err;
      EXPECT_NE(trusted.out.find("Installed hashicorp/aws v6.2.0"), std::string::npos) << trusted.out;

      auto without = engine_init(engine, "without-" + name, client(store));
      EXPECT_NE(without.exit_code, 0) << engine << " trusted the mirror without the variable\n" << without.out;
      EXPECT_TRUE(certificate_refused(without)) << without.out << without.err;
    }
  }

  static ServedStore* served_;
  TempDir temp_;
  fs::path home_ = temp_ / "home";
};

ServedStore* TrustSnippet::served_ = nullptr;

TEST_F(TrustSnippet, CurlTrustsTheMirrorWithCurlCaBundleAloneAndFailsWithoutIt) {
  expect_named("curl", "CURL_CA_BUNDLE");
  const auto trust = exported("CURL_CA_BUNDLE");
  ASSERT_TRUE(trust) << podplane::test::catalogue_snippet(served_->page, kHeading);
  const std::vector<std::string> get{"curl", "-sS", "-f", "-o", (temp_ / "catalogue.json").string(), served_->url + "/catalogue.json"};
  for (const auto store : kHostStores) {
    SCOPED_TRACE(to_string(store));
    fs::remove(temp_ / "catalogue.json");
    auto trusted = podplane::test::run(get, client(store, trust));
    ASSERT_EQ(trusted.exit_code, 0) << trusted.err;
    EXPECT_NE(read_file(temp_ / "catalogue.json").find("\"podplane-catalogue/1\""), std::string::npos);

    auto without = podplane::test::run(get, client(store));
    EXPECT_EQ(without.exit_code, 60) << "curl trusted the mirror without the variable: " << without.err;
  }
  // Why curl gets a variable of its own: where SSL_CERT_DIR is set, curl does not read SSL_CERT_FILE.
  const auto ssl_cert_file = exported("SSL_CERT_FILE");
  ASSERT_TRUE(ssl_cert_file);
  auto other = podplane::test::run(get, client(HostStore::system_cert_dir, ssl_cert_file));
  EXPECT_EQ(other.exit_code, 60) << "this curl reads SSL_CERT_FILE beside SSL_CERT_DIR: the snippet's sentence says it does not\n"
                                 << other.err;
  EXPECT_NE(podplane::test::catalogue_snippet_words(served_->page, kHeading).find("curl ignores SSL_CERT_FILE where SSL_CERT_DIR is set"),
            std::string::npos);
}

// podplane's own fetches (here `deps tf` into a new store through the catalogue's host blocks).
TEST_F(TrustSnippet, PodplaneFillsFromTheMirrorWithSslCertFileAloneAndFailsWithoutIt) {
  expect_named("podplane", "SSL_CERT_FILE");
  const auto trust = exported("SSL_CERT_FILE");
  ASSERT_TRUE(trust) << podplane::test::catalogue_snippet(served_->page, kHeading);
  auto fill = [&](const std::string& root, ProcessOptions options) {
    options.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / root).string();
    options.env["TF_CLI_CONFIG_FILE"] = host_blocks().string();
    options.env["PODPLANE_HTTP_RETRIES"] = "1";
    options.env["PODPLANE_HTTP_BACKOFF"] = "10ms";
    return podplane::test::run_podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--platform", "linux_amd64"}, options);
  };
  for (const auto store : kHostStores) {
    SCOPED_TRACE(to_string(store));
    const std::string name = store == HostStore::unnamed ? "unnamed" : "cert-dir";
    const std::size_t logged = read_file(served_->dir / "serve.err").size();
    auto trusted = fill("trusted-" + name, client(store, trust));
    EXPECT_EQ(trusted.exit_code, 0) << trusted.out << trusted.err;
    EXPECT_NE(read_file(served_->dir / "serve.err").substr(logged).find("/v1/providers/registry.terraform.io/"), std::string::npos)
        << "the fill did not come from the mirror";

    auto without = fill("without-" + name, client(store));
    EXPECT_NE(without.exit_code, 0) << "podplane trusted the mirror without the variable";
    EXPECT_TRUE(certificate_refused(without)) << without.out << without.err;
  }
}

TEST_F(TrustSnippet, TerraformInitsThroughTheMirrorWithSslCertFileAloneAndFailsWithoutIt) {
  if (!podplane::test::have_program("terraform")) GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
  expect_engine_trusts_the_mirror_with_the_variable_alone("terraform");
}

TEST_F(TrustSnippet, TofuInitsThroughTheMirrorWithSslCertFileAloneAndFailsWithoutIt) {
  if (!podplane::test::have_program("tofu")) GTEST_SKIP() << "no tofu on PATH: OpenTofu is not a Debian package";
  expect_engine_trusts_the_mirror_with_the_variable_alone("tofu");
}

}  // namespace
}  // namespace podplane::serve_test
