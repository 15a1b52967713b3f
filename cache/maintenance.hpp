#pragma once
// Checking and cleaning a store. verify_store() only reads (it works on a read-only store);
// collect_garbage() removes temp files of dead writers and objects no index row references,
// nothing else, and needs the store to itself (no other writable handle open). Errors are
// podplane::Error.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cache/store.hpp"

namespace podplane::cache {

struct VerifyReport {
  std::size_t objects_checked = 0;       // object files rehashed
  std::size_t artifacts_checked = 0;
  std::size_t module_files_checked = 0;
  std::size_t views_checked = 0;
  std::vector<std::string> problems;     // corruption or inconsistency: verify fails
  std::vector<std::string> garbage;      // left by crashes, harmless; `deps gc` removes it
  std::vector<std::string> notes;        // worth knowing, not wrong (e.g. views not built yet)
  bool ok() const { return problems.empty(); }
};

// Rehashes every object, checks every row against the objects it names (size, zh, h1, the
// upstream digest of vmconfig artifacts, module tree h1), looks for duplicate and dangling
// rows, and checks every view file that exists against the object it should be.
[[nodiscard]] VerifyReport verify_store(const Store& store);
nlohmann::json to_json(const VerifyReport& report);

enum class DryRun { no, yes };

struct GcReport {
  std::vector<std::filesystem::path> temp_files;  // removed (or would be)
  std::vector<std::string> objects;               // digests removed (or would be)
  std::uint64_t bytes = 0;                        // size of the removed objects and temp files
};

// Removes (or with DryRun::yes only lists) temp files whose writer is gone and objects that no
// artifact, module file or provenance row references, index row first, then the file.
// Throws when the store is read-only or another process has it open for writing.
[[nodiscard]] GcReport collect_garbage(Store& store, DryRun dry_run);
nlohmann::json to_json(const GcReport& report);

}  // namespace podplane::cache
