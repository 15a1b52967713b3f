#pragma once
// `cluster create|upgrade`: the stack generated from the store (generator/stack.hpp), what
// changed said in words, then the stack applied offline with the engine its lock is for
// (generator/engine.hpp): init, the question unless approved, apply; or, without the engine or
// when not applying, the commands to run by hand. A Proxmox VE stack says what to run on the
// nodes instead. Errors are podplane::Error: generation's, and an engine run's exit code with
// the stack's directory.
#include <istream>
#include <ostream>

#include "cache/store.hpp"
#include "generator/stack.hpp"

namespace podplane::generator {

// Whether the stack is applied after it is written: --no-apply, the question, -y.
enum class Apply { no, ask, auto_approve };
// Whether the files written are listed (--quiet leaves them out).
enum class FileList { shown, quiet };

struct StackRunOptions {
  StackOptions stack;
  Apply apply = Apply::ask;
  FileList file_list = FileList::shown;
};

// The streams a run talks to: what it says, its warnings ("podplane: warning: …"), and where
// the answer to "Apply …? [y/N]" comes from.
struct StackConsole {
  std::ostream& out;
  std::ostream& warnings;
  std::istream& answers;
};

// Generates the stack of `options.stack` from `store`, says what changed, and applies it as
// `options.apply` says.
void create_or_upgrade_stack(const cache::Store& store, const StackRunOptions& options, const StackConsole& console);

}  // namespace podplane::generator
