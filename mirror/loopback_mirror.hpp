#pragma once
// A `mirror serve` of one store on 127.0.0.1, for as long as one command runs: the mirror
// `stack check` hands the engine it runs, so that `init` resolves every registry provider,
// registry module and git module through the mirror protocols, as on the site. Served over
// TLS with a CA made for it alone (base/loopback_tls.hpp), workers few, no access log, no
// index watch. Construct, read url() and ca_file(), destroy: the destructor stops the
// server and removes the CA. Errors are podplane::Error (no store, no port).
#include <filesystem>
#include <memory>
#include <string>

namespace podplane::mirror {

class LoopbackMirror {
 public:
  explicit LoopbackMirror(const std::filesystem::path& deps_root);
  ~LoopbackMirror();
  LoopbackMirror(const LoopbackMirror&) = delete;
  LoopbackMirror& operator=(const LoopbackMirror&) = delete;

  // "https://127.0.0.1:PORT", without a trailing slash.
  [[nodiscard]] const std::string& url() const;
  // The PEM file of the CA that signed the server's certificate.
  [[nodiscard]] const std::filesystem::path& ca_file() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace podplane::mirror
