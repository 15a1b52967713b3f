#pragma once
// What every fork/exec of ours needs on both sides of the fork: the argv and envp arrays
// execve wants, built before fork (the child of a threaded process must not allocate), and
// the wait for the child's end. The one owner for running git and the tofu/terraform engine.
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace podplane {

// Pointers into `strings`, followed by nullptr, for execve/execvpe. `strings` must stay alive
// and unchanged while the result is used.
[[nodiscard]] std::vector<char*> exec_array(std::vector<std::string>& strings);

// This process's environment without the variables named in `drop` (each "NAME", matched on
// "NAME=" or, ending in '_', as a prefix: "GIT_HTTP_LOW_SPEED_").
[[nodiscard]] std::vector<std::string> environment_without(const std::vector<std::string_view>& drop);

// The self-contained tarball's launcher (packaging/launcher) starts podplane with the host's
// LD_PRELOAD and LD_AUDIT moved to PODPLANE_HOST_LD_PRELOAD and PODPLANE_HOST_LD_AUDIT, so that
// the carried loader loads no library of the host into podplane. This puts them back into this
// process's environment once it runs, for the programs it starts (git, qemu-img, the engine),
// which are the host's and load the host's libraries. Called first thing in main().
void restore_host_loader_environment();

// Waits for `pid` (retrying EINTR) and returns its exit code, or 128 + the signal that ended
// it. Error "waiting for <what>: <reason>" when waitpid fails.
[[nodiscard]] int wait_exit_code(pid_t pid, std::string_view what);

}  // namespace podplane
