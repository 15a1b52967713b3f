#pragma once
// Temp directories and files that must not outlive the process when SIGINT, SIGTERM or SIGHUP
// ends it. An owner (ScratchDir, a staging dir, a volume being written) registers its path for
// as long as it lives and removes the path itself on every normal exit; the handler that main()
// installs removes whatever is still registered, then lets the signal end the process as it
// would have. The handler uses only async-signal-safe calls (openat, getdents64, unlinkat) on
// paths stored in fixed slots, never the heap or a lock. Registration is thread-safe.
#include <filesystem>

namespace podplane {

class RemoveOnSignal {
 public:
  // `path` is made absolute. When every slot is taken (64 at once), the path is simply not
  // covered: that is a leak on a signal only, never a failure.
  explicit RemoveOnSignal(const std::filesystem::path& path);
  ~RemoveOnSignal();
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

 private:
  int slot_ = -1;
};

// Installs the handler for SIGINT, SIGTERM and SIGHUP (a signal the parent set to ignore stays
// ignored). Called once by main(); without it, registrations cost nothing and do nothing.
void install_remove_on_signal_handlers();

}  // namespace podplane
