#pragma once
// The one TLS fixture of the tests that serve over HTTPS: a self-signed P-256 certificate (its
// own CA, so a client trusts the certificate file itself: curl --cacert, SSL_CERT_FILE) and its
// key, made by `openssl req` as a site makes its own. Not for what a document shows step by
// step (tests/e2e/docs_commands_test.cpp runs the documents' own commands).
#include <filesystem>
#include <string>
#include <vector>

namespace podplane::test {

struct TestTlsOptions {
  std::string common_name = "127.0.0.1";
  std::vector<std::string> alt_names = {"IP:127.0.0.1", "DNS:localhost"};
  int days = 2;
  std::string cert_file = "cert.pem";
  std::string key_file = "key.pem";
  bool key_readable_by_all = false;  // for a server that runs as another user (a container)
};

struct TestTls {
  std::filesystem::path cert;  // also the CA file clients trust
  std::filesystem::path key;
};

// Writes the pair into `dir` (created if missing); throws std::runtime_error with openssl's
// output when it fails.
TestTls write_test_tls(const std::filesystem::path& dir, const TestTlsOptions& options = {});

}  // namespace podplane::test
