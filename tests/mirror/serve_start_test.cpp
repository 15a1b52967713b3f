// mirror serve refuses to start on what cannot work: a port another server holds, TLS files
// that do not make a usable certificate and key, and --listen addresses that are not HOST:PORT.
#include <gtest/gtest.h>

#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;
using podplane::test::TempDir;

// A start that must fail: it must not print a URL, and it must end by itself.
struct Attempt {
  bool started = false;
  int exit_code = -1;
  std::string err;
};

class StartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    contents_ = fill_store(temp_ / "deps", temp_ / "work", 1024, 4096);
    test::write_test_tls(temp_.path());
  }

  Attempt attempt(const std::vector<std::string>& args, const std::vector<std::string>& prefix = {}) {
    std::vector<std::string> argv = prefix;
    argv.push_back(podplane::test::podplane_binary().string());
    for (const char* word : {"mirror", "serve"}) argv.push_back(word);
    argv.insert(argv.end(), args.begin(), args.end());
    fs::path err = temp_ / ("attempt-" + std::to_string(++attempts_) + ".err");
    Background process(argv, {{"PODPLANE_DEPS_CACHE_DIR", (temp_ / "deps").string()}}, err);
    Attempt result;
    result.started = !process.first_line(std::chrono::seconds(60)).empty();
    result.exit_code = process.stop();
    result.err = read_file(err);
    return result;
  }

  std::vector<std::string> tls(const fs::path& cert, const fs::path& key) const {
    return {"--listen", "127.0.0.1:0", "--tls-cert", cert.string(), "--tls-key", key.string()};
  }

  TempDir temp_;
  StoreContents contents_;
  int attempts_ = 0;
};

TEST_F(StartTest, APortAlreadyInUseFailsAtStart) {
  // Held by a plain listening socket.
  int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(holder, 8), 0);
  socklen_t length = sizeof address;
  ::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length);
  std::string taken = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  auto refused = attempt({"--plain-http", "--listen", taken});
  EXPECT_FALSE(refused.started) << "started on a port another socket listens on";
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("cannot listen on " + taken), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("in use"), std::string::npos) << refused.err;
  ::close(holder);

  // Held by another mirror serve: the second one must not share the port with it.
  MirrorServe first(temp_ / "deps", {"--plain-http", "--listen", "127.0.0.1:0"}, temp_ / "first.err");
  ASSERT_TRUE(first.started()) << first.log();
  std::string held = "127.0.0.1:" + std::to_string(port_of(first.url()));
  auto second = attempt({"--plain-http", "--listen", held});
  EXPECT_FALSE(second.started) << "two servers answer on " << held;
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_NE(second.err.find("in use"), std::string::npos) << second.err;
  CurlSession http;
  for (int i = 0; i < 8; ++i) EXPECT_NE(http.fetch(first.url() + "/healthz").body.find("\"status\": \"ok\""), std::string::npos) << "the first server answers";
}

TEST_F(StartTest, TlsFilesThatDoNotMakeACertificateAndKeyFailAtStart) {
  const fs::path cert = temp_ / "cert.pem", key = temp_ / "key.pem";
  // Another key of the same type, a key of another type, garbage, swapped files, no file at all.
  must(run({"openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out",
            (temp_ / "other-ec.pem").string()}),
       "openssl genpkey ec");
  must(run({"openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
            (temp_ / "other-rsa.pem").string()}),
       "openssl genpkey rsa");
  podplane::test::write_file(temp_ / "garbage.pem", "this is not PEM\n" + random_bytes(512, 3));
  podplane::test::write_file(temp_ / "empty.pem", "");
  std::string truncated = read_file(cert);
  podplane::test::write_file(temp_ / "truncated-cert.pem", truncated.substr(0, truncated.size() / 2));

  struct Case {
    std::string what;
    fs::path cert, key;
    std::string says;  // part of the expected message
  };
  std::vector<Case> cases = {
      {"a key of the same type that does not match", cert, temp_ / "other-ec.pem", "does not match"},
      {"a key of another type", cert, temp_ / "other-rsa.pem", "does not match"},
      {"garbage as the certificate", temp_ / "garbage.pem", key, "certificate"},
      {"garbage as the key", cert, temp_ / "garbage.pem", "key"},
      {"an empty certificate", temp_ / "empty.pem", key, "certificate"},
      {"a truncated certificate", temp_ / "truncated-cert.pem", key, "certificate"},
      {"certificate and key swapped", key, cert, "certificate"},
      {"a missing key file", cert, temp_ / "missing.pem", "missing.pem"},
      {"a directory as the certificate", temp_ / "work", key, "work"},
  };
  for (const auto& c : cases) {
    auto result = attempt(tls(c.cert, c.key));
    EXPECT_FALSE(result.started) << c.what << ": the server started";
    EXPECT_EQ(result.exit_code, 1) << c.what << ": " << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << c.what << ": " << result.err;
    EXPECT_NE(result.err.find("podplane: error:"), std::string::npos) << c.what << ": " << result.err;
  }

  // A key file the server cannot read (it runs as nobody; root would read anything).
  fs::copy_file(key, temp_ / "secret-key.pem");
  fs::permissions(temp_ / "secret-key.pem", fs::perms::owner_read | fs::perms::owner_write);
  std::vector<std::string> prefix;
  if (::geteuid() == 0) {
    ASSERT_TRUE(podplane::test::have_program("setpriv")) << "apt-get install util-linux";
    fs::permissions(temp_.path(), fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::add);
    prefix = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  }
  auto unreadable = attempt(tls(cert, temp_ / "secret-key.pem"), prefix);
  EXPECT_FALSE(unreadable.started);
  EXPECT_EQ(unreadable.exit_code, 1) << unreadable.err;
  EXPECT_NE(unreadable.err.find("secret-key.pem"), std::string::npos) << unreadable.err;
  EXPECT_NE(unreadable.err.find("ermission denied"), std::string::npos) << unreadable.err;

  // The matching pair still starts.
  MirrorServe good(temp_ / "deps", tls(cert, key), temp_ / "good.err");
  EXPECT_TRUE(good.started()) << good.log();
}

TEST_F(StartTest, BadListenAddressesAreUsageErrors) {
  const std::vector<std::string> bad = {
      "127.0.0.1",                    // no port
      "127.0.0.1:",                   // empty port
      "127.0.0.1:65536",              // out of range
      "127.0.0.1:99999999999999999",  // out of any integer
      "127.0.0.1:-1",
      "127.0.0.1:http",
      ":8443",                        // no host
      "[::1]",                        // no port
      "[::1",                         // unbalanced bracket
      "::1:8443",                     // an IPv6 address needs brackets
      "127.0.0.1:80:80",
      "no-such-host.invalid:8443",    // does not resolve
      "bad host!:8443",
      "nonsense",
  };
  for (const auto& listen : bad) {
    auto result = attempt({"--plain-http", "--listen", listen});
    EXPECT_FALSE(result.started) << listen;
    EXPECT_EQ(result.exit_code, 2) << listen << ": " << result.err;
    EXPECT_NE(result.err.find("--listen"), std::string::npos) << listen << ": " << result.err;
    EXPECT_NE(result.err.find("'" + listen + "'"), std::string::npos) << "names what it got: " << result.err;
  }
  // A name that resolves to a local address is fine.
  MirrorServe named(temp_ / "deps", {"--plain-http", "--listen", "localhost:0"}, temp_ / "named.err");
  EXPECT_TRUE(named.started()) << named.log();
}

}  // namespace
}  // namespace podplane::serve_test
