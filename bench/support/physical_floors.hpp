#pragma once
// The physical floors of a fill, printed beside its ratio to the wire: no fill can be faster
// than fetching its bytes (the wire: `curl --parallel` of the same GETs, measured by the
// caller) nor than hashing them, which it must do to check and record them. The hash floor is
// the CPU time of exactly that hashing, done here with the project's own digest code over the
// files the wire fetched: sha256 of every file (what the store names it by), plus the h1
// (dirhash) of the contents of every provider zip, as a lock records it, plus the digest of
// every file its upstream names by another algorithm (a vmconfig item's or a seed's sha512).
// Run on one thread and divided by the cores, it is the time the hashing would take spread
// perfectly over the machine.
// On loopback the fixture server runs on the same cores as the fill, so a fill that is bound by
// CPU has a third floor, the shared cores: the hashing, plus receiving the bytes (what `curl
// --parallel` spent on the same GETs) plus sending them (what the server spent while curl
// fetched), all that CPU spread over the cores. It is printed on a line of its own, beside the
// target's ratio, which stays the one to the larger of the wire and the hash floors.
// Header-only.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <optional>
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
  std::size_t other_digests = 0;  // files hashed a second time, with their upstream's algorithm
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
  // The algorithm its upstream names it by, when not sha256 (sha512): that digest is too.
  std::optional<DigestAlgorithm> upstream_algorithm = std::nullopt;
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
    if (file.upstream_algorithm) {
      (void)file_digest_hex(file.path, *file.upstream_algorithm);
      ++floor.other_digests;
    }
  }
  floor.cpu_seconds = thread_cpu_seconds() - start;
  return floor;
}

// The CPU the peer's run took beside the hashing: its client's (curl) and its server's, and the
// server's during our run (which shows whether we made the server work harder).
struct SharedCores {
  double wire_client_cpu = 0;
  double wire_server_cpu = 0;
  double ours_server_cpu = 0;
};

// One line: ours against the larger of the two floors; a second one against the shared cores
// when the servers' CPU is known.
inline void print_floors(const std::string& what, int delay_ms, double ours_seconds, double ours_cpu_seconds,
                         double wire_seconds, const HashFloor& hash, const std::optional<SharedCores>& cores = std::nullopt) {
  const double larger = std::max(wire_seconds, hash.seconds());
  std::printf("%s (%2d ms/request): floors: wire %.3f s, hash %.3f s (CPU %.3f s for %.1f MiB, %zu h1 of zips, "
              "%zu sha512 of items, / %u cores), larger %.3f s; ours %.2f s (CPU %.2f s = %.2fx the hash CPU): %.2fx the "
              "floor (target <= 1.5x)\n",
              what.c_str(), delay_ms, wire_seconds, hash.seconds(), hash.cpu_seconds,
              static_cast<double>(hash.bytes) / (1024.0 * 1024.0), hash.zips, hash.other_digests, hash.cores, larger, ours_seconds,
              ours_cpu_seconds, hash.cpu_seconds > 0 ? ours_cpu_seconds / hash.cpu_seconds : 0.0,
              ours_seconds / larger);
  if (!cores) return;
  const double needed = hash.cpu_seconds + cores->wire_client_cpu + cores->wire_server_cpu;
  const double floor = std::max(wire_seconds, needed / hash.cores);
  std::printf("%s (%2d ms/request): shared cores: hash CPU %.3f s + curl's CPU %.3f s + the server's CPU while curl fetched %.3f s "
              "(%.3f s while we did) = %.3f s / %u cores = %.3f s; ours %.2f s: %.2fx the larger of it and the wire\n",
              what.c_str(), delay_ms, hash.cpu_seconds, cores->wire_client_cpu, cores->wire_server_cpu, cores->ours_server_cpu,
              needed, hash.cores, needed / hash.cores, ours_seconds, ours_seconds / floor);
}

}  // namespace podplane::bench
