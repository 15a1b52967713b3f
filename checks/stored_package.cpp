#include "checks/stored_package.hpp"

#include "base/error.hpp"
#include "cache/layout.hpp"
#include "cache/provider_documents.hpp"
#include "cache/row_rules.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/lock_rules.hpp"
#include "lockfile/platform.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;

StoredPackage judge_stored_package(const cache::Store& store, const lockfile::ProviderLock& provider,
                                   const std::string& platform) {
  StoredPackage judged;
  auto packages = store.artifacts({cache::ArtifactKind::provider_package, provider.address, provider.version, platform});
  if (packages.empty()) return judged;
  const cache::Artifact& package = packages.front();
  judged.hashes = cache::package_lock_hashes(package);
  if (!lockfile::package_matches_lock(judged.hashes, provider.hashes)) {
    judged.verdict = StoredPackage::Verdict::not_in_lock;
    return judged;
  }
  const auto address = lockfile::ProviderAddress::parse(provider.address, "registry.opentofu.org");
  judged.view = cache::layout::providers_dir(store.root()) / address.host / address.ns / address.type /
                cache::provider_package_name(package);
  std::error_code error;
  if (!fs::is_regular_file(judged.view, error)) {
    judged.verdict = StoredPackage::Verdict::view_missing;
    return judged;
  }
  const std::string& expected_zh = judged.hashes.back();
  const std::string zh = lockfile::zh_hash_of_file(judged.view);
  std::string h1;  // compared only where the store recorded one
  if (zh == expected_zh && !package.h1.empty()) {
    try {
      h1 = lockfile::h1_hash_of_zip(judged.view);
    } catch (const Error& e) {
      h1 = "(unreadable: " + e.message() + ")";
    }
  }
  if (zh != expected_zh || h1 != package.h1) {
    judged.verdict = StoredPackage::Verdict::view_damaged;
    judged.got = zh != expected_zh ? zh : h1;
    judged.expected = zh != expected_zh ? expected_zh : package.h1;
    return judged;
  }
  judged.verdict = StoredPackage::Verdict::ok;
  return judged;
}

}  // namespace podplane::checks
