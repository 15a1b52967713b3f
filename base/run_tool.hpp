#pragma once
// Runs one external program (no shell) and collects what it printed: for the standard tools
// podplane drives rather than reimplements (qemu-img, sfdisk, blkid, debugfs). stdin is
// /dev/null; stdout and stderr are read separately, each kept up to a bound (git and the engine,
// which need their own environment or a terminal, use base/child_process.hpp directly).
// Thread-compatible.
#include <string>
#include <vector>

namespace podplane {

struct ToolRun {
  int exit_code = 0;     // 127 when the program could not be started (see `missing`)
  bool missing = false;  // the program is not installed (not found on PATH)
  std::string out;       // stdout, at most 4 MiB
  std::string err;       // stderr, at most 64 KiB, trailing white space removed
};

// argv[0] is looked up on PATH. `environment` ("NAME=value" each) is added to this process's,
// replacing a variable of the same name. Throws podplane::Error only when no process could be made.
[[nodiscard]] ToolRun run_tool(const std::vector<std::string>& argv, const std::vector<std::string>& environment = {});

}  // namespace podplane
