#pragma once
// `deps gc`: removes temp files of dead writers, scratch directories of dead runs and objects no
// index row references, nothing else, and needs the store to itself (no other writable handle
// open). Also the steps the other commands that delete share with it (deps verify --repair,
// deps prune): the exclusive lock, the check that the index can vouch for a deletion, the
// removal itself. Errors are podplane::Error.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cache/store.hpp"

namespace podplane::cache {

enum class DryRun { no, yes };

struct GcReport {
  std::vector<std::filesystem::path> temp_files;    // removed (or would be)
  std::vector<std::filesystem::path> scratch_dirs;  // dead runs' scratch directories in store/tmp, removed (or would be)
  std::vector<std::string> objects;                 // digests removed (or would be)
  std::uint64_t bytes = 0;                          // size of the removed objects, temp files and scratch directories
};

// Removes (or with DryRun::yes only lists) temp files whose writer is gone, scratch directories
// in store/tmp (every one is a dead run's once gc holds the store alone) and objects that no
// artifact, module file or provenance row references, index row first, then the file.
// Throws, deleting nothing, when the store is read-only, another process has it open for
// writing, or the index cannot vouch for what it would delete: damaged, empty while objects
// exist, or created after unindexed objects it would delete (it was lost and made again).
[[nodiscard]] GcReport collect_garbage(Store& store, DryRun dry_run);
nlohmann::json to_json(const GcReport& report);

// gc, repair and prune must be alone: writers hold store/lock shared for their whole life, so
// holding it exclusively means no object can sit between "renamed into place" and "indexed",
// and no reader of ours is between "the object is intact" and "take it". A writer that opens
// the store meanwhile waits for it (Store::open blocks on its shared lock).
class ExclusiveStoreLock {
 public:
  // Throws "cannot <what>: another podplane process has the store … open for writing; run <command> again …".
  ExclusiveStoreLock(Store::Impl& impl, const std::string& what, const std::string& command);
  ~ExclusiveStoreLock();
  ExclusiveStoreLock(const ExclusiveStoreLock&) = delete;
  ExclusiveStoreLock& operator=(const ExclusiveStoreLock&) = delete;

 private:
  Store::Impl& impl_;
};

// Throws "<command> refused: …", deleting nothing, unless the index can vouch for what a
// deletion on its word would remove: readable whole, not empty while objects exist (unless a
// prune it records emptied it, or only a first fill stopped before its rows wrote to it), not
// made after unindexed objects, every objects row a sha256.
void refuse_untrustworthy_index(const Store& store, std::string_view command);

// gc's work once the store is held alone: temp files of dead writers and scratch directories of
// dead runs, then objects no row references (index row first, then the file), and the audit
// entry "gc" when it removed any.
[[nodiscard]] GcReport remove_garbage(Store& store, DryRun dry_run);

}  // namespace podplane::cache
