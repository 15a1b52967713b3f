#pragma once
// The physical floors of a fill, printed beside its ratio to the wire: no fill can be faster
// than fetching its bytes (the wire: `curl --parallel` of the same GETs, measured by the
// caller) nor than hashing them, which it must do to check and record them. The hash floor is
// the CPU time of exactly that hashing, done here with the project's own digest code over the
// files the wire fetched: sha256 of every file, plus the h1 (dirhash) of the contents of every
// provider zip, as a lock records it. Run on one thread and divided by the cores, it is the
// time the hashing would take spread perfectly over the machine. Header-only.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/digest.hpp"
#include "lockfile/hash.hpp"

namespace podplane::bench {

struct HashFloor {
  double cpu_seconds = 0;  // one thread, every file (including reading it from the page cache)
  unsigned cores = 1;
  std::uint64_t bytes = 0;
  std::size_t zips = 0;
  double seconds() const { return cpu_seconds / cores; }
};

inline double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

struct FetchedFile {
  std::filesystem::path path;
  bool provider_zip = false;  // its h1 is part of the work too
};

inline HashFloor hash_floor(const std::vector<FetchedFile>& files) {
  HashFloor floor;
  floor.cores = std::max(1u, std::thread::hardware_concurrency());
  const double start = thread_cpu_seconds();
  for (const auto& file : files) {
    floor.bytes += std::filesystem::file_size(file.path);
    (void)file_digest_hex(file.path);
    if (file.provider_zip) {
      (void)lockfile::h1_hash_of_zip(file.path);
      ++floor.zips;
    }
  }
  floor.cpu_seconds = thread_cpu_seconds() - start;
  return floor;
}

// One line: ours against the larger of the two floors.
inline void print_floors(const std::string& what, int delay_ms, double ours_seconds, double ours_cpu_seconds,
                         double wire_seconds, const HashFloor& hash) {
  const double larger = std::max(wire_seconds, hash.seconds());
  std::printf("%s (%2d ms/request): floors: wire %.3f s, hash %.3f s (CPU %.3f s for %.1f MiB, %zu h1 of zips, / %u cores), "
              "larger %.3f s; ours %.2f s (CPU %.2f s = %.2fx the hash CPU): %.2fx the floor (target <= 1.5x)\n",
              what.c_str(), delay_ms, wire_seconds, hash.seconds(), hash.cpu_seconds,
              static_cast<double>(hash.bytes) / (1024.0 * 1024.0), hash.zips, hash.cores, larger, ours_seconds,
              ours_cpu_seconds, hash.cpu_seconds > 0 ? ours_cpu_seconds / hash.cpu_seconds : 0.0,
              ours_seconds / larger);
}

}  // namespace podplane::bench
