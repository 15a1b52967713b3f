// K simulated VM boots through HAProxy in front of 1 and then 2 `mirror serve` replicas, each on
// a store of its own (docs/operations.md "Replicas"). A boot fetches what a VM fetches at boot:
// its vmconfig manifest, then its artifacts (the fixture's: one of --artifact-mib), each checked
// against its digest. --concurrency boots run at once; each boot's time is measured from its
// first request to its last byte. Printed: boots per second, p50 and p99 of a boot, failures,
// and beside them the wire: the same GETs by `curl --parallel` straight from one replica.
//
//   build/bench/fleet/fleet_bench [--boots K] [--concurrency C] [--artifact-mib M]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "bench/support/curl_parallel.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::bench {
namespace {

namespace fs = std::filesystem;
using podplane::serve_test::Background;
using podplane::serve_test::CurlSession;
using podplane::serve_test::HttpRequest;

struct Options {
  int boots = 400;
  int concurrency = 32;
  int artifact_mib = 8;
};

struct Figures {
  double seconds = 0;
  std::vector<double> boot_seconds;
  int failures = 0;
  std::uint64_t bytes = 0;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<std::size_t>(p * static_cast<double>(values.size())))];
}

// The replicas' HAProxy: docs/haproxy/podplane-mirror.cfg with this run's values.
std::unique_ptr<Background> start_haproxy(const fs::path& dir, const podplane::test::TestTls& tls, int port,
                                          const std::vector<int>& replicas) {
  std::string config = podplane::test::read_file(podplane::test::source_dir() / "docs" / "haproxy" / "podplane-mirror.cfg");
  auto replace = [&](const std::string& from, const std::string& to) {
    auto at = config.find(from);
    if (at == std::string::npos) throw std::runtime_error("not in the HAProxy config: " + from);
    config.replace(at, from.size(), to);
  };
  podplane::test::write_file(dir / "haproxy.pem", podplane::test::read_file(tls.cert) + podplane::test::read_file(tls.key));
  podplane::test::write_file(dir / "generation.map", "");
  replace("bind :8443 ssl crt /etc/haproxy/podplane-mirror.pem", "bind 127.0.0.1:" + std::to_string(port) + " ssl crt " + (dir / "haproxy.pem").string());
  replace("/run/haproxy/podplane-admin.sock", (dir / "admin.sock").string());
  replace("/etc/haproxy/podplane-generation.map", (dir / "generation.map").string());
  replace("ca-file /etc/podplane/site-ca.crt", "ca-file " + tls.cert.string());
  replace("log stdout format raw local0", "log stdout format raw local0 err");  // no line per request
  std::string servers;
  for (std::size_t i = 0; i < replicas.size(); ++i)
    servers += "  server replica" + std::to_string(i + 1) + " 127.0.0.1:" + std::to_string(replicas[i]) + "\n";
  replace("  server replica1 10.0.0.11:8443\n  server replica2 10.0.0.12:8443\n", servers);
  podplane::test::write_file(dir / "haproxy.cfg", config);
  auto process = std::make_unique<Background>(std::vector<std::string>{"/usr/sbin/haproxy", "-db", "-f", (dir / "haproxy.cfg").string()},
                                              std::map<std::string, std::string>{}, dir / "haproxy.err");
  if (!podplane::serve_test::wait_for_port(port)) throw std::runtime_error("haproxy did not start: " + podplane::test::read_file(dir / "haproxy.err"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the first health checks
  return process;
}

Figures run_boots(const std::string& base, const std::vector<std::pair<std::string, std::string>>& boot, const Options& options,
                  const fs::path& ca) {
  Figures figures;
  figures.boot_seconds.resize(static_cast<std::size_t>(options.boots));
  std::atomic<int> next{0}, failures{0};
  std::atomic<std::uint64_t> bytes{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < options.concurrency; ++t) {
    threads.emplace_back([&] {
      CurlSession http;
      HttpRequest request;
      request.ca_file = ca;
      for (int k; (k = next.fetch_add(1)) < options.boots;) {
        auto began = std::chrono::steady_clock::now();
        bool ok = true;
        for (const auto& [path, digest] : boot) {
          auto answer = http.fetch(base + path, request);
          bytes += answer.body.size();
          ok = ok && answer.status == 200 && sha256_hex(answer.body) == digest;
        }
        if (!ok) ++failures;
        figures.boot_seconds[static_cast<std::size_t>(k)] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  figures.failures = failures;
  figures.bytes = bytes;
  return figures;
}

void print(const char* label, const Figures& f, const Options& options, double wire_seconds) {
  std::printf("%-24s %7.1f boots/s  p50 %7.1f ms  p99 %7.1f ms  %6.0f MiB/s  failures %d  wire %.2f s (%.2fx)\n", label,
              options.boots / f.seconds, 1000 * percentile(f.boot_seconds, 0.5), 1000 * percentile(f.boot_seconds, 0.99),
              static_cast<double>(f.bytes) / f.seconds / (1 << 20), f.failures, wire_seconds, f.seconds / wire_seconds);
}

int run(const Options& options) {
  podplane::test::TempDir temp;
  auto tls = podplane::test::write_test_tls(temp / "tls");
  auto contents = podplane::serve_test::fill_store(temp / "replica1", temp / "work1", 4096,
                                                   static_cast<std::size_t>(options.artifact_mib) << 20);
  fs::copy(temp / "replica1", temp / "replica2", fs::copy_options::recursive);  // the same store, another copy
  const std::string manifest = "/vmconfig/manifests/" + contents.manifest_name;
  const std::vector<std::pair<std::string, std::string>> boot{{manifest, sha256_hex(contents.manifest_text)},
                                                              {contents.artifact_path, sha256_hex(contents.artifact_bytes)}};
  std::vector<std::unique_ptr<podplane::serve_test::MirrorServe>> replicas;
  std::vector<int> ports;
  for (int i = 1; i <= 2; ++i) {
    ports.push_back(podplane::serve_test::free_port());
    replicas.push_back(std::make_unique<podplane::serve_test::MirrorServe>(
        temp / ("replica" + std::to_string(i)),
        std::vector<std::string>{"--listen", "127.0.0.1:" + std::to_string(ports.back()), "--tls-cert", tls.cert.string(), "--tls-key",
                                 tls.key.string(), "--access-log", "json"},
        temp / ("replica" + std::to_string(i) + ".err")));
    if (!replicas.back()->started()) throw std::runtime_error(replicas.back()->log());
  }

  // The wire: the same GETs, `curl --parallel` straight from replica 1.
  std::vector<std::string> urls;
  for (int k = 0; k < options.boots; ++k)
    for (const auto& item : boot) urls.push_back("https://127.0.0.1:" + std::to_string(ports[0]) + item.first);
  auto wire = curl_parallel(urls, temp / "wire", {tls.cert, {}});
  fs::remove_all(temp / "wire");

  std::printf("fleet_bench: %d boots (manifest + %d MiB artifact each), %d at once, TLS, loopback, %u cores\n", options.boots,
              options.artifact_mib, options.concurrency, std::thread::hardware_concurrency());
  for (std::size_t count : {1u, 2u}) {
    fs::path dir = temp / ("haproxy" + std::to_string(count));
    fs::create_directories(dir);
    int port = podplane::serve_test::free_port();
    auto haproxy = start_haproxy(dir, tls, port, std::vector<int>(ports.begin(), ports.begin() + static_cast<long>(count)));
    auto figures = run_boots("https://127.0.0.1:" + std::to_string(port), boot, options, tls.cert);
    print(count == 1 ? "HAProxy + 1 replica" : "HAProxy + 2 replicas", figures, options, wire.seconds);
  }
  auto direct = run_boots("https://127.0.0.1:" + std::to_string(ports[0]), boot, options, tls.cert);
  print("1 replica, no HAProxy", direct, options, wire.seconds);
  return 0;
}

}  // namespace
}  // namespace podplane::bench

int main(int argc, char** argv) {
  podplane::bench::Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--boots") options.boots = value;
    else if (flag == "--concurrency") options.concurrency = value;
    else if (flag == "--artifact-mib") options.artifact_mib = value;
    else {
      std::cerr << "usage: fleet_bench [--boots K] [--concurrency C] [--artifact-mib M]\n";
      return 2;
    }
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  try {
    return podplane::bench::run(options);
  } catch (const std::exception& error) {
    std::cerr << "fleet_bench: " << error.what() << "\n";
    return 1;
  }
}
