#pragma once
// A certificate authority made for one command and a server certificate it signs for
// 127.0.0.1 and localhost: TLS for a server that lives only as long as that command (the
// loopback mirror `stack check` starts for the engine it runs) and that a child trusts
// through SSL_CERT_FILE. Nothing else ever trusts it: the CA's key is never written.
// Errors are podplane::Error naming what OpenSSL refused.
#include <filesystem>

namespace podplane {

struct LoopbackTls {
  std::filesystem::path ca_file;    // the CA certificate (PEM): the child's SSL_CERT_FILE
  std::filesystem::path cert_file;  // the server's certificate (PEM)
  std::filesystem::path key_file;   // the server's private key (PEM, mode 0600)
};

// Writes the three files into `dir` (which must exist). The certificates are valid from an
// hour ago (a child's clock may lag) for two days.
[[nodiscard]] LoopbackTls make_loopback_tls(const std::filesystem::path& dir);

}  // namespace podplane
