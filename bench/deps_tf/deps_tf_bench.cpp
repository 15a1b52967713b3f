// deps_tf_bench [--workdir DIR] [--zip-mib MIN-MAX|0] [--os-image-mib N] [--big-mib N] [--skip-memory] [--skip-deps-tf]
//               [--skip-download]
// Measures, in one run and against a peer on the same server and files (docs/download.md):
//   payload: the provider zips are sized like real ones (--zip-mib, default 10-30: each zip's
//            size spread over that range, its executable half incompressible and half
//            compressible, DEFLATED); --zip-mib 0 keeps the fixture's 16 KiB zips
//   engine:  a cold fetch of 6 providers x 4 platforms by the Downloader (--jobs 8) vs a
//            sequential `curl` loop over the same URLs, fixture server adding 50 ms per request
//            (target >= 4x)
//   deps tf: cold `podplane deps tf` for 4 platforms, at 0 ms and at 50 ms per request, vs
//            `curl --parallel --parallel-max 8` over every URL it fetched (from the server's access
//            log), the wire's limit (target: deps tf <= 1.5x that time), and vs a sequential curl
//            loop; warm re-run (< 1 s, no zip bytes)
//   deps download / deps images: cold `deps download --arch amd64,arm64` (vmconfig manifests,
//            their artifacts, seeds and the manifests' images) and cold `deps images` of the
//            fixture's multi-arch image, at 0 and 50 ms, each vs `curl --parallel` over the URLs
//            it fetched (target <= 1.5x); each arch's os image weighs --os-image-mib (default
//            256, as real cloud images weigh hundreds of MiB; 0: the fixture's 8 MiB)
//   floors:  beside each ratio to the wire, the hashing the fill must do (sha256 of every file
//            the wire fetched, plus the h1 of every provider zip's contents), timed in this
//            process on one thread and divided by the cores; ours against the larger floor
//            (target <= 1.5x); then the shared cores: that hashing plus the CPU curl and the
//            fixture server spent on the wire's run, over the cores (bench/support/physical_floors.hpp)
//   engine peer: where terraform is installed, `terraform providers mirror` + `providers lock`
//            for the same providers and platforms vs `podplane deps tf --engine terraform
//            --stack` of a root requiring them (target >= 10x)
//   memory:  peak RSS (ru_maxrss) of a Downloader fetch of N MiB provider zips (target < 100 MiB)
// Every command line prints wall time, CPU time (user + system of the child) and the load
// average, since other builds share the machine. Run by hand (not by ctest).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/support/curl_parallel.hpp"
#include "bench/support/process_cpu.hpp"
#include "bench/support/physical_floors.hpp"
#include "cache/store.hpp"
#include "net/download.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const fs::path kTools = fs::path(PODPLANE_SOURCE_DIR) / "tests" / "tools" / "upstream";
// The fixture every part but the memory one serves, under the workdir.
const char* const kFixture = "fixture";

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "deps_tf_bench: %s\n", message.c_str());
  std::exit(1);
}

struct Exit {
  int status = 0;
  long max_rss_kib = 0;
  double cpu_seconds = 0;  // user + system
};

double load_average() {
  double load[1] = {-1};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

// fork/exec, output to `log` (or /dev/null); wait4 gives the child's own peak RSS.
Exit run(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env = {},
         const std::string& log = "/dev/null") {
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out, 1);
    dup2(out, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  Exit result;
  rusage usage{};
  int status = 0;
  wait4(pid, &status, 0, &usage);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.max_rss_kib = usage.ru_maxrss;
  result.cpu_seconds = podplane::bench::seconds_of(usage.ru_utime) + podplane::bench::seconds_of(usage.ru_stime);
  return result;
}

class Server {
 public:
  Server(const fs::path& root, int delay_ms, const fs::path& log) {
    // serve.py appends to its log, and the wire's URLs are read from it: this server's alone.
    fs::remove(log);
    int fds[2];
    if (pipe(fds) != 0) die("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      std::string delay = std::to_string(delay_ms);
      execlp("python3", "python3", (kTools / "serve.py").c_str(), "--root", root.c_str(), "--delay-ms", delay.c_str(),
             "--log", log.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    std::string line;
    char c;
    while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
    close(fds[0]);
    if (line.rfind("listening ", 0) != 0) die("serve.py did not start: " + line);
    base_ = line.substr(10);
  }
  ~Server() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  const std::string& base() const { return base_; }
  // The server's CPU time so far: the difference of two readings charges it for one row.
  double cpu_seconds() const { return podplane::bench::process_cpu_seconds(pid_); }

 private:
  pid_t pid_ = -1;
  std::string base_;
};

void build(const fs::path& out, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{"python3", (kTools / "build_fixture.py").string(), out.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (run(argv, {}, (out.parent_path() / "build.log").string()).status != 0) die("build_fixture.py failed, see build.log");
}

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

std::vector<nlohmann::json> read_log(const fs::path& file) {
  std::vector<nlohmann::json> entries;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) entries.push_back(j);
  }
  return entries;
}

// The first version of every provider, every platform it has: "6 providers x 4 platforms".
std::vector<podplane::net::DownloadItem> first_versions(const nlohmann::json& fixture, const std::string& base) {
  std::vector<podplane::net::DownloadItem> items;
  for (const auto& provider : fixture["providers"]) {
    for (const auto& [platform, pkg] : provider["versions"][0]["packages"].items()) {
      podplane::net::DownloadItem item;
      item.url = base + pkg["url"].get<std::string>();
      item.expected_sha256 = pkg["sha256"].get<std::string>();
      item.label = pkg["filename"].get<std::string>();
      items.push_back(item);
    }
  }
  return items;
}

double curl_loop(const std::vector<std::string>& urls, const fs::path& ca, const fs::path& dir) {
  fs::create_directories(dir);
  const auto start = Clock::now();
  int n = 0;
  for (const auto& url : urls) {
    auto exit = run({"curl", "-sS", "-f", "--cacert", ca.string(), "-o", (dir / std::to_string(n++)).string(), url});
    if (exit.status != 0) die("curl failed for " + url);
  }
  return since(start);
}

podplane::bench::MeasuredRun curl_parallel(const std::vector<std::string>& urls, const fs::path& ca, const fs::path& dir) {
  return podplane::bench::curl_parallel(urls, dir, {.ca_file = ca, .headers = {}});
}

// `dir` removed, so that the cold run which uses it starts from nothing: --workdir may be
// reused (the fixture takes a minute to build), and a store left there by an earlier run made
// its "cold" runs find every package already held. Store objects and their directories may be
// read-only: write permission is given back first.
fs::path fresh(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_symlink()) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(dir, ec);
  if (ec) die("cannot remove " + dir.string() + " for a cold run: " + ec.message());
  return dir;
}

double fetch_with_engine(const std::vector<podplane::net::DownloadItem>& items, const fs::path& ca, const fs::path& root) {
  auto store = podplane::cache::Store::open(root);
  podplane::net::DownloadOptions options;
  options.jobs = 8;
  options.per_host = 8;
  options.progress = podplane::net::Progress::quiet;
  options.http.ca_file = ca;
  podplane::net::Downloader downloader(options);
  const auto start = Clock::now();
  auto outcomes = downloader.fetch_into_store(store, items);
  const double seconds = since(start);
  for (const auto& outcome : outcomes) {
    if (!outcome.ok) die(outcome.error);
  }
  return seconds;
}

// The CLI config that points registry.opentofu.org and registry.terraform.io at the fixture.
fs::path write_tfrc(const fs::path& file, const std::string& base) {
  std::ofstream out(file);
  for (const char* host : {"registry.opentofu.org", "registry.terraform.io"}) {
    out << "host \"" << host << "\" {\n  services = {\n    \"providers.v1\" = \"" << base
        << "/v1/providers/\"\n    \"modules.v1\" = \"" << base << "/v1/modules/\"\n  }\n}\n";
  }
  return file;
}

// What an OCI client accepts for a manifest (the fixture's static registry ignores it; kept so
// the peer asks what a registry would need).
const char* const kOciAccept =
    "Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";

const std::vector<std::string> kPlatforms{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"};

// Cold and warm `deps tf` of Podplane's stack for 4 platforms, the fixture adding `delay_ms`
// to every answer; the peers fetch exactly the URLs deps tf fetched.
// The GETs the fixture answered with a 2xx from `from` on, as URLs; `keep` picks by path.
std::vector<std::string> answered_urls(const std::vector<nlohmann::json>& entries, std::size_t from, const std::string& base,
                                       const std::function<bool(const std::string&)>& keep) {
  std::vector<std::string> urls;
  for (std::size_t i = from; i < entries.size(); ++i) {
    const std::string path = entries[i]["path"];
    if (entries[i]["method"] == "GET" && entries[i]["status"].get<int>() < 300 && keep(path)) urls.push_back(base + path);
  }
  return urls;
}

// curl --parallel over `urls` into `wire_dir`, with the CPU `server` spent meanwhile.
struct Wire {
  podplane::bench::MeasuredRun run;
  double server_cpu = 0;
};
Wire wire_of(const Server& server, const std::vector<std::string>& urls, const fs::path& wire_dir,
             const podplane::bench::CurlParallelOptions& options) {
  const double before = server.cpu_seconds();
  Wire wire{podplane::bench::curl_parallel(urls, wire_dir, options), 0};
  wire.server_cpu = server.cpu_seconds() - before;
  return wire;
}

// The URLs (on `base`) of every file the fixture's manifests name by a sha512 (vmconfig items,
// seed snapshots): `deps download` must hash those with sha512 too.
std::set<std::string> sha512_urls(const fs::path& fixture, const std::string& base) {
  std::set<std::string> urls;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& node) {
    if (node.is_object()) {
      if (node.contains("url") && node.contains("digest") && node["url"].is_string() && node["digest"].is_string() &&
          node["digest"].get<std::string>().starts_with("sha512:")) {
        std::string url = node["url"];
        if (url.starts_with("{{BASE}}")) url = base + url.substr(8);
        urls.insert(url);
      }
      for (const auto& [key, value] : node.items()) walk(value);
    } else if (node.is_array()) {
      for (const auto& value : node) walk(value);
    }
  };
  for (const auto& entry : fs::directory_iterator(fixture / "www" / "manifests")) walk(read_json(entry.path()));
  return urls;
}

// The time to write `files` again into `scratch` (on the store's file system) and sync each,
// as the store makes every object it adds durable before its row commits; curl --parallel
// syncs nothing. The files come from the page cache: this is the disk's share alone.
double durable_write_seconds(const std::vector<podplane::bench::FetchedFile>& files, const fs::path& scratch) {
  fs::create_directories(scratch);
  std::vector<char> buffer(1 << 20);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::ifstream in(files[i].path, std::ios::binary);
    const fs::path copy = scratch / std::to_string(i);
    int fd = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die("cannot write " + copy.string() + ": " + std::strerror(errno));
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
      const char* data = buffer.data();
      std::size_t left = static_cast<std::size_t>(in.gcount());
      while (left > 0) {
        ssize_t n = ::write(fd, data, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("cannot write " + copy.string() + ": " + std::strerror(errno));
        data += n;
        left -= static_cast<std::size_t>(n);
      }
    }
    if (::fsync(fd) != 0) die("cannot sync " + copy.string() + ": " + std::strerror(errno));
    ::close(fd);
  }
  const double seconds = since(start);
  fs::remove_all(scratch);
  return seconds;
}

// Four lines: a cold command against curl --parallel over the URLs it fetched (into
// `wire_dir`), then against the larger of the wire and the hashing of what the wire fetched
// (with sha512 too for `sha512_urls`), then against the shared cores (`ours_server_cpu`: what
// the server spent during our run), then against the larger of those and writing the same
// bytes durably.
// The wire's files are removed afterwards: with real-sized zips they are hundreds of MiB.
void print_against_floors(const std::string& what, int delay_ms, double seconds, const Exit& ours, double ours_server_cpu,
                          const std::vector<std::string>& urls, const fs::path& wire_dir, const Wire& measured,
                          const std::set<std::string>& sha512_urls = {}) {
  const auto& wire = measured.run;
  std::printf("%s (%2d ms/request): cold %.2f s (CPU %.2f s, peak RSS %.1f MiB) for %zu requests; curl --parallel-max 8 "
              "%.2f s (CPU %.2f s): %.2fx the wire (target <= 1.5x); load %.1f\n",
              what.c_str(), delay_ms, seconds, ours.cpu_seconds, static_cast<double>(ours.max_rss_kib) / 1024.0, urls.size(),
              wire.seconds, wire.cpu_seconds, seconds / wire.seconds, load_average());
  std::vector<podplane::bench::FetchedFile> files;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    files.push_back({podplane::bench::curl_output(wire_dir, i), urls[i].ends_with(".zip"),
                     sha512_urls.contains(urls[i]) ? std::optional(podplane::DigestAlgorithm::sha512) : std::nullopt});
  }
  const auto hash = podplane::bench::hash_floor(files);
  podplane::bench::print_floors(what, delay_ms, seconds, ours.cpu_seconds, wire.seconds, hash,
                                podplane::bench::SharedCores{wire.cpu_seconds, measured.server_cpu, ours_server_cpu});
  const double durable = durable_write_seconds(files, wire_dir.string() + "-durable");
  const double larger = std::max({wire.seconds, hash.seconds(), durable});
  std::printf("%s (%2d ms/request): durable: the same %.1f MiB written and synced file by file here %.3f s (the store "
              "syncs every object it adds; curl syncs nothing); the larger of it, the wire and the hash %.3f s; ours "
              "%.2fx it\n",
              what.c_str(), delay_ms, static_cast<double>(hash.bytes) / (1024.0 * 1024.0), durable, larger, seconds / larger);
  fs::remove_all(wire_dir);
}

void bench_deps_tf(const fs::path& work, const fs::path& ca, int delay_ms) {
  const std::string tag = "delay" + std::to_string(delay_ms);
  Server server(work / kFixture, delay_ms, work / (tag + "-access.log"));
  std::vector<std::pair<std::string, std::string>> env{{"TF_CLI_CONFIG_FILE", write_tfrc(work / (tag + ".tfrc"), server.base()).string()},
                                                       {"SSL_CERT_FILE", ca.string()},
                                                       {"PODPLANE_DEPS_URL", server.base()},
                                                       {"PODPLANE_DEPS_CACHE_DIR", fresh(work / ("deps-tf-" + tag)).string()}};
  std::vector<std::string> command{PODPLANE_BINARY, "--quiet", "deps", "tf", "--engine", "tofu"};
  for (const auto& platform : kPlatforms) command.insert(command.end(), {"--platform", platform});
  const fs::path log = work / ("deps-tf-" + tag + ".log");
  const double server_before = server.cpu_seconds();
  auto start = Clock::now();
  auto cold = run(command, env, log.string());
  const double cold_s = since(start);
  const double cold_server_cpu = server.cpu_seconds() - server_before;
  if (cold.status != 0) {
    std::printf("deps tf (%d ms): cold run failed (exit %d), see %s\n", delay_ms, cold.status, log.c_str());
    return;
  }
  auto entries = read_log(work / (tag + "-access.log"));
  // Its own git/archive module fetch is not the peer's work.
  const auto fetched = answered_urls(entries, 0, server.base(), [](const std::string& path) { return !path.starts_with("/git/"); });
  const std::size_t warm_mark = entries.size();
  start = Clock::now();
  auto warm = run(command, env, log.string());
  const double warm_s = since(start);
  std::uint64_t warm_zip_bytes = 0;
  auto after = read_log(work / (tag + "-access.log"));
  for (std::size_t i = warm_mark; i < after.size(); ++i) {
    const std::string path = after[i]["path"];
    if (path.ends_with(".zip")) warm_zip_bytes += after[i]["bytes"].get<std::uint64_t>();
  }
  const fs::path wire_dir = work / ("curl-parallel-" + tag);
  const auto parallel = wire_of(server, fetched, wire_dir, {.ca_file = ca, .headers = {}});
  const double sequential = curl_loop(fetched, ca, work / ("curl-loop-" + tag));
  fs::remove_all(work / ("curl-loop-" + tag));
  print_against_floors("deps tf", delay_ms, cold_s, cold, cold_server_cpu, fetched, wire_dir, parallel);
  std::printf("deps tf (%2d ms/request): sequential curl %.2f s; warm re-run %.2f s (CPU %.2f s; target < 1 s), exit %d, "
              "zip bytes transferred %llu (target 0)\n",
              delay_ms, sequential, warm_s, warm.cpu_seconds, warm.status, static_cast<unsigned long long>(warm_zip_bytes));
}

// Cold `deps download --arch amd64,arm64` (the fixture's vmconfig manifests, their artifacts,
// seeds and the one multi-arch image they pin, from the fixture's static registry), then cold
// `deps images` of that image alone for every platform; each against curl --parallel over the
// URLs it fetched.
void bench_deps_download(const fs::path& work, const fs::path& ca, int delay_ms) {
  const std::string tag = "download-delay" + std::to_string(delay_ms);
  const fs::path access_log = work / (tag + "-access.log");
  fresh(work / tag);
  fresh(work / (tag + "-images"));
  Server server(work / kFixture, delay_ms, access_log);
  auto env_for = [&](const std::string& store) {
    return std::vector<std::pair<std::string, std::string>>{
        {"SSL_CERT_FILE", ca.string()}, {"PODPLANE_DEPS_URL", server.base()}, {"PODPLANE_DEPS_CACHE_DIR", (work / store).string()}};
  };
  const fs::path log = work / (tag + ".log");
  double server_before = server.cpu_seconds();
  auto start = Clock::now();
  auto ours = run({PODPLANE_BINARY, "--quiet", "deps", "download", "--arch", "amd64,arm64"}, env_for(tag), log.string());
  double seconds = since(start);
  double ours_server_cpu = server.cpu_seconds() - server_before;
  if (ours.status != 0) {
    std::printf("deps download (%d ms): cold run failed (exit %d), see %s\n", delay_ms, ours.status, log.c_str());
    return;
  }
  auto entries = read_log(access_log);
  auto urls = answered_urls(entries, 0, server.base(), [](const std::string&) { return true; });
  const fs::path wire_dir = work / ("curl-" + tag);
  print_against_floors("deps download", delay_ms, seconds, ours, ours_server_cpu, urls, wire_dir,
                       wire_of(server, urls, wire_dir, {.ca_file = ca, .headers = {}}), sha512_urls(work / kFixture, server.base()));

  const std::string host = server.base().substr(server.base().find("://") + 3);
  const fs::path list = work / (tag + "-images.txt");
  std::ofstream(list) << host << "/podplane-fixture/pause:3.10.2\n";
  const std::size_t mark = entries.size();
  server_before = server.cpu_seconds();
  start = Clock::now();
  ours = run({PODPLANE_BINARY, "--quiet", "deps", "images", "-f", list.string(), "--arch", "all"}, env_for(tag + "-images"),
             log.string());
  seconds = since(start);
  ours_server_cpu = server.cpu_seconds() - server_before;
  if (ours.status != 0) {
    std::printf("deps images (%d ms): cold run failed (exit %d), see %s\n", delay_ms, ours.status, log.c_str());
    return;
  }
  entries = read_log(access_log);
  urls = answered_urls(entries, mark, server.base(), [](const std::string& path) { return path.starts_with("/v2/"); });
  const fs::path images_wire_dir = work / ("curl-" + tag + "-images");
  print_against_floors("deps images", delay_ms, seconds, ours, ours_server_cpu, urls, images_wire_dir,
                       wire_of(server, urls, images_wire_dir, {.ca_file = ca, .headers = {kOciAccept}}));
}

// The real consumer's own way to fill a mirror: `terraform providers mirror` then `providers
// lock`, for the fixture's providers (first versions) and 4 platforms, against `deps tf --stack`
// of the same root. Skipped, saying why, where terraform is not installed.
void bench_terraform_peer(const fs::path& work, const nlohmann::json& fixture, const fs::path& ca) {
  const fs::path terraform = fs::exists("/usr/local/bin/terraform") ? "/usr/local/bin/terraform" : "";
  if (terraform.empty()) {
    std::printf("terraform peer: skipped, no terraform in /usr/local/bin\n");
    return;
  }
  Server server(work / kFixture, 50, work / "terraform-access.log");
  const fs::path tfrc = write_tfrc(work / "terraform.tfrc", server.base());
  auto write_root = [&](const fs::path& root) {
    fs::create_directories(root);
    std::ofstream out(root / "main.tf");
    out << "terraform {\n  required_providers {\n";
    for (const auto& provider : fixture["providers"]) {
      const std::string type = provider["type"];
      out << "    " << type << " = {\n      source  = \"" << provider["namespace"].get<std::string>() << "/" << type
          << "\"\n      version = \"" << provider["versions"][0]["version"].get<std::string>() << "\"\n    }\n";
    }
    out << "  }\n}\n";
  };
  std::vector<std::pair<std::string, std::string>> env{{"TF_CLI_CONFIG_FILE", tfrc.string()},
                                                       {"SSL_CERT_FILE", ca.string()},
                                                       {"CHECKPOINT_DISABLE", "1"},
                                                       {"PODPLANE_DEPS_CACHE_DIR", fresh(work / "deps-tf-terraform").string()}};
  const fs::path theirs = fresh(work / "terraform-root"), ours = fresh(work / "podplane-root");
  fresh(work / "terraform-mirror");
  write_root(theirs);
  write_root(ours);
  std::vector<std::string> mirror{terraform.string(), "-chdir=" + theirs.string(), "providers", "mirror"};
  std::vector<std::string> lock{terraform.string(), "-chdir=" + theirs.string(), "providers", "lock"};
  std::vector<std::string> deps{PODPLANE_BINARY, "--quiet", "deps", "tf", "--engine", "terraform", "--stack", ours.string(),
                                "--write-lock"};
  for (const auto& platform : kPlatforms) {
    mirror.push_back("-platform=" + platform);
    lock.push_back("-platform=" + platform);
    deps.insert(deps.end(), {"--platform", platform});
  }
  mirror.push_back((work / "terraform-mirror").string());
  auto start = Clock::now();
  const bool terraform_ok = run(mirror, env, (work / "terraform.log").string()).status == 0 &&
                            run(lock, env, (work / "terraform.log").string()).status == 0;
  const double terraform_s = since(start);
  start = Clock::now();
  const bool podplane_ok = run(deps, env, (work / "deps-tf-terraform.log").string()).status == 0;
  const double podplane_s = since(start);
  if (!terraform_ok || !podplane_ok) {
    std::printf("terraform peer: a run failed (terraform %s, podplane %s); see terraform.log and deps-tf-terraform.log\n",
                terraform_ok ? "ok" : "failed", podplane_ok ? "ok" : "failed");
    return;
  }
  std::ifstream a(theirs / ".terraform.lock.hcl"), b(ours / ".terraform.lock.hcl");
  const std::string their_lock((std::istreambuf_iterator<char>(a)), {}), our_lock((std::istreambuf_iterator<char>(b)), {});
  std::printf("terraform peer (50 ms/request): providers mirror + lock %.2f s, deps tf --stack --write-lock %.2f s: %.1fx "
              "(target >= 10x); locks %s\n",
              terraform_s, podplane_s, terraform_s / podplane_s, their_lock == our_lock ? "identical" : "DIFFER");
}

// "MIN-MAX" in MiB, or "0" for the fixture's small zips.
bool parse_mib_range(const std::string& text, long& min, long& max) {
  if (text == "0") {
    min = max = 0;
    return true;
  }
  const auto dash = text.find('-');
  if (dash == std::string::npos) return false;
  char* end = nullptr;
  min = std::strtol(text.c_str(), &end, 10);
  if (end != text.c_str() + dash) return false;
  max = std::strtol(text.c_str() + dash + 1, &end, 10);
  return *end == '\0' && min > 0 && min <= max;
}

// What the provider zips are: the range's ends and their sum, as built.
void print_fixture(const nlohmann::json& fixture, bool real_sized, double build_seconds) {
  std::uint64_t smallest = UINT64_MAX, largest = 0, total = 0;
  std::size_t zips = 0;
  for (const auto& provider : fixture["providers"]) {
    for (const auto& version : provider["versions"]) {
      for (const auto& [platform, pkg] : version["packages"].items()) {
        const auto size = pkg["size"].get<std::uint64_t>();
        smallest = std::min(smallest, size);
        largest = std::max(largest, size);
        total += size;
        ++zips;
      }
    }
  }
  const double unit = real_sized ? 1024.0 * 1024.0 : 1024.0;
  std::printf("fixture: %zu provider zips (%s), %.1f to %.1f %s, %.1f MiB in all; built in %.0f s\n", zips,
              real_sized ? "executables half incompressible, half compressible, deflated" : "stored pseudo-random bytes",
              static_cast<double>(smallest) / unit, static_cast<double>(largest) / unit, real_sized ? "MiB" : "KiB",
              static_cast<double>(total) / (1024.0 * 1024.0), build_seconds);
}

}  // namespace

int main(int argc, char** argv) {
  fs::path work;
  long big_mib = 100;
  long zip_mib_min = 10, zip_mib_max = 30;  // 0-0: the fixture's own 16 KiB zips
  long os_image_mib = 256;                  // 0: the fixture's own small os images
  bool memory = true, deps_tf = true, download = true;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--workdir" && i + 1 < argc) {
      work = argv[++i];
    } else if (arg == "--zip-mib" && i + 1 < argc && parse_mib_range(argv[i + 1], zip_mib_min, zip_mib_max)) {
      ++i;
    } else if (arg == "--os-image-mib" && i + 1 < argc) {
      os_image_mib = std::stol(argv[++i]);
    } else if (arg == "--big-mib" && i + 1 < argc) {
      big_mib = std::stol(argv[++i]);
    } else if (arg == "--skip-memory") {
      memory = false;
    } else if (arg == "--skip-deps-tf") {
      deps_tf = false;
    } else if (arg == "--skip-download") {
      download = false;
    } else {
      std::fprintf(stderr, "usage: deps_tf_bench [--workdir DIR] [--zip-mib MIN-MAX|0] [--os-image-mib N] [--big-mib N] "
                           "[--skip-memory] [--skip-deps-tf] [--skip-download]\n");
      return 2;
    }
  }
  if (work.empty()) {
    char pattern[] = "/tmp/deps-tf-bench-XXXXXX";
    if (mkdtemp(pattern) == nullptr) die("mkdtemp failed");
    work = pattern;
  }
  fs::create_directories(work);
  std::printf("deps_tf_bench: workdir %s, load average %.1f at the start\n", work.c_str(), load_average());

  // 1. Engine vs sequential curl, 50 ms added per request.
  std::vector<std::string> fixture_options{"--complete-platforms"};
  if (zip_mib_max > 0) {
    fixture_options.insert(fixture_options.end(), {"--zip-size-range", std::to_string(zip_mib_min << 20) + ":" +
                                                   std::to_string(zip_mib_max << 20), "--zip-compressible-half"});
  }
  if (download && os_image_mib > 0) fixture_options.insert(fixture_options.end(), {"--os-image-mib", std::to_string(os_image_mib)});
  const auto build_start = Clock::now();
  build(work / kFixture, fixture_options);
  const auto fixture = read_json(work / kFixture / "fixture.json");
  print_fixture(fixture, zip_mib_max > 0, since(build_start));
  const fs::path ca = work / kFixture / "tls" / "ca.pem";
  {
    Server server(work / kFixture, 50, work / "engine-access.log");
    auto items = first_versions(fixture, server.base());
    std::vector<std::string> urls;
    for (const auto& item : items) urls.push_back(item.url);
    const double engine = fetch_with_engine(items, ca, fresh(work / "deps-engine"));
    const double curl = curl_loop(urls, ca, work / "curl-engine");
    const double parallel = curl_parallel(urls, ca, work / "curl-parallel-engine").seconds;
    fs::remove_all(work / "curl-engine");
    fs::remove_all(work / "curl-parallel-engine");
    std::printf("engine:  %zu zips, Downloader --jobs 8 %.2f s, sequential curl %.2f s: %.1fx (target >= 4x); "
                "curl --parallel-max 8 %.2f s: %.2fx the wire\n",
                items.size(), engine, curl, curl / engine, parallel, engine / parallel);
  }

  // 2. The whole `podplane deps tf`, cold and warm, against curl over the URLs it fetched.
  if (deps_tf) {
    for (int delay_ms : {0, 50}) bench_deps_tf(work, ca, delay_ms);
    bench_terraform_peer(work, fixture, ca);
  }
  if (download) {
    for (int delay_ms : {0, 50}) bench_deps_download(work, ca, delay_ms);
  }

  // 3. Peak memory with big zips, in a child so its ru_maxrss is the fetch's alone.
  if (memory) {
    const fs::path big = work / "big";
    build(big, {"--only", "hashicorp/aws", "--zip-size", std::to_string(big_mib * 1024 * 1024)});
    const auto big_fixture = read_json(big / "fixture.json");
    Server server(big, 0, work / "big-access.log");
    auto items = first_versions(big_fixture, server.base());
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      fetch_with_engine(items, big / "tls" / "ca.pem", work / "deps-big");
      _exit(0);
    }
    rusage usage{};
    int status = 0;
    const auto start = Clock::now();
    wait4(pid, &status, 0, &usage);
    const double seconds = since(start);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("the big fetch failed");
    std::printf("memory:  %zu zips of %ld MiB in %.1f s, peak RSS %.1f MiB (target < 100 MiB)\n", items.size(), big_mib,
                seconds, static_cast<double>(usage.ru_maxrss) / 1024.0);
  }
  return 0;
}
