#pragma once
// The Podplane-compatible views of a store (docs/design.md §3.4), derived from the index and
// rebuildable from it at any time: provider zips (hard links into objects, copies where
// links fail), module trees, current-version, platforms, the lock file, the tfrc and the
// vmconfig manifests and artifacts. Safe against concurrent rebuilds by other processes.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cache/store.hpp"

namespace podplane::cache {

// One file of the views: either an object (hard-linked, or copied where a link fails or the
// mode differs from the object's read-only 0444) or generated content.
// `path` is a plain string: a store of 50,000 objects plans ~50,000 files, and a
// std::filesystem::path also holds a list of its ~12 components (about 700 bytes a file).
struct ViewFile {
  std::string path;                    // absolute, under <root>/tf, <root>/vmconfig or <root>/arch
  std::string object_digest;           // non-empty: the file is this object
  std::optional<std::string> content;  // otherwise: these bytes
  std::uint32_t mode = 0444;           // object files: the mode to give a copy (module files keep theirs)
};

// An index row (or an entry of the tf selection) that views come from.
struct RowRef {
  enum class Kind { artifact, module_tree, selected_provider, selected_platform, selected_module, selection };
  Kind kind = Kind::artifact;
  std::int64_t id = 0;  // artifact and module tree rows
  std::string key;      // a selected provider's address, a selected platform
};

// A row that gets no view: it breaks the row rules (cache/row_rules.hpp), or its views would
// take the place of an earlier row's. `reason` names the row and says why.
struct UnplacedRow {
  RowRef row;
  std::string reason;
};

struct ViewPlan {
  std::vector<ViewFile> files;        // every view file, in a stable order
  std::vector<UnplacedRow> unplaced;  // rows left out; the rest are laid out all the same
  // The view trees in which every file must be one of `files` (tf/providers, tf/modules, vmconfig, arch).
  std::vector<std::filesystem::path> directories;
};

// What the index implies, never failing on a row: a row that cannot be laid out (hostile, or
// from an older store) is left out and reported, so one row never stops the others. Rows are
// laid out oldest first, after the selection's own files, so a later row can never take an
// earlier one's place (module_view_dir). Reads the index only.
[[nodiscard]] ViewPlan plan_views(const Store& store);
// plan_views(store).files.
[[nodiscard]] std::vector<ViewFile> planned_views(const Store& store);

// Where a module package's view lives, relative to nothing that a later fill can change, so a
// path a generated stack references never moves (docs/design.md §5.3):
// tf/modules/nstance/<ver>/ (the real Podplane path) holds the first Nstance package
// (<host>/nstance-dev/nstance/<cloud>) of that version the store took, by index order; every
// other package lives at tf/modules/<host>/<ns>/<name>/<system>/<ver>/. `trees` is every
// module tree of the store (Store::module_trees()); the answer depends only on rows older
// than `tree`, and rows are only ever added. Pure.
[[nodiscard]] std::filesystem::path module_view_dir(const std::filesystem::path& deps_root, const ModuleTree& tree,
                                                    const std::vector<ModuleTree>& trees);

// The files of plan.directories that no planned view is, in path order (deps verify names them,
// --repair and prune remove them). Usually none: only these are held, not every view file.
[[nodiscard]] std::set<std::filesystem::path> unplanned_view_files(const ViewPlan& plan);
// Removes them (views are derived); returns them relative to `root`, in path order.
std::vector<std::string> remove_unplanned_views(const ViewPlan& plan, const std::filesystem::path& root);

struct ViewStats {
  std::size_t files_written = 0;     // files created or replaced this time
  std::size_t files_present = 0;     // already up to date
  std::size_t objects_missing = 0;   // views not written because their object is not on disk
  std::vector<std::string> skipped_rows;  // UnplacedRow::reason of every row left out
};

// Of two vmconfig artifacts that share one path (the same name, version and file name for
// two arches on Podplane's plain path), whether `a` is the one the views and `mirror serve`
// hold there: the platform that sorts first (linux_amd64), then the older row, so a path never
// changes its bytes because of a later fill.
bool vmconfig_artifact_wins(const Artifact& a, const Artifact& b);

// Where VMs find vmconfig artifacts (docs/podplane-layout.md §2.5, docs/mirror.md "vmconfig
// artifacts and architecture bases"). A VM fetches
// <deps_mirror_url>/vmconfig/artifacts/<name>/<version>/<basename(url)>, a path with no arch
// in it, and kubelet's amd64 and arm64 builds share it. So every artifact is published twice:
//   vmconfig/artifacts/<name>/<version>/<file>             Podplane's plain path; where two
//                                                          arches collide, vmconfig_artifact_wins
//   arch/<arch>/vmconfig/artifacts/<name>/<version>/<file> every artifact of that arch, never
//                                                          another arch's
// A boot file read out of the os image (vmconfig_boot_file) sits beside it, as in Podplane's
// cache: vmconfig/artifacts/os-image/<version>/boot/<file>, and the same below arch/<arch>/.
// A stack's userdata for <arch> gets <deps_mirror_url>/arch/<arch> as its base. Both the
// on-disk views under the deps root and `mirror serve`/`mirror export` use these paths, and
// `cluster check` replays VMs against them.
inline constexpr std::string_view kVmconfigArtifactsPath = "vmconfig/artifacts";
// "arch/<arch>": the base below a mirror's root that serves only `arch`'s artifacts.
std::string vmconfig_arch_base(std::string_view arch);
// '/'-separated path relative to a mirror root (no leading '/') → the artifact served there,
// for every row of `artifacts` that is a vmconfig artifact or boot file and meets the row rules. Rows
// without a platform appear on the plain path only.
[[nodiscard]] std::map<std::string, Artifact> vmconfig_artifact_paths(const std::vector<Artifact>& artifacts);

// Writes every view that the index implies (skipping rows that cannot be laid out and views
// whose object is missing). Does nothing (and returns zeros) on a read-only store. Never
// touches anything outside tf/, vmconfig/, arch/ and seeds/ and never removes a file.
ViewStats rebuild_views(Store& store);

}  // namespace podplane::cache
