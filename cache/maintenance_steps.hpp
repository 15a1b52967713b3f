#pragma once
// Internal to cache/: the steps gc, repair and prune share (cache/maintenance.cpp owns them).
// Each needs a writable store; those that delete need it alone (ExclusiveStoreLock).
#include <sys/file.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "cache/maintenance.hpp"
#include "cache/store_impl.hpp"
#include "cache/views.hpp"

namespace podplane::cache {

// gc, repair and prune must be alone: writers hold store/lock shared for their whole life, so
// holding it exclusively means no object can sit between "renamed into place" and "indexed",
// and no reader of ours is between "the object is intact" and "take it". A writer that opens
// the store meanwhile waits for it (Store::open blocks on its shared lock).
class ExclusiveStoreLock {
 public:
  ExclusiveStoreLock(Store::Impl& impl, const std::string& what, const std::string& command) : impl_(impl) {
    if (::flock(impl_.store_lock.get(), LOCK_EX | LOCK_NB) != 0) {
      // A failed conversion may drop the shared lock: take it back before reporting.
      while (::flock(impl_.store_lock.get(), LOCK_SH) != 0 && errno == EINTR) {
      }
      throw Error("cannot " + what + ": another podplane process has the store at " + impl_.root.string() +
                  " open for writing; run " + command + " again when it has finished");
    }
  }
  ~ExclusiveStoreLock() {
    while (::flock(impl_.store_lock.get(), LOCK_SH) != 0 && errno == EINTR) {
    }
  }
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

// Removes the files of plan.directories that no planned view is (views are derived); returns
// them relative to `root`, in path order.
std::vector<std::string> remove_unplanned_views(const ViewPlan& plan, const std::filesystem::path& root);

}  // namespace podplane::cache
