// scale_bench [WORKDIR]: how the store's everyday commands grow with the store. Generates two
// stores, of 5,000 and of 50,000 objects (a tenth of them named by artifact rows, the rest by
// module files in trees of 100), then times each command on both and prints its time, the
// growth ratio (50k time / 5k time; linear is 10) and its peak RSS:
//   deps ls, deps verify --quick, deps verify, bundle inventory, deps du, deps prune --keep 1
//   --dry-run, bundle create --since (a delta of 10 new rows), mirror serve start-to-first-answer.
// Targets at 50k: each under 2 s (full verify excepted: it rehashes every byte), growth linear
// or better, peak RSS < 100 MiB. Run by hand (not by ctest); docs/performance.md records the numbers.
//
// The generator writes object files and their index rows directly (no download, no fsync per
// object): the stores it makes pass `deps verify`, which the bench checks before timing.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/digest.hpp"
#include "bench/support/measured_run.hpp"
#include "cache/layout.hpp"
#include "cache/sqlite.hpp"
#include "cache/store.hpp"
#include "lockfile/hash.hpp"
#include "tests/support/background.hpp"
#include "tests/support/test_support.hpp"

namespace fs = std::filesystem;
using podplane::cache::Artifact;
using podplane::cache::ArtifactKind;
using podplane::cache::ModuleFile;
using podplane::cache::ModuleTree;
using podplane::cache::Store;

namespace {

using Child = podplane::bench::MeasuredRun;

Child run(const std::vector<std::string>& argv, const fs::path& deps_root) {
  return podplane::bench::run_measured(argv, {{"PODPLANE_DEPS_CACHE_DIR", deps_root.string()}});
}

std::string hex_index(std::size_t i) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%06zu", i);
  return buffer;
}

// Writes `content` as an object file the way the store lays it out (read-only, by digest) and
// returns its digest; the caller indexes it.
std::string write_object(const fs::path& root, const std::string& content) {
  std::string digest = podplane::sha256_hex(content);
  fs::path file = podplane::cache::layout::objects_dir(root) / digest.substr(0, 2) / digest.substr(2);
  fs::create_directories(file.parent_path());
  {
    std::ofstream out(file, std::ios::binary);
    out << content;
  }
  ::chmod(file.c_str(), 0444);
  return digest;
}

// Object `i`'s bytes: unique, 0.5 to 4 KiB.
std::string object_bytes(const std::string& label, std::size_t i) {
  std::string line = label + " " + std::to_string(i) + "\n";
  std::string content;
  std::size_t size = 512 + (i * 7919) % 3584;
  while (content.size() < size) content += line;
  content.resize(size);
  return content;
}

struct Generated {
  std::vector<Artifact> artifacts;
  std::vector<ModuleTree> trees;
};

// `rows` artifact rows (provider SHA256SUMS documents) and module trees of 100 files, so that
// the store holds `objects` objects in all.
Generated generate_objects(const fs::path& root, std::size_t objects, std::size_t rows, const std::string& label) {
  Generated g;
  auto db = podplane::cache::sqlite::Database::open(podplane::cache::layout::index_db(root),
                                                    podplane::cache::sqlite::OpenMode::read_write_create);
  podplane::cache::sqlite::Transaction transaction(db);
  podplane::cache::sqlite::Statement insert(db, "INSERT OR IGNORE INTO objects (digest, size, added_at) VALUES (?, ?, ?)");
  auto add = [&](const std::string& content) {
    std::string digest = write_object(root, content);
    insert.bind(1, digest).bind(2, static_cast<std::int64_t>(content.size())).bind(3, "2026-11-01T00:00:00Z");
    insert.run();
    insert.reset();
    return digest;
  };
  for (std::size_t i = 0; i < rows; ++i) {
    std::string content = object_bytes(label + " sums", i);
    Artifact a;
    a.kind = ArtifactKind::provider_shasums;
    a.address = "registry.opentofu.org/" + label + "/p" + hex_index(i / 10);
    a.version = "1.0." + std::to_string(i % 10);
    a.filename = "terraform-provider-p" + hex_index(i / 10) + "_" + a.version + "_SHA256SUMS";
    a.digest = add(content);
    a.size = static_cast<std::int64_t>(content.size());
    a.added_at = "2026-11-01T00:00:00Z";
    g.artifacts.push_back(a);
  }
  const std::size_t files_per_tree = 100;
  for (std::size_t t = 0; rows + t * files_per_tree < objects; ++t) {
    ModuleTree tree;
    tree.address = "registry.opentofu.org/" + label + "/m" + hex_index(t) + "/aws";
    tree.version = "1.0.0";
    tree.added_at = "2026-11-01T00:00:00Z";
    std::vector<std::pair<std::string, std::string>> entries;
    for (std::size_t f = 0; f < files_per_tree && rows + t * files_per_tree + f < objects; ++f) {
      std::string content = object_bytes(label + " module " + std::to_string(t), f);
      ModuleFile file;
      file.path = "modules/part" + std::to_string(f % 10) + "/file" + std::to_string(f) + ".tf";
      file.digest = add(content);
      file.size = static_cast<std::int64_t>(content.size());
      entries.emplace_back(file.path, file.digest);
      tree.files.push_back(file);
    }
    tree.h1 = podplane::lockfile::h1_hash(entries);
    g.trees.push_back(tree);
  }
  transaction.commit();
  return g;
}

void generate_in_this_process(const fs::path& root, std::size_t objects, std::size_t rows, const std::string& label) {
  { auto created = Store::open(root); }  // layout and schema
  Generated g = generate_objects(root, objects, rows, label);
  auto store = Store::open(root);
  store.in_transaction([&] {
    for (const auto& a : g.artifacts) (void)store.add_artifact(a);
    for (const auto& tree : g.trees) (void)store.add_module_tree(tree);
  });
}

// In a child process: a forked command starts with its parent's resident pages counted in its
// peak RSS (ru_maxrss survives exec), so the bench itself must stay small.
void generate_store(const fs::path& root, std::size_t objects, std::size_t rows, const std::string& label) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    try {
      generate_in_this_process(root, objects, rows, label);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "generating %s failed: %s\n", root.c_str(), error.what());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::exit(1);
}

// Peak RSS of a running process, from /proc (it is stopped by its owner, not reaped here).
long peak_rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// `mirror serve` from exec to its first 200 answer (the index page), then its peak RSS.
Child serve_start(const std::string& podplane, const fs::path& root, const fs::path& log) {
  auto start = std::chrono::steady_clock::now();
  podplane::test::Background serve({podplane, "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"},
                                   {{"PODPLANE_DEPS_CACHE_DIR", root.string()}}, log);
  std::string url = serve.first_line();
  if (url.empty()) {
    std::fprintf(stderr, "mirror serve did not start (see %s)\n", log.c_str());
    std::exit(1);
  }
  url.pop_back();
  auto answer = podplane::test::run({"curl", "-sf", "-o", "/dev/null", url + "/"});
  Child child;
  child.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (answer.exit_code != 0) {
    std::fprintf(stderr, "mirror serve did not answer %s/: %s\n", url.c_str(), answer.err.c_str());
    std::exit(1);
  }
  child.max_rss_kib = peak_rss_kib(serve.pid());
  return child;
}

double load_average() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

struct Measured {
  std::map<std::string, Child> by_command;
};

// Best of two runs of each command (the machine is shared), peak RSS the larger of the two.
Measured measure(const std::string& podplane, const fs::path& root, const fs::path& work, const std::string& label) {
  Measured m;
  auto keep = [&](const std::string& name, const Child& c) {
    auto [it, inserted] = m.by_command.emplace(name, c);
    if (!inserted) {
      it->second.seconds = std::min(it->second.seconds, c.seconds);
      it->second.cpu_seconds = std::min(it->second.cpu_seconds, c.cpu_seconds);
      it->second.max_rss_kib = std::max(it->second.max_rss_kib, c.max_rss_kib);
    }
  };
  const fs::path inventory = work / (label + "-inventory.json");
  for (int round = 0; round < 2; ++round) {
    keep("deps ls", run({podplane, "deps", "ls"}, root));
    keep("deps verify --quick", run({podplane, "deps", "verify", "--quick"}, root));
    keep("deps verify", run({podplane, "deps", "verify"}, root));
    keep("bundle inventory", run({podplane, "bundle", "inventory", "-o", inventory.string()}, root));
    keep("deps du", run({podplane, "deps", "du"}, root));
    keep("deps prune --dry-run", run({podplane, "deps", "prune", "--keep", "1", "--dry-run"}, root));
    keep("mirror serve start", serve_start(podplane, root, work / (label + "-serve.log")));
  }
  // The delta: ten new rows after the inventory was taken.
  {
    auto store = Store::open(root);
    for (int i = 0; i < 10; ++i) {
      Artifact a;
      a.kind = ArtifactKind::provider_shasums;
      a.address = "registry.opentofu.org/" + label + "/new";
      a.version = "2.0." + std::to_string(i);
      a.filename = "terraform-provider-new_" + a.version + "_SHA256SUMS";
      a.digest = store.add_bytes(object_bytes(label + " new", static_cast<std::size_t>(i)));
      (void)store.add_artifact(a);
    }
  }
  for (int round = 0; round < 2; ++round) {
    fs::path bundle = work / (label + "-delta.bundle");
    keep("bundle create --since", run({podplane, "bundle", "create", bundle.string(), "--since", inventory.string()}, root));
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(work, ec)) {
      if (entry.path().filename().string().rfind(label + "-delta.bundle", 0) == 0) fs::remove(entry.path(), ec);
    }
  }
  return m;
}

long own_rss_kib() { return peak_rss_kib(getpid()); }

}  // namespace

int main(int argc, char** argv) {
  // scale_bench --generate ROOT OBJECTS ROWS: only make a store (to profile one command on it).
  if (argc == 5 && std::string(argv[1]) == "--generate") {
    generate_store(argv[2], std::stoul(argv[3]), std::stoul(argv[4]), "gen");
    return 0;
  }
  const char* tmp = std::getenv("TMPDIR");
  fs::path base = argc > 1 ? fs::path(argv[1]) : fs::path(tmp && *tmp ? tmp : "/tmp");
  fs::path work = base / ("podplane-scale-bench-" + std::to_string(getpid()));
  fs::create_directories(work);
  const std::string podplane = podplane::test::podplane_binary().string();
  std::printf("scale_bench: work dir %s, %ld cores, load average %.2f\n", work.c_str(), sysconf(_SC_NPROCESSORS_ONLN),
              load_average());

  struct Size {
    std::string label;
    std::size_t objects, rows;
  };
  const std::vector<Size> sizes = {{"s5k", 5000, 500}, {"s50k", 50000, 5000}};
  std::vector<Measured> results;
  for (const auto& size : sizes) {
    fs::path root = work / size.label;
    auto start = std::chrono::steady_clock::now();
    generate_store(root, size.objects, size.rows, size.label);
    std::printf("generated %s: %zu objects, %zu artifact rows, %zu module trees in %.1f s\n", size.label.c_str(), size.objects,
                size.rows, (size.objects - size.rows + 99) / 100,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    results.push_back(measure(podplane, root, work, size.label));
    std::printf("measured %s (load average %.2f)\n", size.label.c_str(), load_average());
  }

  // Wall time is what a user waits; CPU time (user + system) is what the command costs, and
  // what to compare when other builds load the machine.
  std::printf("\n%-24s %8s %8s %7s %8s %8s %7s %8s %8s  %s\n", "command", "5k s", "50k s", "growth", "5k cpu", "50k cpu",
              "growth", "5k MiB", "50k MiB", "targets (50k < 2 s, growth <= 10x, peak RSS < 100 MiB)");
  for (const auto& [name, small] : results[0].by_command) {
    const Child& big = results[1].by_command.at(name);
    const double growth = big.seconds / small.seconds;
    const bool rehashes = name == "deps verify";
    const bool met = (rehashes || big.seconds < 2.0) && growth <= 10.0 * 1.2 && big.max_rss_kib < 100 * 1024;
    const double cpu_growth = small.cpu_seconds > 0 ? big.cpu_seconds / small.cpu_seconds : -1;
    std::printf("%-24s %8.3f %8.3f %7.2f %8.3f %8.3f %7.2f %8.1f %8.1f  %s\n", name.c_str(), small.seconds, big.seconds, growth,
                small.cpu_seconds, big.cpu_seconds, cpu_growth, small.max_rss_kib / 1024.0, big.max_rss_kib / 1024.0,
                met ? (rehashes ? "OK (time not a target: rehashes every byte)" : "OK") : "MISSED");
  }
  std::printf("load average at the end: %.2f; this bench's own peak RSS (inherited by each command it forks): %.1f MiB\n",
              load_average(), own_rss_kib() / 1024.0);

  if (std::getenv("SCALE_BENCH_KEEP") != nullptr) {
    std::printf("kept %s\n", work.c_str());
    return 0;
  }
  std::string cleanup = "chmod -R u+w '" + work.string() + "' && rm -rf '" + work.string() + "'";
  if (std::system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", work.c_str());
  return 0;
}
