#pragma once
// Checking and repairing a store. verify_store() only reads (it works on a read-only store);
// repair_store() needs the store to itself. Cleaning it (deps gc) is cache/gc.hpp's, included
// here for the callers that check and clean. Errors are podplane::Error.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cache/gc.hpp"
#include "cache/store.hpp"

namespace podplane::cache {

// How deeply verify_store() reads objects. Quick checks sizes (by stat) and every row and view
// rule that needs no rehash: it finds a truncated or missing object, not a same-size corrupt one.
enum class VerifyDepth { full, quick };

struct VerifyReport {
  VerifyDepth depth = VerifyDepth::full;
  std::size_t objects_checked = 0;       // object files rehashed (quick: sized)
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
// rows and rows the views cannot lay out, and checks the views against the rows: every view
// file holds its object or content, and in a built view tree no planned file is missing and
// no file is there that no row put there. VerifyDepth::quick reads no object (see above).
[[nodiscard]] VerifyReport verify_store(const Store& store, VerifyDepth depth = VerifyDepth::full);
nlohmann::json to_json(const VerifyReport& report);

// What is wrong between an artifact row and the object it names: its size, zh, the h1 of a
// provider zip, the upstream sha256/sha512 digest. Empty when they agree. Reads the object
// (VerifyDepth::quick: only its size; the zh and a sha256 upstream digest need no read).
[[nodiscard]] std::vector<std::string> artifact_content_problems(const Store& store, const Artifact& artifact,
                                                                 VerifyDepth depth = VerifyDepth::full);

struct RepairReport {
  std::vector<std::string> quarantined;    // what was moved aside, and why
  std::vector<std::string> removed_views;  // view files removed (views are derived)
  VerifyReport after;                      // verify_store() once the repair is done
};

// `deps verify --repair`: so that a store is never stuck. Moves aside (into the quarantine
// table, the bytes of objects into store/quarantine/): objects whose bytes do not match their
// name (their rows stay, so the next fetch or import takes them again), rows that disagree
// with their objects, module trees missing an intact file, and rows the views cannot lay out;
// removes view files that no row implies; rebuilds the views. Needs the store to itself.
[[nodiscard]] RepairReport repair_store(Store& store);
nlohmann::json to_json(const RepairReport& report);

}  // namespace podplane::cache
