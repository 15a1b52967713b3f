// HTTP/2 where offered: the fixture tree served by nginx with `http2` on TLS, fetched by the
// Downloader; nginx's access log records the protocol of every request.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "cache/store.hpp"
#include "net/download.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t length = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

bool accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

class Nginx {
 public:
  Nginx(const FixtureUpstream& up, const TempDir& dir) {
    port_ = free_port();
    const auto d = dir.path().string();
    std::ostringstream conf;
    conf << "daemon off;\nmaster_process off;\nworker_processes 1;\npid " << d << "/nginx.pid;\n"
         << "error_log " << d << "/error.log;\nevents { worker_connections 64; }\n"
         << "http {\n  log_format proto '$server_protocol $status $uri';\n  access_log " << d << "/access.log proto;\n"
         << "  client_body_temp_path " << d << "/body;\n  proxy_temp_path " << d << "/proxy;\n"
         << "  fastcgi_temp_path " << d << "/fastcgi;\n  uwsgi_temp_path " << d << "/uwsgi;\n  scgi_temp_path " << d
         << "/scgi;\n"
         << "  server {\n    listen 127.0.0.1:" << port_ << " ssl http2;\n"
         << "    ssl_certificate " << (up.root() / "tls/server.pem").string() << ";\n"
         << "    ssl_certificate_key " << (up.root() / "tls/server.key").string() << ";\n"
         << "    root " << up.www().string() << ";\n  }\n}\n";
    write_file(dir / "nginx.conf", conf.str());
    pid_ = fork();
    if (pid_ == 0) {
      execlp("nginx", "nginx", "-e", (d + "/error.log").c_str(), "-p", d.c_str(), "-c", (d + "/nginx.conf").c_str(),
             static_cast<char*>(nullptr));
      _exit(127);
    }
    // Readiness probe: connect until nginx listens (bounded; each wait is a 20 ms poll).
    for (int i = 0; i < 500 && !accepts(port_); ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      poll(nullptr, 0, 20);
    }
  }
  ~Nginx() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool running() const { return pid_ > 0 && accepts(port_); }
  std::string base() const { return "https://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  pid_t pid_ = -1;
};

TEST(Downloader, UsesHttp2WhereOffered) {
  ASSERT_TRUE(have_program("nginx")) << "nginx is needed (scripts/setup)";
  FixtureUpstream up;  // the tree and its certificates; nginx serves them
  TempDir dir;
  Nginx nginx(up, dir);
  ASSERT_TRUE(nginx.running()) << read_file(dir / "error.log");

  std::vector<net::DownloadItem> items;
  std::vector<std::string> digests;
  for (const auto& provider : up.fixture()["providers"]) {
    for (const auto& [platform, pkg] : provider["versions"][1]["packages"].items()) {
      net::DownloadItem item;
      item.url = nginx.base() + pkg["url"].get<std::string>();
      item.expected_sha256 = pkg["sha256"].get<std::string>();
      item.label = pkg["filename"].get<std::string>();
      items.push_back(item);
    }
  }
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  net::DownloadOptions options;
  options.progress = net::Progress::quiet;
  options.http.ca_file = up.ca_file();
  net::Downloader downloader(options);
  auto outcomes = downloader.fetch_into_store(store, items);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok) << outcome.error;

  std::istringstream log(read_file(dir / "access.log"));
  std::string line;
  std::size_t lines = 0;
  while (std::getline(log, line)) {
    ++lines;
    EXPECT_EQ(line.rfind("HTTP/2.0 200 ", 0), 0u) << line;
  }
  EXPECT_EQ(lines, items.size());
}

}  // namespace
}  // namespace podplane::test
