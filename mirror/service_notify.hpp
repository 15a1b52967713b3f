#pragma once
// Tells a service manager how `mirror serve` is doing, by systemd's notify protocol
// (sd_notify(3)): one datagram of NEWLINE-separated VAR=value lines on the unix socket that
// $NOTIFY_SOCKET names (a path, or '@' for the abstract namespace). Written here in a few
// lines rather than linking libsystemd for one sendto(). Without $NOTIFY_SOCKET every call
// does nothing. Thread-safe: each call is one sendto() on a socket opened at construction.
#include <sys/socket.h>
#include <sys/un.h>

#include <string>
#include <string_view>

#include "base/unique_fd.hpp"

namespace podplane::mirror {

class ServiceNotifier {
 public:
  // Reads $NOTIFY_SOCKET. A value that is not a usable unix socket address is ignored, with
  // the reason in `problem()`, as systemd's own client does.
  ServiceNotifier();
  [[nodiscard]] bool enabled() const { return fd_.get() >= 0; }
  [[nodiscard]] const std::string& problem() const { return problem_; }

  // Sends `state` ("READY=1\nSTATUS=…"); false when it could not be sent (no manager, or
  // the manager went away: a notification is never worth stopping the server for).
  bool notify(std::string_view state) const;

  void ready(std::string_view status) const;
  // RELOADING=1 with the MONOTONIC_USEC systemd ≥ 253 wants, so that it matches this reload
  // to the READY=1 that ends it.
  void reloading(std::string_view status) const;
  void stopping() const;

 private:
  UniqueFd fd_;
  sockaddr_un address_{};
  socklen_t address_length_ = 0;  // an abstract name's length counts exactly its bytes
  std::string problem_;
};

}  // namespace podplane::mirror
