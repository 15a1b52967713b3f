#include "fetch/root_lock.hpp"

#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "cache/provider_documents.hpp"

namespace podplane::fetch {

namespace fs = std::filesystem;

lockfile::LockFile root_lock(const cache::Store& store, const std::vector<cache::TfSelection::Provider>& selection,
                             const std::vector<std::string>& platforms,
                             const std::optional<lockfile::LockFile>& committed) {
  auto lock = cache::selection_lock(store, selection, platforms, store.artifacts({.kind = cache::ArtifactKind::provider_package}));
  if (!committed) return lock;
  for (auto& entry : lock.providers) {
    const auto* before = committed->find(entry.address);
    if (before == nullptr || before->version != entry.version) continue;  // a new version: its own hashes only
    entry.hashes.insert(entry.hashes.end(), before->hashes.begin(), before->hashes.end());
  }
  for (const auto& before : committed->providers) {
    if (lock.find(before.address) == nullptr) lock.providers.push_back(before);
  }
  return lock;
}

bool write_root_lock(const fs::path& file, const lockfile::LockFile& lock, lockfile::Engine engine) {
  const std::string text = lockfile::render_lock_file(lock, engine);
  if (file_holds(file, text)) return false;
  write_file_durably(file, text);
  return true;
}

}  // namespace podplane::fetch
