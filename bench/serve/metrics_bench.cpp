// metrics_bench: what the /metrics counters add to each request of `mirror serve`, in
// nanoseconds, measured in-process so that the other load on a shared machine moves it little
// (serve_bench's rates move by far more than the few percent in question). Per request the
// server does: the route of the path, two clock reads, and ServeMetrics::record (relaxed
// atomic adds into the thread's shard). Run on 1 thread and on as many threads as event
// loops at once (the hot path of small answers), and compare with serve_bench's CPU
// microseconds per JSON request.
//   usage: metrics_bench [--requests N] [--threads N]
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "mirror/serve_metrics.hpp"

namespace pm = podplane::mirror;
using Clock = std::chrono::steady_clock;

namespace {

// What the server does per request for the counters, `requests` times; returns ns per request.
double run(pm::ServeMetrics& metrics, std::size_t threads, std::size_t requests) {
  const std::string path = "/v1/mirror/registry.opentofu.org/hashicorp/null/3.2.4.json";
  auto start = Clock::now();
  std::vector<std::thread> running;
  for (std::size_t t = 0; t < threads; ++t)
    running.emplace_back([&] {
      for (std::size_t i = 0; i < requests; ++i) {
        pm::RequestSample sample{pm::route_of(path), 200, Clock::now()};
        metrics.record(sample, 1234, Clock::now());
      }
    });
  for (auto& thread : running) thread.join();
  auto elapsed = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  return elapsed / static_cast<double>(requests);  // wall time per request of one thread
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t requests = 20'000'000, threads = std::min(4u, std::max(2u, std::thread::hardware_concurrency()));
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--requests") requests = std::stoul(argv[i + 1]);
    else if (flag == "--threads") threads = std::stoul(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  pm::ServeMetrics metrics;
  (void)run(metrics, 1, requests / 10);  // warm-up
  std::printf("counters per request, 1 thread:  %6.1f ns\n", run(metrics, 1, requests));
  std::printf("counters per request, %zu threads: %6.1f ns (wall time of each thread's loop)\n", threads,
              run(metrics, threads, requests));
  return 0;
}
