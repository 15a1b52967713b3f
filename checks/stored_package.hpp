#pragma once
// "Does the store's package of a lock entry match the lock and its view file?", answered once
// for `cluster check` and `stack check` (each words the answer for its own users). The lock
// half is lockfile::package_matches_lock (any one hash); the view half is the zip the store's
// tfrc installs from, which must still hash to what the index recorded.
#include <filesystem>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "lockfile/lock_file.hpp"

namespace podplane::checks {

struct StoredPackage {
  enum class Verdict {
    ok,
    missing,       // no package of this version and platform in the store
    not_in_lock,   // none of the package's hashes is in the lock entry
    view_missing,  // the view zip is not a regular file
    view_damaged,  // the view zip hashes to something else than the index recorded
  };
  Verdict verdict = Verdict::missing;
  std::vector<std::string> hashes;  // the package's lock hashes: h1 (when recorded), then zh
  std::filesystem::path view;       // the zip `init` installs from through the store's tfrc
  std::string got;                  // view_damaged: what the zip hashes to (zh, else h1)
  std::string expected;             // view_damaged: what the index says it hashes to
};

[[nodiscard]] StoredPackage judge_stored_package(const cache::Store& store, const lockfile::ProviderLock& provider,
                                                 const std::string& platform);

}  // namespace podplane::checks
