#pragma once
// Stored rows checked again from what the store keeps, offline: the one home of every recheck
// (docs/store.md "deps verify", docs/tools.md). Provider packages against their stored
// SHA256SUMS, its detached signature and the registry's keys (what `deps tf` checked online);
// engine release zips against their stored SHA256SUMS signed by the pinned release key; podplane's
// own release files against the SHA256SUMS the store wrote for them; images against the cosign
// keys bundle import is given. Which rows get which is the table's (cache/kinds.hpp Recheck).
// Reads only, never the network.
// Not thread-safe (one call, one thread). Problems name the row and what failed.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/cosign_policy.hpp"
#include "cache/kinds.hpp"
#include "cache/store.hpp"

namespace podplane::cache {

struct RecheckResult {
  std::size_t rows_checked = 0;        // provider packages: one per signed provenance row checked
  std::size_t signatures_checked = 0;  // distinct SHA256SUMS signatures verified (one covers a release)
  std::vector<std::string> problems;   // each names the row and what failed
};

// For every signed provenance row of each of `packages` (provider_package rows): the signature
// over the stored SHA256SUMS verifies against the stored keys, by the recorded key, and the
// SHA256SUMS line for the package's filename is its digest. A package without a signed
// provenance row (taken with --allow-unverified, or from a network mirror) is not a problem.
[[nodiscard]] RecheckResult recheck_provider_packages(const Store& store, const std::vector<Artifact>& packages);

// For each of `archives` (tool_archive rows; podplane's own are left out): its provenance names a
// stored SHA256SUMS and signature, the signature verifies with the engine's signing keys
// (cache/tool_releases.hpp) by the recorded key, and the document lists the archive's digest
// under its filename. An archive without a signed provenance row is a problem.
[[nodiscard]] RecheckResult recheck_tool_archives(const Store& store, const std::vector<Artifact>& archives);

// For each of `archives` (tool_archive rows of the address "podplane"; others are left out): the
// store holds its release's SHA256SUMS row and object, and that document lists the row's digest
// under its filename.
[[nodiscard]] RecheckResult recheck_podplane_releases(const Store& store, const std::vector<Artifact>& archives);

// Where a recheck runs: `deps verify` (the whole store) or `bundle import` (a volume's rows, in
// the transaction that adds them: a problem rolls them back).
enum class RecheckAt { verify, import };
// Whether the table's `recheck` runs at `at`.
[[nodiscard]] bool rechecked_at(Recheck recheck, RecheckAt at);

struct RowsRecheck {
  std::map<Recheck, RecheckResult> results;  // every recheck that ran, in Recheck order
  // The result of `recheck`; an empty one when it did not run.
  [[nodiscard]] const RecheckResult& of(Recheck recheck) const;
  // The first problem, in Recheck order, as `bundle import` refuses a volume with it
  // ("engine release not verified: …"); nullopt when there is none.
  [[nodiscard]] std::optional<std::string> first_refusal() const;
};

// Each of `rows` by the recheck its kind's row of the table names (cache/kinds.hpp), those that
// run at `at`. `cosign` is the policy of bundle import's --cosign-key/--cosign-policy: images
// are checked against it where it names keys for them (nullptr: no cosign recheck).
[[nodiscard]] RowsRecheck recheck_rows(const Store& store, const std::vector<Artifact>& rows, RecheckAt at,
                                       const CosignPolicy* cosign = nullptr);
// recheck_rows() of every row of the store, as `deps verify` runs it.
[[nodiscard]] RowsRecheck recheck_store(const Store& store);

}  // namespace podplane::cache
