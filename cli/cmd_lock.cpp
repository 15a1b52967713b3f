// podplane lock hash ZIP...: the lock-file hashes of provider zips, computed offline.
#include <iostream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "lockfile/hash.hpp"

namespace podplane::cli {

void register_lock_commands(CLI::App& group, const GlobalOptions& /*global*/) {
  auto* hash = group.add_subcommand("hash", "Print the h1: and zh: lock hashes of provider zips (offline)");
  auto zips = std::make_shared<std::vector<std::string>>();
  hash->add_option("ZIP", *zips, "Provider package zip files")->required();
  hash->callback([zips] {
    // One line per zip, in argument order; the first unreadable zip stops with exit 1.
    for (const auto& zip : *zips) {
      std::string h1;
      std::string zh;
      try {
        h1 = lockfile::h1_hash_of_zip(zip);
        zh = lockfile::zh_hash_of_file(zip);
      } catch (const Error& error) {
        throw Error("cannot hash " + zip + " as a provider zip: " + error.what());
      }
      std::cout << h1 << " " << zh << " " << zip << "\n" << std::flush;
    }
  });
}

}  // namespace podplane::cli
