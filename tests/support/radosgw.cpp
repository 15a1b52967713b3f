#include "tests/support/radosgw.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <stdexcept>
#include <thread>

#include "base/digest.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/tls.hpp"

namespace podplane::test {

namespace fs = std::filesystem;

namespace {

constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr const char* kRegion = "us-east-1";

int unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    throw std::runtime_error("cannot find a free loopback port");
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string random_hex(std::size_t bytes) {
  std::random_device device;
  std::string raw(bytes, '\0');
  for (auto& c : raw) c = static_cast<char>(device() & 0xff);
  return sha256_hex(raw).substr(0, bytes * 2);
}

void must(const ProcessResult& result, const std::string& what) {
  if (result.exit_code != 0) throw std::runtime_error(what + " failed (exit " + std::to_string(result.exit_code) + "):\n" + result.out + result.err);
}

// A generous but bounded wait for a condition, polled (never a fixed sleep).
template <typename Ready>
bool wait_until(std::chrono::seconds limit, Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return ready();
}

std::string tail_of(const fs::path& file, std::size_t bytes = 3000) {
  if (!fs::exists(file)) return "";
  std::string text = read_file(file);
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

// A key as SigV4 signs a path: every byte but A-Z a-z 0-9 - . _ ~ and '/' as %XX.
std::string encoded_key(const std::string& key) {
  std::string out;
  char hex[4];
  for (const char c : key) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += c;
    } else {
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      out += hex;
    }
  }
  return out;
}

}  // namespace

std::string RadosGateway::missing_programs() {
  for (const char* program : {"/usr/bin/ceph-mon", "/usr/bin/ceph-osd", "/usr/bin/radosgw", "/usr/bin/radosgw-admin",
                              "/usr/bin/ceph", "/usr/bin/ceph-authtool", "/usr/bin/monmaptool", "/usr/bin/curl"})
    if (!fs::exists(program)) return std::string("no ") + program + ": scripts/setup installs Debian's radosgw, ceph-mon and ceph-osd";
  return "";
}

RadosGateway::RadosGateway(const fs::path& dir) : dir_(dir), secret_key_(random_hex(20)) {
  for (const char* sub : {"run", "log", "mon", "osd", "rgw"}) fs::create_directories(dir_ / sub);
  const int mon_port = unused_port();
  port_ = unused_port();
  endpoint_ = "http://127.0.0.1:" + std::to_string(port_);
  const std::string fsid = "4f1b3c2a-" + random_hex(2) + "-4e5f-8a9b-" + random_hex(6);
  const std::string d = dir_.string();
  const fs::path conf = dir_ / "ceph.conf";
  // One OSD: pools of size 1 and few PGs (radosgw makes about eight pools on its first start);
  // memstore keeps objects in RAM, so there is no block device or file system to prepare.
  write_file(conf, "[global]\nfsid = " + fsid + "\nmon host = v2:127.0.0.1:" + std::to_string(mon_port) +
                       "\nrun dir = " + d + "/run\nadmin socket = " + d + "/run/$name.asok\nlog file = " + d +
                       "/log/$name.log\npid file = " + d + "/run/$name.pid\nmon data = " + d + "/mon\nosd data = " + d +
                       "/osd\nrgw data = " + d + "/rgw\nkeyring = " + d + "/keyring\n"
                       "osd objectstore = memstore\nmemstore device bytes = 1073741824\n"
                       "osd pool default size = 1\nosd pool default min size = 1\nmon allow pool size one = true\n"
                       "mon warn on pool no redundancy = false\nosd pool default pg num = 8\nosd pool default pgp num = 8\n"
                       "osd pool default pg autoscale mode = off\nosd crush chooseleaf type = 0\nmon max pg per osd = 1000\n"
                       "public addr = 127.0.0.1\nms bind ipv6 = false\n"
                       "[client.rgw]\nrgw frontends = beast endpoint=127.0.0.1:" + std::to_string(port_) + "\n");
  const std::string keyring = d + "/keyring";
  must(run({"ceph-authtool", "--create-keyring", keyring, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"}), "ceph-authtool mon.");
  // Every daemon's key and caps go into the monitor's initial keyring: nothing to register later.
  must(run({"ceph-authtool", keyring, "--gen-key", "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *",
            "--cap", "mgr", "allow *"}), "ceph-authtool client.admin");
  must(run({"ceph-authtool", keyring, "--gen-key", "-n", "client.rgw", "--cap", "mon", "allow rw", "--cap", "osd", "allow rwx"}),
       "ceph-authtool client.rgw");
  must(run({"ceph-authtool", keyring, "--gen-key", "-n", "osd.0", "--cap", "mon", "allow profile osd", "--cap", "osd", "allow *"}),
       "ceph-authtool osd.0");
  must(run({"monmaptool", "--create", "--addv", "a", "[v2:127.0.0.1:" + std::to_string(mon_port) + "]", "--fsid", fsid, d + "/monmap"}),
       "monmaptool");
  must(run({"ceph-mon", "-c", conf.string(), "--mkfs", "-i", "a", "--monmap", d + "/monmap", "--keyring", keyring}), "ceph-mon --mkfs");
  daemons_.push_back(std::make_unique<Background>(std::vector<std::string>{"ceph-mon", "-f", "-c", conf.string(), "-i", "a"},
                                                  std::map<std::string, std::string>{}, dir_ / "log" / "mon.stderr"));
  const std::string osd_uuid = "0b5d7e9c-" + random_hex(2) + "-4a1b-9c3d-" + random_hex(6);
  // `ceph osd new` is the first call to the monitor: it waits for it to be up (bounded).
  must(run({"timeout", "60", "ceph", "-c", conf.string(), "--connect-timeout", "30", "osd", "new", osd_uuid, "0"}), "ceph osd new");
  must(run({"ceph-osd", "-c", conf.string(), "-i", "0", "--mkfs", "--osd-uuid", osd_uuid}), "ceph-osd --mkfs");
  daemons_.push_back(std::make_unique<Background>(std::vector<std::string>{"ceph-osd", "-f", "-c", conf.string(), "-i", "0"},
                                                  std::map<std::string, std::string>{}, dir_ / "log" / "osd.stderr"));
  daemons_.push_back(std::make_unique<Background>(std::vector<std::string>{"radosgw", "-f", "-c", conf.string(), "-n", "client.rgw"},
                                                  std::map<std::string, std::string>{}, dir_ / "log" / "rgw.stderr"));
  const bool up = wait_until(std::chrono::seconds(60), [&] {
    return run({"curl", "-s", "-o", "/dev/null", "--max-time", "2", endpoint_ + "/"}).exit_code == 0;
  });
  if (!up) throw std::runtime_error("radosgw did not answer on " + endpoint_ + " within 60 s\n" + logs());
  must(run({"radosgw-admin", "-c", conf.string(), "-n", "client.admin", "user", "create", "--uid", "podplane-test",
            "--display-name", "podplane test", "--access-key", access_key_, "--secret-key", secret_key_}),
       "radosgw-admin user create");
}

RadosGateway::~RadosGateway() {
  while (!daemons_.empty()) {
    daemons_.back()->stop(9);  // RAM-backed and thrown away: no orderly shutdown to wait for
    daemons_.pop_back();
  }
}

std::map<std::string, std::string> RadosGateway::aws_env() const {
  return {{"AWS_ENDPOINT_URL", endpoint_},
          {"AWS_ACCESS_KEY_ID", access_key_},
          {"AWS_SECRET_ACCESS_KEY", secret_key_},
          {"AWS_REGION", kRegion}};
}

std::string RadosGateway::curl(const std::vector<std::string>& args, const std::string& body_sha256) const {
  std::vector<std::string> argv{"curl", "-sS", "--fail-with-body", "--aws-sigv4", std::string("aws:amz:") + kRegion + ":s3",
                                "--user", access_key_ + ":" + secret_key_, "-H", "x-amz-content-sha256: " + body_sha256};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options;
  options.unset_env = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"};
  auto result = run(argv, options);
  must(result, "curl " + args.back());
  return result.out;
}

void RadosGateway::create_bucket(const std::string& bucket) const { (void)curl({"-X", "PUT", endpoint_ + "/" + bucket}, kEmptySha256); }

void RadosGateway::allow_public_read(const std::string& bucket, const std::string& prefix) const {
  const std::string policy = R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},)"
                             R"("Action":["s3:GetObject"],"Resource":["arn:aws:s3:::)" + bucket + "/" + prefix + R"(*"]}]})";
  (void)curl({"-X", "PUT", "--data-binary", policy, endpoint_ + "/" + bucket + "?policy="}, sha256_hex(policy));
}

void RadosGateway::put_object(const std::string& bucket, const std::string& key, const std::string& bytes) const {
  const fs::path file = dir_ / "upload.tmp";
  write_file(file, bytes);
  (void)curl({"-T", file.string(), endpoint_ + "/" + bucket + "/" + encoded_key(key)}, sha256_hex(bytes));
}

std::map<std::string, ListedObject> RadosGateway::list(const std::string& bucket, const std::string& prefix) const {
  std::map<std::string, ListedObject> objects;
  static const std::regex contents("<Contents>(.*?)</Contents>");
  static const std::regex key("<Key>([^<]*)</Key>"), etag("<ETag>&quot;([^&]*)&quot;</ETag>"),
      size("<Size>([0-9]+)</Size>"), modified("<LastModified>([^<]*)</LastModified>"),
      token("<NextContinuationToken>([^<]*)</NextContinuationToken>");
  std::string next;
  for (;;) {
    // The query as SigV4 signs it: sorted, values encoded (prefixes here are plain names and '/').
    std::string encoded;
    for (const char c : prefix) encoded += c == '/' ? std::string("%2F") : std::string(1, c);
    std::string query = (next.empty() ? "" : "continuation-token=" + next + "&") + "list-type=2&prefix=" + encoded;
    std::string xml = curl({endpoint_ + "/" + bucket + "?" + query}, kEmptySha256);
    for (std::sregex_iterator it(xml.begin(), xml.end(), contents), end; it != end; ++it) {
      const std::string block = (*it)[1];
      std::smatch m;
      ListedObject object;
      if (std::regex_search(block, m, key)) object.key = m[1];
      if (std::regex_search(block, m, etag)) object.etag = m[1];
      if (std::regex_search(block, m, size)) object.size = std::stoull(m[1]);
      if (std::regex_search(block, m, modified)) object.last_modified = m[1];
      objects[object.key] = object;
    }
    std::smatch m;
    if (xml.find("<IsTruncated>true</IsTruncated>") == std::string::npos || !std::regex_search(xml, m, token)) return objects;
    next = m[1];
  }
}

std::pair<std::string, std::string> RadosGateway::get(const std::string& bucket, const std::string& key) const {
  const fs::path headers = dir_ / "get.headers";
  std::string body = curl({"-D", headers.string(), endpoint_ + "/" + bucket + "/" + encoded_key(key)}, kEmptySha256);
  static const std::regex type("\n[Cc]ontent-[Tt]ype: *([^\r\n]*)");
  std::string head = read_file(headers);
  std::smatch m;
  return {body, std::regex_search(head, m, type) ? std::string(m[1]) : std::string()};
}

std::string RadosGateway::logs() const {
  std::string text;
  for (const char* name : {"mon.a.log", "osd.0.log", "client.rgw.log", "mon.stderr", "osd.stderr", "rgw.stderr"})
    text += "---- " + std::string(name) + "\n" + tail_of(dir_ / "log" / name);
  return text;
}

namespace {

void replace_once(std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos)
    throw std::runtime_error("docs/nginx/podplane-mirror-s3.conf should hold \"" + from + "\" exactly once");
  text.replace(at, from.size(), to);
}

}  // namespace

NginxInFront::NginxInFront(const RadosGateway& gateway, const std::string& bucket, const std::string& prefix, const fs::path& dir)
    : dir_(dir) {
  fs::create_directories(dir_);
  (void)write_test_tls(dir_ / "tls");
  std::string config = read_file(source_dir() / "docs" / "nginx" / "podplane-mirror-s3.conf");
  const int port = unused_port();
  replace_once(config, "listen 8443 ssl;", "listen 127.0.0.1:" + std::to_string(port) + " ssl;");
  replace_once(config, "/etc/podplane/mirror-tls.crt", (dir_ / "tls" / "cert.pem").string());
  replace_once(config, "/etc/podplane/mirror-tls.key", (dir_ / "tls" / "key.pem").string());
  replace_once(config, "http://rgw.site.internal:7480/podplane-mirror/site/", gateway.endpoint() + "/" + bucket + "/" + prefix);
  write_file(dir_ / "podplane-mirror-s3.conf", config);
  // In the foreground for the test (the file leaves daemon on, as a site starts it).
  nginx_ = std::make_unique<Background>(
      std::vector<std::string>{"/usr/sbin/nginx", "-e", (dir_ / "startup.log").string(), "-p", dir_.string(), "-c",
                               (dir_ / "podplane-mirror-s3.conf").string(), "-g", "daemon off; master_process off;"},
      std::map<std::string, std::string>{}, dir_ / "stderr.log");
  url_ = "https://127.0.0.1:" + std::to_string(port);
  const bool up = wait_until(std::chrono::seconds(30), [&] {
    return run({"curl", "-s", "-o", "/dev/null", "--max-time", "2", "--cacert", ca_file().string(), url_ + "/healthz"}).exit_code == 0;
  });
  if (!up) throw std::runtime_error("nginx did not start on " + url_ + "\n" + tail_of(dir_ / "stderr.log") + tail_of(dir_ / "startup.log"));
}

}  // namespace podplane::test
