#include "cache/store_check.hpp"

namespace podplane::cache {

StoreCheck check_store(Store& store, VerifyDepth depth, Repair repair) {
  StoreCheck check;
  if (repair == Repair::yes) {
    check.repaired = repair_store(store);
    check.report = check.repaired->after;
  } else {
    check.report = verify_store(store, depth);
  }
  check.recheck = recheck_store(store);
  for (const auto& [kind, result] : check.recheck.results)
    check.report.problems.insert(check.report.problems.end(), result.problems.begin(), result.problems.end());
  return check;
}

}  // namespace podplane::cache
