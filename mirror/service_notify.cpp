#include "mirror/service_notify.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace podplane::mirror {

namespace {
// STATUS= is one line of the datagram: a newline inside would start another assignment.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}
}  // namespace

ServiceNotifier::ServiceNotifier() {
  const char* value = std::getenv("NOTIFY_SOCKET");
  if (value == nullptr || *value == '\0') return;
  std::string name = value;
  if (name.front() != '/' && name.front() != '@') {
    // systemd also offers vsock: addresses (to a VM's host); a mirror never runs under one.
    problem_ = "NOTIFY_SOCKET=" + name + " is not a unix socket path or an abstract name (@…)";
    return;
  }
  if (name.size() >= sizeof address_.sun_path) {
    problem_ = "NOTIFY_SOCKET is longer than a unix socket address can be";
    return;
  }
  address_.sun_family = AF_UNIX;
  std::memcpy(address_.sun_path, name.data(), name.size());
  // An abstract address starts with a NUL instead of '@' and is exactly as long as its name:
  // no terminating NUL, which would be part of the name.
  if (name.front() == '@') address_.sun_path[0] = '\0';
  address_length_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (name.front() == '/' ? 1 : 0));
  fd_ = UniqueFd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd_) problem_ = std::string("cannot open a socket for NOTIFY_SOCKET: ") + std::strerror(errno);
}

bool ServiceNotifier::notify(std::string_view state) const {
  if (!fd_) return false;
  while (true) {
    ssize_t sent = ::sendto(fd_.get(), state.data(), state.size(), MSG_NOSIGNAL,
                            reinterpret_cast<const sockaddr*>(&address_), address_length_);
    if (sent >= 0) return static_cast<std::size_t>(sent) == state.size();
    if (errno != EINTR) return false;
  }
}

void ServiceNotifier::ready(std::string_view status) const {
  (void)notify("READY=1\nSTATUS=" + one_line(status));
}

void ServiceNotifier::reloading(std::string_view status) const {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  auto usec = static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000;
  (void)notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=" + one_line(status));
}

void ServiceNotifier::stopping() const { (void)notify("STOPPING=1\nSTATUS=stopping"); }

}  // namespace podplane::mirror
