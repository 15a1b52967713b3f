#include "lockfile/lock_rules.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace podplane::lockfile {

std::vector<LockGap> lock_gaps(const std::map<std::string, RequiredProvider>& required, const LockFile& lock) {
  std::vector<LockGap> gaps;
  for (const auto& [address, wanted] : required) {
    const ProviderLock* locked = lock.find(address);
    if (locked == nullptr) {
      gaps.push_back({LockGap::Kind::no_entry, address, wanted.declared_in, "", ""});
      continue;
    }
    const Constraints constraints = Constraints::merge(wanted.constraints);
    bool allowed = false;
    try {
      allowed = constraints.allows(Version::parse(locked->version));
    } catch (const Error&) {
    }
    if (!allowed)
      gaps.push_back({LockGap::Kind::version_not_allowed, address, wanted.declared_in, locked->version,
                      constraints.canonical()});
  }
  return gaps;
}

bool package_matches_lock(const std::vector<std::string>& package_hashes, const std::vector<std::string>& lock_hashes) {
  if (lock_hashes.empty()) return true;
  return std::any_of(package_hashes.begin(), package_hashes.end(), [&](const std::string& hash) {
    return std::find(lock_hashes.begin(), lock_hashes.end(), hash) != lock_hashes.end();
  });
}

}  // namespace podplane::lockfile
