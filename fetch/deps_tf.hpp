#pragma once
// `podplane deps tf`: resolves what a stack needs (Podplane's stack, or --stack root
// modules), fetches every provider package for every platform of the store's growing set
// with the registry's trust checks (signed SHA256SUMS, zip sha256 == SHA256SUMS line ==
// shasum), computes h1, fetches the module packages, and indexes it all; then sets the
// TfSelection and rebuilds the views. No tofu/terraform binary is used. The stages live in
// tf_requirements, tf_resolution, tf_modules, tf_metadata, tf_verification and
// tf_package_job; deps_tf() runs them in order.
//
// All or nothing: every check runs before any index row is written, and the rows of one run
// are written in one transaction, so a failed check leaves the index and the views as they
// were (verified package bytes may remain as unindexed objects that a rerun reuses and gc
// removes). Credentials go only to registry JSON endpoints. Errors are podplane::Error.
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cache/podplane_stack.hpp"
#include "cache/store.hpp"
#include "lockfile/platform.hpp"
#include "net/download.hpp"
#include "fetch/tf_verification.hpp"

namespace podplane::fetch {

// --write-lock: whether a --stack run writes each root's own .terraform.lock.hcl.
enum class RootLocks { leave, write };
// --upgrade: whether the versions a root's committed lock selects are kept (as `init` keeps
// them) or chosen afresh within the constraints (as `init -upgrade`).
enum class LockedVersions { keep, upgrade };

struct DepsTfOptions {
  std::vector<std::string> platforms;             // OS_ARCH; the host platform when none here nor in the store
  lockfile::Engine engine = lockfile::Engine::tofu;
  std::string engine_reason = "--engine";       // why this engine, for the report ("found on PATH", …)
  // empty: Podplane's stack of `default_stack`, whose selection is the store's (tf/.terraform.lock.hcl).
  // Otherwise each root is resolved on its own constraints and its own lock; the store keeps
  // every version any root needs and Podplane's selection is left as it was.
  std::vector<std::filesystem::path> stacks;
  // --repo-root: where the roots' local module calls may lead (nullopt: each root's git repository).
  std::optional<std::filesystem::path> repo_root;
  RootLocks root_locks = RootLocks::leave;
  LockedVersions locked_versions = LockedVersions::keep;
  cache::ProviderKind default_stack = cache::ProviderKind::aws;  // `deps tf -f CONFIG`: the config's kind
  Verification verification = Verification::required;
  net::DownloadOptions download;
};

struct DepsTfSummary {
  std::size_t packages_fetched = 0;   // downloaded
  std::size_t packages_present = 0;   // already in the store: no bytes transferred
  std::size_t packages_reused = 0;    // new rows whose zip (same sha256) the store held under another origin
  std::uint64_t package_bytes = 0;
  std::size_t modules_fetched = 0;
  std::size_t modules_present = 0;
};

// Runs the whole flow; progress to `log` (unless options.download.progress is quiet),
// the result lines to `out`.
DepsTfSummary deps_tf(cache::Store& store, const DepsTfOptions& options, std::ostream& out, std::ostream& log);

}  // namespace podplane::fetch
