// bundle_bench [WORKDIR] [SIZE_MIB]: measures, in one run and against peers on the same data,
//   create:  `podplane bundle create`  vs `tar -cf` over the same object files  (target >= 0.8x)
//   import:  `podplane bundle import`  vs `sha256sum` over the same bundle bytes (target >= 0.7x)
//   delta:   bytes of a delta after one provider upgrade vs its new objects (<= 1.02x + 64 KiB)
//   memory:  peak RSS (ru_maxrss of the child) of create and import          (< 64 MiB)
// Run by hand (not by ctest); docs/bundle-format.md records the numbers.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench/support/measured_run.hpp"
#include "cache/layout.hpp"
#include "cache/store.hpp"

namespace fs = std::filesystem;
using podplane::cache::Artifact;
using podplane::cache::ArtifactKind;
using podplane::cache::Store;

namespace {

using Child = podplane::bench::MeasuredRun;

Child run(const std::vector<std::string>& argv, const fs::path& deps_root) {
  return podplane::bench::run_measured(argv, {{"PODPLANE_DEPS_CACHE_DIR", deps_root.string()}});
}

std::string add_random_object(Store& store, std::mt19937_64& random, std::size_t size) {
  auto writer = store.new_object();
  std::vector<std::uint64_t> block(1 << 17);  // 1 MiB
  std::size_t left = size;
  while (left > 0) {
    for (auto& word : block) word = random();
    std::size_t n = std::min(left, block.size() * sizeof(std::uint64_t));
    writer.write(block.data(), n);
    left -= n;
  }
  return writer.commit();
}

void add_release(Store& store, std::mt19937_64& random, const std::string& type, const std::string& version,
                 std::size_t zip_bytes, std::uint64_t& added) {
  const std::string address = "registry.opentofu.org/bench/" + type;
  const std::string base = "terraform-provider-" + type + "_" + version;
  std::string sums;
  for (const char* platform : {"linux_amd64", "linux_arm64", "darwin_arm64"}) {
    Artifact a;
    a.kind = ArtifactKind::provider_package;
    a.address = address;
    a.version = version;
    a.platform = platform;
    a.filename = base + "_" + platform + ".zip";
    a.digest = add_random_object(store, random, zip_bytes);
    a.added_at = "2026-11-01T00:00:00Z";
    store.add_artifact(a);
    sums += a.digest + "  " + a.filename + "\n";
    added += zip_bytes;
  }
  Artifact s;
  s.kind = ArtifactKind::provider_shasums;
  s.address = address;
  s.version = version;
  s.filename = base + "_SHA256SUMS";
  s.digest = store.add_bytes(sums);
  s.added_at = "2026-11-01T00:00:00Z";
  store.add_artifact(s);
  added += sums.size();
}

void drop_into_cache(const fs::path& dir) {
  // Read everything once so that both sides of a comparison start from a warm page cache.
  std::string command = "cat $(find '" + dir.string() + "' -type f) > /dev/null";
  if (std::system(command.c_str()) != 0) std::fprintf(stderr, "warming the cache failed\n");
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  const char* tmp = std::getenv("TMPDIR");
  fs::path base = argc > 1 ? fs::path(argv[1]) : fs::path(tmp && *tmp ? tmp : "/tmp");
  const std::size_t total_mib = argc > 2 ? std::stoul(argv[2]) : 1100;
  fs::path work = base / ("podplane-bundle-bench-" + std::to_string(getpid()));
  fs::create_directories(work);
  const std::string podplane = PODPLANE_BINARY;
  const fs::path online = work / "online", offline = work / "offline";

  std::printf("bundle_bench: work dir %s, store of %zu MiB\n", work.c_str(), total_mib);
  std::mt19937_64 random(42);
  std::uint64_t store_bytes = 0;
  {
    auto store = Store::open(online);
    const std::size_t zip = 32u << 20;
    const std::size_t releases = (total_mib + 95) / 96;  // 3 zips of 32 MiB each
    for (std::size_t r = 0; r < releases; ++r)
      add_release(store, random, "p" + std::to_string(r), "1.0.0", zip, store_bytes);
  }
  std::printf("store: %.1f MiB of objects\n", mib(store_bytes));
  run({podplane, "bundle", "keygen", (work / "site").string()}, online);
  const fs::path objects = podplane::cache::layout::objects_dir(online);
  drop_into_cache(objects);

  // create vs tar -cf: best of two each, interleaved, outputs removed in between.
  double create_best = 1e9, tar_best = 1e9, tar_sync_best = 1e9;
  long create_rss = 0;
  for (int round = 0; round < 2; ++round) {
    fs::remove(work / "full.bundle");
    auto c = run({podplane, "bundle", "create", (work / "full.bundle").string(), "--sign", (work / "site.key").string()}, online);
    create_best = std::min(create_best, c.seconds);
    create_rss = std::max(create_rss, c.max_rss_kib);
    fs::remove(work / "objects.tar");
    auto t = run({"tar", "-cf", (work / "objects.tar").string(), "-C", objects.string(), "."}, online);
    tar_best = std::min(tar_best, t.seconds);
    // The same with the durability create gives (its volumes are fsynced before the rename).
    fs::remove(work / "objects.tar");
    auto ts = run({"sh", "-c", "tar -cf \"$0\" -C \"$1\" . && sync \"$0\"", (work / "objects.tar").string(), objects.string()},
                  online);
    tar_sync_best = std::min(tar_sync_best, ts.seconds);
  }
  fs::remove(work / "objects.tar");
  const double bundle_bytes = static_cast<double>(fs::file_size(work / "full.bundle"));

  // import vs sha256sum of the same bundle bytes.
  drop_into_cache(work / "full.bundle");
  auto sum = run({"sha256sum", (work / "full.bundle").string()}, online);
  auto imp = run({podplane, "bundle", "import", (work / "full.bundle").string(), "--trust", (work / "site.pub").string()}, offline);
  auto sum2 = run({"sha256sum", (work / "full.bundle").string()}, online);
  const double sum_best = std::min(sum.seconds, sum2.seconds);

  // delta after one provider upgrade.
  std::uint64_t new_bytes = 0;
  {
    auto store = Store::open(online);
    add_release(store, random, "p0", "1.1.0", 32u << 20, new_bytes);
  }
  run({podplane, "bundle", "inventory", "-o", (work / "inventory.json").string()}, offline);
  run({podplane, "bundle", "create", (work / "delta.bundle").string(), "--since", (work / "inventory.json").string(), "--sign",
       (work / "site.key").string()},
      online);
  const double delta_bytes = static_cast<double>(fs::file_size(work / "delta.bundle"));
  const double delta_limit = static_cast<double>(new_bytes) * 1.02 + 64 * 1024;

  const double create_ratio = tar_best / create_best;
  const double import_ratio = sum_best / imp.seconds;
  std::printf("create: %.2f s (%.0f MiB/s) vs tar -cf %.2f s (%.0f MiB/s): ratio %.2f (target >= 0.80) %s\n", create_best,
              mib(bundle_bytes) / create_best, tar_best, mib(bundle_bytes) / tar_best, create_ratio,
              create_ratio >= 0.8 ? "OK" : "MISSED");
  std::printf("create vs tar -cf + sync of the tar (same durability): %.2f s, ratio %.2f\n", tar_sync_best,
              tar_sync_best / create_best);
  std::printf("import: %.2f s (%.0f MiB/s) vs sha256sum %.2f s (%.0f MiB/s): ratio %.2f (target >= 0.70) %s\n", imp.seconds,
              mib(bundle_bytes) / imp.seconds, sum_best, mib(bundle_bytes) / sum_best, import_ratio,
              import_ratio >= 0.7 ? "OK" : "MISSED");
  std::printf("delta: %.0f bytes for %llu new bytes: %.4fx (limit 1.02x + 64 KiB = %.0f) %s\n", delta_bytes,
              static_cast<unsigned long long>(new_bytes), delta_bytes / static_cast<double>(new_bytes), delta_limit,
              delta_bytes <= delta_limit ? "OK" : "MISSED");
  std::printf("peak RSS: create %.1f MiB, import %.1f MiB (target < 64 MiB) %s\n", create_rss / 1024.0,
              imp.max_rss_kib / 1024.0, create_rss < 65536 && imp.max_rss_kib < 65536 ? "OK" : "MISSED");

  if (std::getenv("BUNDLE_BENCH_KEEP") != nullptr) {
    std::printf("kept %s\n", work.c_str());
    return 0;
  }
  std::string cleanup = "chmod -R u+w '" + work.string() + "' && rm -rf '" + work.string() + "'";
  if (std::system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", work.c_str());
  return 0;
}
