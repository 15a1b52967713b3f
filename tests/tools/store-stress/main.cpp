// store-stress ROOT --worker ID [--shared N] [--unique N] [--size BYTES]
//              [--pause-in-object K | --pause-after-commit K]
//
// Opens the store at ROOT and ingests, interleaved, N "shared" objects (the same bytes and
// index rows in every worker) and N objects unique to this worker, each with a
// vmconfig_artifact row. Contents are seeded, so every run and every worker agrees on them.
// For crash tests it can stop at a deterministic point and wait for stdin to close:
//   --pause-in-object K     half of object K written to its temp file, then "PAUSED\n" on stdout
//   --pause-after-commit K  object K published and indexed, its row not yet, then "COMMITTED <digest>\n"
// The test SIGKILLs it there; no sleeps are involved on either side.
//
// store-stress ROOT --prune KEEP [--pause-after planned|rows|views]
//
// Prunes the store at ROOT to the newest KEEP versions (cache::prune_store), stopping after
// the named step with "PRUNE <step>\n" on stdout until stdin closes (the kill points of a prune).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cache/prune.hpp"
#include "cache/store.hpp"
#include "tests/support/every_kind.hpp"

namespace {

using podplane::cache::Store;

std::string content_of(const std::string& label, int index, std::size_t base_size) {
  std::seed_seq seed(label.begin(), label.end());
  std::mt19937_64 random(seed);
  random.discard(static_cast<unsigned long long>(index) * 3);
  std::uint64_t mix = random() ^ static_cast<std::uint64_t>(index);
  std::mt19937_64 bytes(mix);
  std::size_t size = base_size + static_cast<std::size_t>(mix % base_size);
  std::string content = label + "#" + std::to_string(index) + "\n";
  while (content.size() < size) content += static_cast<char>(bytes() & 0xff);
  return content;
}

void wait_for_stdin_to_close() {
  char buffer[64];
  while (::read(0, buffer, sizeof buffer) > 0) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: store-stress ROOT --worker ID [--shared N] [--unique N] [--size BYTES] "
                 "[--pause-in-object K | --pause-after-commit K]\n";
    return 2;
  }
  std::string root = argv[1];
  std::string worker = "0";
  int shared = 0, unique = 0, pause_in = -1, pause_after = -1, prune = 0;
  std::string prune_pause;
  std::size_t size = 2048;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--worker") worker = value;
    else if (flag == "--shared") shared = std::stoi(value);
    else if (flag == "--unique") unique = std::stoi(value);
    else if (flag == "--size") size = std::stoul(value);
    else if (flag == "--pause-in-object") pause_in = std::stoi(value);
    else if (flag == "--pause-after-commit") pause_after = std::stoi(value);
    else if (flag == "--prune") prune = std::stoi(value);
    else if (flag == "--pause-after") prune_pause = value;
    else {
      std::cerr << "store-stress: unknown flag " << flag << "\n";
      return 2;
    }
  }
  try {
    if (prune > 0) {
      Store store = Store::open(root, Store::Access::read_write, Store::TempSweep::none);
      podplane::cache::PrunePolicy policy;
      policy.keep = static_cast<std::size_t>(prune);
      const char* names[] = {"planned", "rows", "views"};
      auto report = podplane::cache::prune_store(store, policy, [&](podplane::cache::PruneStep step) {
        if (prune_pause != names[static_cast<int>(step)]) return;
        std::cout << "PRUNE " << prune_pause << std::endl;
        wait_for_stdin_to_close();
      });
      std::cout << "PRUNED " << report.plan.removed_items() << std::endl;
      return 0;
    }
    Store store = Store::open(root);
    int sequence = 0;
    auto ingest = [&](const std::string& address, int index) {
      std::string content = content_of(address, index, size);
      auto writer = store.new_object();
      std::size_t half = content.size() / 2;
      writer.write(content.data(), half);
      if (sequence == pause_in) {
        std::cout << "PAUSED" << std::endl;
        wait_for_stdin_to_close();
      }
      writer.write(content.data() + half, content.size() - half);
      std::string digest = writer.commit();
      if (sequence == pause_after) {
        std::cout << "COMMITTED " << digest << std::endl;
        wait_for_stdin_to_close();
      }
      const std::string url = "https://artifacts.example.com/" + address + "/object-" + std::to_string(index) + ".bin";
      (void)store.add_artifact(podplane::test::vmconfig_artifact_row(digest, address, "1.0." + std::to_string(index), url));
      ++sequence;
    };
    for (int i = 0; i < std::max(shared, unique); ++i) {
      if (i < shared) ingest("stress-shared", i);
      if (i < unique) ingest("stress-worker-" + worker, i);
    }
    store.audit("stress", "worker " + worker, {{"shared", shared}, {"unique", unique}});
  } catch (const podplane::Error& error) {
    std::cerr << "store-stress: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
