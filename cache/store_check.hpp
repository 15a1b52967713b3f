#pragma once
// `deps verify`: a store's own check (cache/maintenance.hpp, verify_store() or repair_store()
// first) and the rechecks of its rows that run at verify (cache/recheck.hpp), as one report:
// the air gap proves offline what `deps tf` and `deps tools` checked online. Reads only, unless
// asked to repair (which needs the store to itself). Errors are podplane::Error.
#include <optional>

#include "cache/maintenance.hpp"
#include "cache/recheck.hpp"
#include "cache/store.hpp"

namespace podplane::cache {

enum class Repair { no, yes };

struct StoreCheck {
  VerifyReport report;                  // the store's check, every recheck's problems appended
  std::optional<RepairReport> repaired; // Repair::yes: what the repair moved aside or removed
  RowsRecheck recheck;                  // what each recheck checked (RowsRecheck::of)
};

// Repair::no checks `store` to `depth`; Repair::yes repairs it and checks it fully after
// (repair_store()), then rechecks every row either way (recheck_store()).
[[nodiscard]] StoreCheck check_store(Store& store, VerifyDepth depth, Repair repair);

}  // namespace podplane::cache
