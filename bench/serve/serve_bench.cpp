// serve_bench: requests/s and latency of `podplane mirror serve` against Debian's nginx serving
// `podplane mirror export` of the same store, measured in the same run on loopback, plain HTTP
// and HTTPS. The peer runs as sites run it (a master process, `worker_processes auto`, sendfile,
// keep-alive, a shared TLS session cache, TLS 1.2 and 1.3 as docs/nginx/podplane-mirror.conf
// has it: Debian's nginx 1.22 alone would speak TLS 1.2, whose record path costs OpenSSL one
// copy less than TLS 1.3's, which mirror serve speaks) and the client is `wrk`, the standard HTTP load tool,
// with keep-alive connections (32 by default). Each server runs in a session of its own, as a
// service does (as_service below). Workloads: a network-mirror <version>.json (many
// small answers) and a 100 MiB provider zip. Prints req/s, MiB/s and wrk's p50/p99 latency per
// server and the podplane/nginx ratio; the goal (issue "speed of the wire") is >= 1.0x.
// mirror serve hashes each object once per process, beside its first download, so the first
// download of the zip is timed on its own (with libcurl, from freshly started servers,
// --first-runs times), then later ones from the same server (checked already; --later-runs
// alternated pairs after each first one), and the first is printed beside its floors: the sha256 CPU time of the object here and nginx's time for the
// same download. The wrk runs measure the steady state.
// Beside each row: the load average when it started (the machine is shared), the CPU seconds
// the server spent on it (nginx: master and workers) and that per request, in microseconds.
//   usage: serve_bench [--clients N] [--seconds N] [--zip-mib N] [--first-runs N] [--later-runs N] [--podplane PATH]
//                      [--only json|first] [--nginx-access-log-off]
// --podplane runs another podplane binary (e.g. a build of the previous commit) as the server.
// --only json measures the JSON rows alone: to compare two builds on the request path in a
// few minutes, before and after, several times over; --only first the first downloads alone.
// nginx logs each request to a file, as mirror serve does (to its stderr, a file here);
// --nginx-access-log-off measures it without.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

#include "base/digest.hpp"
#include "bench/support/process_cpu.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace ps = podplane::serve_test;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Result {
  double load_average = 0;  // 1-minute, when the row started
  double cpu_seconds = -1;  // the server's user + system time during the row
  double seconds = 0;
  std::size_t requests = 0;
  std::size_t errors = 0;
  std::uint64_t bytes = 0;
  double p50_ms = 0, p99_ms = 0;
};

double load_average() {
  double one = 0;
  std::ifstream("/proc/loadavg") >> one;
  return one;
}

// One request with libcurl: the first download, which for podplane includes the object's check.
// `server`'s CPU time during it (with its children: nginx's workers) goes in cpu_seconds.
Result fetch_once(const std::string& url, const std::optional<fs::path>& ca, pid_t server, bool with_children) {
  ps::CurlSession http;
  ps::HttpRequest request;
  request.ca_file = ca;
  Result result;
  result.load_average = load_average();
  const double cpu = podplane::bench::process_cpu_seconds(server, with_children);
  auto start = Clock::now();
  auto answer = http.fetch(url, request);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.cpu_seconds = podplane::bench::process_cpu_seconds(server, with_children) - cpu;
  result.requests = 1;
  result.errors = answer.status == 200 ? 0 : 1;
  result.bytes = answer.body.size();
  result.p50_ms = result.p99_ms = result.seconds * 1000;
  return result;
}

// wrk prints durations as 812.00us, 1.53ms or 2.01s.
double wrk_duration_ms(const std::string& text) {
  std::size_t end = 0;
  double value = std::stod(text, &end);
  std::string unit = text.substr(end);
  if (unit == "us") return value / 1000;
  if (unit == "s") return value * 1000;
  if (unit == "m") return value * 60000;
  return value;  // ms
}

// wrk prints sizes as 512.00B, 3.10KB, 1.43GB (powers of 1024).
std::uint64_t wrk_size_bytes(const std::string& text) {
  std::size_t end = 0;
  double value = std::stod(text, &end);
  const std::string unit = text.substr(end);
  const double scale = unit == "KB" ? 1024.0 : unit == "MB" ? 1048576.0 : unit == "GB" ? 1073741824.0 : unit == "TB" ? 1099511627776.0 : 1.0;
  return static_cast<std::uint64_t>(value * scale);
}

// `wrk --latency` against `url` with `clients` keep-alive connections for `seconds`.
Result load(const std::string& url, int clients, int seconds) {
  auto run = podplane::test::run({"wrk", "--threads", "2", "--connections", std::to_string(clients), "--duration",
                                  std::to_string(seconds) + "s", "--timeout", "30s", "--latency", url});
  if (run.exit_code != 0) {
    std::cerr << "wrk failed (exit " << run.exit_code << "):\n" << run.out << run.err;
    std::exit(1);
  }
  Result result;
  result.seconds = seconds;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first, second, third, fourth, fifth;
    words >> first >> second >> third >> fourth >> fifth;
    if (first == "50%") result.p50_ms = wrk_duration_ms(second);
    if (first == "99%") result.p99_ms = wrk_duration_ms(second);
    // "  120345 requests in 10.00s, 1.23GB read"
    if (second == "requests" && third == "in") {
      result.requests = std::stoull(first);
      result.seconds = wrk_duration_ms(fourth.substr(0, fourth.size() - 1)) / 1000;
      result.bytes = wrk_size_bytes(fifth);
    }
    // "  Non-2xx or 3xx responses: 12"
    if (first == "Non-2xx") result.errors += std::stoull(fifth);
    // "  Socket errors: connect 0, read 0, write 0, timeout 0"
    if (first == "Socket" && second == "errors:") result.errors += 1;
  }
  if (result.bytes == 0) {
    std::cerr << "cannot read wrk's output:\n" << run.out;
    std::exit(1);
  }
  return result;
}

// nginx logs every request to a file, as it does unless told otherwise and as mirror serve
// logs each to its stderr (a file here); `access_log` false turns that off.
std::string nginx_config(const fs::path& prefix, const fs::path& root, int port, int tls_port, const fs::path& tls,
                         bool access_log) {
  std::string p = prefix.string();
  // As root the master hands requests to workers running as `nobody`, who cannot read the
  // bench's private temp dir: they run as the bench's user instead, like mirror serve.
  const std::string user = ::geteuid() == 0 ? "user root;\n" : "";
  return "daemon off;\n" + user + "worker_processes auto;\npid " + p + "/nginx.pid;\nerror_log " + p +
         "/error.log warn;\nevents { worker_connections 1024; }\nhttp {\n  access_log " +
         (access_log ? p + "/access.log" : std::string("off")) + ";\n"
         "  client_body_temp_path " + p + "/tmp/body;\n  proxy_temp_path " + p + "/tmp/proxy;\n"
         "  fastcgi_temp_path " + p + "/tmp/fastcgi;\n  uwsgi_temp_path " + p + "/tmp/uwsgi;\n"
         "  scgi_temp_path " + p + "/tmp/scgi;\n"
         "  types { text/html html; application/json json; application/zip zip; application/gzip gz; }\n"
         "  default_type application/octet-stream;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_timeout 65;\n"
         "  keepalive_requests 100000;\n  ssl_session_cache shared:SSL:10m;\n"
         "  server {\n    listen 127.0.0.1:" + std::to_string(port) + ";\n"
         "    listen 127.0.0.1:" + std::to_string(tls_port) + " ssl;\n"
         "    ssl_protocols TLSv1.2 TLSv1.3;\n"
         "    ssl_certificate " + (tls / "cert.pem").string() + ";\n    ssl_certificate_key " + (tls / "key.pem").string() + ";\n"
         "    root " + root.string() + ";\n  }\n}\n";
}

struct Options {
  int clients = 32, seconds = 8, zip_mib = 100;
  int first_runs = 1;  // first downloads measured, each from freshly started servers
  int later_runs = 5;  // later downloads measured after each first one, alternating the servers
  std::string podplane = podplane::test::podplane_binary().string();
  bool json_only = false, first_only = false, nginx_access_log = true;
};

// The options, or nothing (after a message) when they are wrong.
std::optional<Options> parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--nginx-access-log-off") {
      o.nginx_access_log = false;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << flag << " needs a value\n";
      return std::nullopt;
    }
    const std::string value = argv[i + 1];
    if (flag == "--podplane") {
      o.podplane = value;
    } else if (flag == "--only") {
      if (value != "json" && value != "first") {
        std::cerr << "--only takes json or first\n";
        return std::nullopt;
      }
      o.json_only = value == "json";
      o.first_only = value == "first";
    } else if (flag == "--clients") {
      o.clients = std::stoi(value);
    } else if (flag == "--seconds") {
      o.seconds = std::stoi(value);
    } else if (flag == "--zip-mib") {
      o.zip_mib = std::stoi(value);
    } else if (flag == "--first-runs") {
      o.first_runs = std::max(1, std::stoi(value));
    } else if (flag == "--later-runs") {
      o.later_runs = std::max(1, std::stoi(value));
    } else {
      std::cerr << "unknown option " << flag << "\n";
      return std::nullopt;
    }
  }
  return o;
}

// The serve fixture's store in `deps` plus the big provider package: one zip of `zip_mib` MiB of
// incompressible bytes. Returns the zip's object file.
fs::path fill_bench_store(const fs::path& deps, const fs::path& work, int zip_mib) {
  ps::fill_store(deps, work);
  auto store = podplane::cache::Store::open(deps);
  fs::path zip = ps::make_provider_zip(work, "big", "1.0.0", "linux_amd64", static_cast<std::size_t>(zip_mib) * 1024 * 1024);
  podplane::cache::Artifact artifact;
  artifact.kind = podplane::cache::ArtifactKind::provider_package;
  artifact.address = "registry.opentofu.org/hashicorp/big";
  artifact.version = "1.0.0";
  artifact.platform = "linux_amd64";
  artifact.filename = zip.filename().string();
  artifact.digest = store.add_file(zip);
  artifact.size = static_cast<std::int64_t>(fs::file_size(zip));
  artifact.h1 = podplane::lockfile::h1_hash_of_zip(zip);
  artifact.zh = "zh:" + artifact.digest;
  artifact.trust = podplane::cache::Trust::unverified;
  store.add_artifact(artifact);
  fs::remove(zip);
  return deps / "store" / "objects" / "sha256" / artifact.digest.substr(0, 2) / artifact.digest.substr(2);
}

// The physical floor of the one-time check: the CPU time of one sha256 over `file` on this
// machine, read from the page cache in 1 MiB blocks as the server reads it (the least of 3).
double sha256_cpu_seconds(const fs::path& file) {
  double least = 1e9;
  std::vector<char> buffer(1 << 20);
  for (int round = 0; round < 3; ++round) {
    std::ifstream in(file, std::ios::binary);
    timespec before{}, after{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &before);
    podplane::Hasher hasher;
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
      hasher.update(buffer.data(), static_cast<std::size_t>(in.gcount()));
    (void)hasher.finish_hex();
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &after);
    least = std::min(least, static_cast<double>(after.tv_sec - before.tv_sec) + (after.tv_nsec - before.tv_nsec) / 1e9);
  }
  return least;
}

// A server's command line run in a session of its own (setsid(1), which keeps the pid: the child
// of a fork leads no process group), as a service runs apart from its clients. Linux schedules
// each session as one group (autogroup): in the bench's session, a server's threads would take
// their turns on the cores out of the same share as the client's, which on a machine busy with
// other work charges every server thread to the client's time.
std::vector<std::string> as_service(std::vector<std::string> argv) {
  argv.insert(argv.begin(), "setsid");
  return argv;
}

// A podplane mirror serve over plain HTTP and one over HTTPS, freshly started: no object checked yet.
struct PodplaneServers {
  std::unique_ptr<ps::Background> plain, tls;
  std::string plain_url, tls_url;
};

PodplaneServers start_podplane(const Options& o, const podplane::test::TempDir& temp, int generation) {
  std::map<std::string, std::string> env{{"PODPLANE_DEPS_CACHE_DIR", (temp / "deps").string()}};
  const std::string suffix = std::to_string(generation);
  PodplaneServers servers;
  servers.plain = std::make_unique<ps::Background>(
      as_service({o.podplane, "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"}), env,
      temp / ("plain" + suffix + ".log"));
  servers.tls = std::make_unique<ps::Background>(
      as_service({o.podplane, "mirror", "serve", "--listen", "127.0.0.1:0", "--tls-cert", (temp / "cert.pem").string(),
                  "--tls-key", (temp / "key.pem").string()}),
      env, temp / ("tls" + suffix + ".log"));
  servers.plain_url = servers.plain->first_line();
  servers.tls_url = servers.tls->first_line();
  if (servers.plain_url.empty() || servers.tls_url.empty()) {
    std::cerr << "mirror serve did not start\n";
    std::exit(1);
  }
  servers.plain_url.pop_back();
  servers.tls_url.pop_back();
  return servers;
}

struct Row {
  std::string workload, server;
  Result result;
};

// The first downloads of the zip, `o.first_runs` times, each from freshly started podplane
// servers (nginx has nothing to check: its later downloads are its first). The order of the
// two servers alternates from run to run. Leaves the last run's servers in `servers`.
void measure_first_downloads(const Options& o, const podplane::test::TempDir& temp, const std::string& zip_path,
                             const std::string& nginx_plain, const std::string& nginx_tls, pid_t nginx_pid,
                             PodplaneServers& servers, std::vector<Row>& rows) {
  const auto ca = std::optional<fs::path>(temp / "cert.pem");
  for (int run = 0; run < o.first_runs; ++run) {
    if (run > 0 || !servers.plain) servers = start_podplane(o, temp, run);
    // Each scheme's first download, then a later one (checked already: the same download
    // without the check, for comparison).
    for (bool https : {false, true}) {
      for (const char* which : {" first zip", " later zip"}) {
        const std::string label = std::string(https ? "https" : "http") + which;
        const auto verify = https ? ca : std::nullopt;
        Row ours{label, "podplane", {}}, theirs{label, "nginx", {}};
        auto ours_once = [&] {
          ours.result = fetch_once((https ? servers.tls_url : servers.plain_url) + zip_path, verify,
                                   (https ? servers.tls : servers.plain)->pid(), false);
        };
        auto theirs_once = [&] { theirs.result = fetch_once((https ? nginx_tls : nginx_plain) + zip_path, verify, nginx_pid, true); };
        // A first download happens once per server start; a later one can be repeated, and
        // one pair of single downloads moves by 10% and more with the scheduling of two cores.
        const int pairs = which == std::string(" first zip") ? 1 : o.later_runs;
        for (int pair = 0; pair < pairs; ++pair) {
          if ((run + pair) % 2 == 0) {
            ours_once();
            theirs_once();
          } else {
            theirs_once();
            ours_once();
          }
          rows.push_back(ours);
          rows.push_back(theirs);
        }
      }
    }
  }
}

void print_rows(const Options& o, const std::vector<Row>& rows) {
  std::printf("wrk: %d connections, %d s per row; nginx: worker_processes auto, sendfile, keep-alive, access log %s\n", o.clients,
              o.seconds, o.nginx_access_log ? "to a file (mirror serve's goes to a file too)" : "off");
  std::printf("%-20s %-9s %9s %10s %9s %9s %7s %7s %6s %6s %8s\n", "workload", "server", "requests", "req/s", "p50 ms",
              "p99 ms", "MiB/s", "errors", "load", "cpu s", "cpu us/r");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i].result;
    // CPU per request moves less with the other load on the machine than the rate does.
    const double cpu_per_request = r.cpu_seconds >= 0 && r.requests > 0 ? r.cpu_seconds / static_cast<double>(r.requests) * 1e6 : -1;
    std::printf("%-20s %-9s %9zu %10.1f %9.2f %9.2f %7.1f %7zu %6.2f %6.2f %8.1f\n", rows[i].workload.c_str(),
                rows[i].server.c_str(), r.requests, r.requests / r.seconds, r.p50_ms, r.p99_ms,
                r.bytes / r.seconds / 1048576.0, r.errors, r.load_average, r.cpu_seconds, cpu_per_request);
    if (i % 2 == 1) {
      const auto& ours = rows[i - 1].result;
      // Requests per second for small answers (wrk's bytes include the headers, which differ);
      // bytes per second for large answers, of which a connection may be in the middle when
      // wrk stops. A first download is one request: its time.
      const bool by_bytes = rows[i].workload.ends_with(" MiB");
      const double ratio = by_bytes ? (ours.bytes / ours.seconds) / (r.bytes / r.seconds)
                                    : (ours.requests / ours.seconds) / (r.requests / r.seconds);
      std::printf("%-20s podplane/nginx %s: %.2f× (target >= 1.0×)\n", rows[i].workload.c_str(),
                  by_bytes ? "bytes/s" : "requests/s", ratio);
    }
  }
}

// The median ratio of the single downloads per scheme; for the first ones, beside the floors:
// the sha256 CPU time of the object here and nginx's time for the same download (the wire:
// sendfile, or TLS from the page cache, and the client).
void print_single_download_summary(const std::vector<Row>& rows, double hash_seconds, int zip_mib) {
  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  };
  for (const std::string scheme : {"http", "https"}) {
    for (const std::string which : {" first zip", " later zip"}) {
      std::vector<double> ratios, ours_ms, theirs_ms, ours_cpu_ms, theirs_cpu_ms;
      for (std::size_t i = 1; i < rows.size(); i += 2) {
        if (rows[i].workload != scheme + which) continue;
        ours_ms.push_back(rows[i - 1].result.seconds * 1000);
        theirs_ms.push_back(rows[i].result.seconds * 1000);
        ours_cpu_ms.push_back(rows[i - 1].result.cpu_seconds * 1000);
        theirs_cpu_ms.push_back(rows[i].result.cpu_seconds * 1000);
        ratios.push_back(rows[i].result.seconds / rows[i - 1].result.seconds);
      }
      if (ratios.empty()) continue;
      // The servers' CPU per download beside the times: where the ratio moves while the CPU
      // does not, the difference is in the scheduling of the shared cores, not in the server.
      std::printf("%s (%d MiB), %zu runs: podplane median %.1f ms, nginx median %.1f ms, podplane/nginx median %.2f× "
                  "(min %.2f×, max %.2f×; target >= 1.0×); server CPU a download: podplane %.0f ms, nginx %.0f ms "
                  "(medians, clock ticks of 10 ms)\n",
                  (scheme + which).c_str(), zip_mib, ratios.size(), median(ours_ms), median(theirs_ms), median(ratios),
                  *std::min_element(ratios.begin(), ratios.end()), *std::max_element(ratios.begin(), ratios.end()),
                  median(ours_cpu_ms), median(theirs_cpu_ms));
      if (which != " first zip") continue;
      const double wire = median(theirs_ms), hash = hash_seconds * 1000;
      std::printf("%s first zip floors: sha256 %.1f ms CPU (%.0f MiB/s), wire (nginx) %.1f ms; hash then send %.1f ms "
                  "(%.2f× nginx), hash beside the send %.1f ms (%.2f×)\n",
                  scheme.c_str(), hash, zip_mib / hash_seconds, wire, hash + wire, wire / (hash + wire),
                  std::max(hash, wire), wire / std::max(hash, wire));
    }
  }
}

int main(int argc, char** argv) {
  auto parsed = parse_options(argc, argv);
  if (!parsed) return 2;
  const Options& o = *parsed;
  if (podplane::test::run({"wrk", "--version"}).out.find("wrk") == std::string::npos) {
    std::cerr << "serve_bench needs wrk (apt-get install wrk; scripts/setup installs it)\n";
    return 1;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  podplane::test::TempDir temp;
  std::cerr << "serve_bench: filling a store in " << temp.path() << "\n";
  const fs::path zip_object = fill_bench_store(temp / "deps", temp / "work", o.zip_mib);
  podplane::test::write_test_tls(temp.path());
  podplane::test::ProcessOptions export_options;
  export_options.env["PODPLANE_DEPS_CACHE_DIR"] = (temp / "deps").string();
  auto exported = podplane::test::run_podplane({"mirror", "export", (temp / "export").string()}, export_options);
  if (exported.exit_code != 0) {
    std::cerr << exported.err;
    return 1;
  }

  fs::path prefix = temp / "nginx";
  fs::create_directories(prefix / "tmp");
  int port = ps::free_port(), tls_port = ps::free_port();
  podplane::test::write_file(prefix / "nginx.conf", nginx_config(prefix, temp / "export", port, tls_port, temp.path(), o.nginx_access_log));
  ps::Background nginx(as_service({fs::exists("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx", "-e",
                                   (prefix / "error.log").string(), "-p", prefix.string(), "-c", (prefix / "nginx.conf").string()}),
                       {}, prefix / "stderr.log");
  if (!ps::wait_for_port(port) || !ps::wait_for_port(tls_port)) {
    std::cerr << "nginx did not start\n";
    return 1;
  }
  const std::string nginx_plain = "http://127.0.0.1:" + std::to_string(port);
  const std::string nginx_tls = "https://127.0.0.1:" + std::to_string(tls_port);

  const std::string json_path = "/v1/mirror/registry.opentofu.org/hashicorp/null/3.2.4.json";
  const std::string zip_path = "/v1/mirror/registry.opentofu.org/hashicorp/big/terraform-provider-big_1.0.0_linux_amd64.zip";
  std::vector<Row> rows;
  PodplaneServers servers;
  if (!o.json_only) measure_first_downloads(o, temp, zip_path, nginx_plain, nginx_tls, nginx.pid(), servers, rows);
  if (!servers.plain) servers = start_podplane(o, temp, 0);
  // A wrk run with the load average before it and the CPU time its server spent.
  auto measured = [&](const std::string& url, pid_t server, bool with_children, int seconds_now) {
    double load_before = load_average();
    double cpu = podplane::bench::process_cpu_seconds(server, with_children);
    Result result = load(url, o.clients, seconds_now);
    result.cpu_seconds = podplane::bench::process_cpu_seconds(server, with_children) - cpu;
    result.load_average = load_before;
    return result;
  };
  for (const auto& [scheme, ours, theirs, our_pid] :
       std::vector<std::tuple<std::string, std::string, std::string, pid_t>>{
           {"http", servers.plain_url, nginx_plain, servers.plain->pid()},
           {"https", servers.tls_url, nginx_tls, servers.tls->pid()}}) {
    if (o.first_only) break;
    load(ours + json_path, 2, 1);  // warm-up: page cache, TLS session setup paths
    load(theirs + json_path, 2, 1);
    rows.push_back({scheme + " JSON", "podplane", measured(ours + json_path, our_pid, false, o.seconds)});
    rows.push_back({scheme + " JSON", "nginx", measured(theirs + json_path, nginx.pid(), true, o.seconds)});
    if (o.json_only) continue;
    const std::string zip_label = scheme + " zip " + std::to_string(o.zip_mib) + " MiB";
    // Long enough for every connection to finish several zips; compared by bytes moved.
    const int zip_seconds = std::max(o.seconds, 20);
    rows.push_back({zip_label, "podplane", measured(ours + zip_path, our_pid, false, zip_seconds)});
    rows.push_back({zip_label, "nginx", measured(theirs + zip_path, nginx.pid(), true, zip_seconds)});
  }
  print_rows(o, rows);
  if (!o.json_only) print_single_download_summary(rows, sha256_cpu_seconds(zip_object), o.zip_mib);
  return 0;
}
