// bundle_bench [--store-mib N] [--podplane PATH] [WORKDIR] [SIZE_MIB]: measures, in one run
// and against peers on the same data,
//   create:  `podplane bundle create`  vs `tar -cf` over the same object files  (target >= 1.0x)
//   import:  `podplane bundle import`  vs `sha256sum` over the same bundle bytes (target >= 1.0x)
//   verify:  `podplane bundle verify`  vs `sha256sum` over the same bundle bytes (target >= 1.0x)
//   delta:   bytes of a delta after one provider upgrade vs its new objects (<= 1.02x + 64 KiB)
//   memory:  peak RSS (ru_maxrss) of every podplane child (< 100 MiB, the same at every size)
// Beside each ratio it prints the physical floors of the same bytes: the CPU time of their
// sha256 (base/digest.hpp on one thread) divided by the cores, reading them (`cat`, from the
// page cache as every run here), and writing them durably (`dd conv=fsync`, which create's
// volume and import's objects are). The store holds N MiB of objects (--store-mib, or the
// second positional argument; default 1100) in $TMPDIR (or WORKDIR). --podplane times another
// build of podplane (an older one, say) on the same bench. Run by hand (not by ctest);
// docs/performance.md and docs/bundle-format.md record the numbers.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/support/measured_run.hpp"
#include "bench/support/physical_floors.hpp"
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
double mib_of_kib(long kib) { return static_cast<double>(kib) / 1024.0; }

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

struct Options {
  fs::path base;
  std::size_t store_mib = 1100;
  std::string podplane = PODPLANE_BINARY;
};

Options parse(int argc, char** argv) {
  Options options;
  const char* tmp = std::getenv("TMPDIR");
  options.base = tmp && *tmp ? fs::path(tmp) : fs::path("/tmp");
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--store-mib" && i + 1 < argc) {
      options.store_mib = std::stoul(argv[++i]);
    } else if (arg == "--podplane" && i + 1 < argc) {
      options.podplane = argv[++i];
    } else if (arg.starts_with("--")) {
      std::fprintf(stderr, "usage: bundle_bench [--store-mib N] [--podplane PATH] [WORKDIR] [SIZE_MIB]\n");
      std::exit(2);
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() > 0) options.base = positional[0];
  if (positional.size() > 1) options.store_mib = std::stoul(positional[1]);
  return options;
}

// The floors of the bundle's bytes: hashing them (spread over the cores), reading them from
// the page cache, writing them to `scratch` and syncing them.
struct Floors {
  podplane::bench::HashFloor hash;
  double read_seconds = 0;
  double durable_write_seconds = 0;
};

Floors floors_of(const fs::path& bundle, const fs::path& scratch) {
  Floors floors;
  floors.hash = podplane::bench::hash_floor({{bundle, false}});
  drop_into_cache(bundle);
  floors.read_seconds = run({"sh", "-c", "cat \"$0\" > /dev/null", bundle.string()}, scratch.parent_path()).seconds;
  floors.durable_write_seconds =
      run({"dd", "if=" + bundle.string(), "of=" + scratch.string(), "bs=1M", "conv=fsync"}, scratch.parent_path()).seconds;
  fs::remove(scratch);
  return floors;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const std::size_t total_mib = options.store_mib;
  fs::path work = options.base / ("podplane-bundle-bench-" + std::to_string(getpid()));
  fs::create_directories(work);
  const std::string& podplane = options.podplane;
  const fs::path online = work / "online", offline = work / "offline";

  std::printf("bundle_bench: work dir %s, store of %zu MiB, %s; load %s\n", work.c_str(), total_mib, podplane.c_str(),
              load_average().c_str());
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
  double create_best = 1e9, create_cpu = 0, tar_best = 1e9, tar_sync_best = 1e9;
  long create_rss = 0;
  for (int round = 0; round < 2; ++round) {
    fs::remove(work / "full.bundle");
    auto c = run({podplane, "bundle", "create", (work / "full.bundle").string(), "--sign", (work / "site.key").string()}, online);
    if (c.seconds < create_best) create_best = c.seconds, create_cpu = c.cpu_seconds;
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
  const fs::path bundle = work / "full.bundle";
  const double bundle_bytes = static_cast<double>(fs::file_size(bundle));
  const Floors floors = floors_of(bundle, work / "floor.copy");

  // import vs sha256sum of the same bundle bytes: best of two each, interleaved, each import
  // into an empty store (the second one's is kept for the delta below).
  double sum_best = 1e9, import_best = 1e9, import_cpu = 0;
  long import_rss = 0;
  for (int round = 0; round < 2; ++round) {
    drop_into_cache(bundle);
    sum_best = std::min(sum_best, run({"sha256sum", bundle.string()}, online).seconds);
    std::string clear = "chmod -R u+w '" + offline.string() + "' 2>/dev/null; rm -rf '" + offline.string() + "'";
    if (std::system(clear.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", offline.c_str());
    drop_into_cache(bundle);
    auto imp = run({podplane, "bundle", "import", bundle.string(), "--trust", (work / "site.pub").string()}, offline);
    if (imp.seconds < import_best) import_best = imp.seconds, import_cpu = imp.cpu_seconds;
    import_rss = std::max(import_rss, imp.max_rss_kib);
  }

  // verify vs sha256sum: best of two each, interleaved (verify writes nothing).
  double verify_sum_best = 1e9, verify_best = 1e9, verify_cpu = 0;
  long verify_rss = 0;
  for (int round = 0; round < 2; ++round) {
    drop_into_cache(bundle);
    verify_sum_best = std::min(verify_sum_best, run({"sha256sum", bundle.string()}, online).seconds);
    drop_into_cache(bundle);
    auto ver = run({podplane, "bundle", "verify", bundle.string(), "--trust", (work / "site.pub").string()}, offline);
    if (ver.seconds < verify_best) verify_best = ver.seconds, verify_cpu = ver.cpu_seconds;
    verify_rss = std::max(verify_rss, ver.max_rss_kib);
  }

  // delta after one provider upgrade.
  std::uint64_t new_bytes = 0;
  {
    auto store = Store::open(online);
    add_release(store, random, "p0", "1.1.0", 32u << 20, new_bytes);
  }
  auto inventory = run({podplane, "bundle", "inventory", "-o", (work / "inventory.json").string()}, offline);
  auto delta = run({podplane, "bundle", "create", (work / "delta.bundle").string(), "--since",
                    (work / "inventory.json").string(), "--sign", (work / "site.key").string()},
                   online);
  const double delta_bytes = static_cast<double>(fs::file_size(work / "delta.bundle"));
  const double delta_limit = static_cast<double>(new_bytes) * 1.02 + 64 * 1024;

  const double create_ratio = tar_best / create_best;
  const double import_ratio = sum_best / import_best;
  const double import_floor = std::max({floors.hash.seconds(), floors.read_seconds, floors.durable_write_seconds});
  std::printf("create: %.2f s (CPU %.2f s, %.0f MiB/s) vs tar -cf %.2f s (%.0f MiB/s): ratio %.2f (target >= 1.00) %s; "
              "floor: durable write of the bundle %.2f s, create at %.2fx it; peak RSS %.1f MiB\n",
              create_best, create_cpu, mib(bundle_bytes) / create_best, tar_best, mib(bundle_bytes) / tar_best, create_ratio,
              create_ratio >= 1.0 ? "OK" : "MISSED", floors.durable_write_seconds, create_best / floors.durable_write_seconds,
              mib_of_kib(create_rss));
  std::printf("create vs tar -cf + sync of the tar (same durability): %.2f s, ratio %.2f\n", tar_sync_best,
              tar_sync_best / create_best);
  std::printf("import: %.2f s (CPU %.2f s, %.0f MiB/s) vs sha256sum %.2f s (%.0f MiB/s): ratio %.2f (target >= 1.00) %s; "
              "floors: hash %.2f s (CPU %.2f s for %.1f MiB / %u cores), read %.2f s, durable write %.2f s, larger %.2f s, "
              "import at %.2fx it; peak RSS %.1f MiB\n",
              import_best, import_cpu, mib(bundle_bytes) / import_best, sum_best, mib(bundle_bytes) / sum_best, import_ratio,
              import_ratio >= 1.0 ? "OK" : "MISSED", floors.hash.seconds(), floors.hash.cpu_seconds,
              mib(static_cast<double>(floors.hash.bytes)), floors.hash.cores, floors.read_seconds,
              floors.durable_write_seconds, import_floor, import_best / import_floor, mib_of_kib(import_rss));
  const double verify_ratio = verify_sum_best / verify_best;
  const double verify_floor = std::max(floors.hash.seconds(), floors.read_seconds);
  std::printf("verify: %.2f s (CPU %.2f s, %.0f MiB/s) vs sha256sum %.2f s (%.0f MiB/s): ratio %.2f (target >= 1.00) %s; "
              "floors: hash %.2f s, read %.2f s, larger %.2f s, verify at %.2fx it; peak RSS %.1f MiB\n",
              verify_best, verify_cpu, mib(bundle_bytes) / verify_best, verify_sum_best, mib(bundle_bytes) / verify_sum_best,
              verify_ratio, verify_ratio >= 1.0 ? "OK" : "MISSED", floors.hash.seconds(), floors.read_seconds, verify_floor,
              verify_best / verify_floor, mib_of_kib(verify_rss));
  std::printf("delta: %.0f bytes for %llu new bytes: %.4fx (limit 1.02x + 64 KiB = %.0f) %s\n", delta_bytes,
              static_cast<unsigned long long>(new_bytes), delta_bytes / static_cast<double>(new_bytes), delta_limit,
              delta_bytes <= delta_limit ? "OK" : "MISSED");
  const long peak_rss = std::max({create_rss, import_rss, verify_rss, inventory.max_rss_kib, delta.max_rss_kib});
  std::printf("peak RSS: create %.1f MiB, import %.1f MiB, verify %.1f MiB, inventory %.1f MiB, delta create %.1f MiB (target < 100 MiB) %s\n",
              mib_of_kib(create_rss), mib_of_kib(import_rss), mib_of_kib(verify_rss), mib_of_kib(inventory.max_rss_kib), mib_of_kib(delta.max_rss_kib),
              peak_rss < 100 * 1024 ? "OK" : "MISSED");
  std::printf("load at the end: %s\n", load_average().c_str());

  if (std::getenv("BUNDLE_BENCH_KEEP") != nullptr) {
    std::printf("kept %s\n", work.c_str());
    return 0;
  }
  std::string cleanup = "chmod -R u+w '" + work.string() + "' && rm -rf '" + work.string() + "'";
  if (std::system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", work.c_str());
  return 0;
}
