#include "base/remove_on_signal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace podplane {

namespace {

constexpr int kSlots = 64;
constexpr int kMaxDepth = 48;  // scratch trees are shallow; deeper leftovers stay (and are only temp files)

// A slot's state is (generation << 2) | kind. The generation changes on every claim, so the
// handler can copy a path and then check that the slot was not freed and reused meanwhile.
enum SlotKind : unsigned { free_slot = 0, writing = 1, live = 2 };
constexpr unsigned kind_of(unsigned state) { return state & 3u; }

struct Slot {
  std::atomic<unsigned> state{free_slot};
  char path[4096];
};

Slot slots[kSlots];
std::atomic<pid_t> owner_pid{0};       // the process that installed the handler; forks skip cleanup
std::atomic_flag cleaning = ATOMIC_FLAG_INIT;
char dirent_buffers[kMaxDepth + 1][4096];  // one per depth: a handler must not use the heap
char path_copy[4096];

bool is_dot_or_dotdot(const char* name) { return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')); }

// rm -rf of `name` below `parent_fd`, with async-signal-safe calls only.
void remove_tree_at(int parent_fd, const char* name, int depth) {
  if (::unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT) return;
  if (errno != EISDIR && errno != EPERM) return;
  if (depth > kMaxDepth) return;
  int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  char* buffer = dirent_buffers[depth];
  // Entries removed while listing may shift the listing: list again until a pass removes nothing.
  for (int pass = 0; pass < 4; ++pass) {
    bool removed_any = false;
    ::lseek(fd, 0, SEEK_SET);
    while (true) {
      long got = ::syscall(SYS_getdents64, fd, buffer, sizeof dirent_buffers[0]);
      if (got <= 0) break;
      for (long offset = 0; offset < got;) {
        auto* entry = reinterpret_cast<struct dirent64*>(buffer + offset);  // getdents64 records
        offset += entry->d_reclen;
        if (is_dot_or_dotdot(entry->d_name)) continue;
        remove_tree_at(fd, entry->d_name, depth + 1);
        removed_any = true;
      }
    }
    if (!removed_any) break;
  }
  ::close(fd);
  ::unlinkat(parent_fd, name, AT_REMOVEDIR);
}

extern "C" void remove_registered_paths_then_die(int signal_number) {
  int saved_errno = errno;
  if (!cleaning.test_and_set()) {
    if (::getpid() == owner_pid.load()) {
      for (auto& slot : slots) {
        unsigned before = slot.state.load();
        if (kind_of(before) != live) continue;
        std::memcpy(path_copy, slot.path, sizeof path_copy);
        path_copy[sizeof path_copy - 1] = '\0';
        if (slot.state.load() == before) remove_tree_at(AT_FDCWD, path_copy, 0);
      }
    }
    // End the way the signal would have ended us: the parent sees "killed by SIGTERM".
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    ::sigaction(signal_number, &fallback, nullptr);
    ::raise(signal_number);  // delivered as soon as this handler returns
  }
  errno = saved_errno;
}

}  // namespace

RemoveOnSignal::RemoveOnSignal(const std::filesystem::path& path) {
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).string();
  if (ec || absolute.size() >= sizeof slots[0].path) return;
  for (int i = 0; i < kSlots; ++i) {
    unsigned current = slots[i].state.load();
    if (kind_of(current) != free_slot) continue;
    unsigned generation = (current >> 2) + 1;
    if (!slots[i].state.compare_exchange_strong(current, (generation << 2) | writing)) continue;
    std::memcpy(slots[i].path, absolute.c_str(), absolute.size() + 1);
    slots[i].state.store((generation << 2) | live);
    slot_ = i;
    return;
  }
}

RemoveOnSignal::~RemoveOnSignal() {
  if (slot_ >= 0) slots[slot_].state.store(slots[slot_].state.load() & ~3u);  // free, same generation
}

void install_remove_on_signal_handlers() {
  owner_pid.store(::getpid());
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction handler {};
    handler.sa_handler = remove_registered_paths_then_die;
    sigfillset(&handler.sa_mask);  // no other signal interrupts the cleanup
    handler.sa_flags = SA_RESTART;
    ::sigaction(signal_number, &handler, nullptr);
  }
}

}  // namespace podplane
