#include "mirror/loopback_mirror.hpp"

#include <ostream>
#include <streambuf>
#include <thread>

#include "base/loopback_tls.hpp"
#include "base/scratch_dir.hpp"
#include "mirror/serve.hpp"

namespace podplane::mirror {

namespace {

// Where the server's log lines go: nowhere. The engine's own output says what it missed.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize count) override { return count; }
};

ServeOptions loopback_options(const LoopbackTls& tls) {
  ServeOptions options;
  options.listen = "127.0.0.1:0";
  options.transport = Transport::https;
  options.tls_cert = tls.cert_file;
  options.tls_key = tls.key_file;
  options.limits.workers = 8;  // one engine and the git it runs, not a site
  options.index_poll = std::chrono::milliseconds(0);  // the store does not change under one check
  return options;
}

}  // namespace

struct LoopbackMirror::Impl {
  explicit Impl(const std::filesystem::path& deps_root)
      : scratch("podplane-loopback-mirror-"),
        tls(make_loopback_tls(scratch.path())),
        log(&nowhere),
        server(deps_root, loopback_options(tls), log) {
    url = server.bind();
    while (url.ends_with('/')) url.pop_back();
    thread = std::thread([this] { server.run(); });
  }
  ~Impl() {
    server.stop();
    thread.join();
  }

  ScratchDir scratch;
  LoopbackTls tls;
  NullBuffer nowhere;
  std::ostream log;
  MirrorServer server;
  std::string url;
  std::thread thread;
};

LoopbackMirror::LoopbackMirror(const std::filesystem::path& deps_root) : impl_(std::make_unique<Impl>(deps_root)) {}
LoopbackMirror::~LoopbackMirror() = default;
const std::string& LoopbackMirror::url() const { return impl_->url; }
const std::filesystem::path& LoopbackMirror::ca_file() const { return impl_->tls.ca_file; }

}  // namespace podplane::mirror
