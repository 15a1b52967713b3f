#pragma once
// Paths inside a deps root. The tf/ and vmconfig/ trees keep the real Podplane layout
// (views derived from the index); store/ holds objects and the index.
#include <filesystem>
#include <string_view>

namespace podplane::cache::layout {

namespace fs = std::filesystem;

inline fs::path store_dir(const fs::path& root) { return root / "store"; }
inline fs::path index_db(const fs::path& root) { return root / "store" / "index.db"; }
inline fs::path objects_dir(const fs::path& root) { return root / "store" / "objects" / "sha256"; }
inline fs::path temp_dir(const fs::path& root) { return root / "store" / "tmp"; }
// Marks of writers that have committed rows whose views they have not written yet (ViewsPending).
inline fs::path views_pending_dir(const fs::path& root) { return root / "store" / "views-pending"; }

inline fs::path tf_dir(const fs::path& root) { return root / "tf"; }
inline fs::path providers_dir(const fs::path& root) { return root / "tf" / "providers"; }
inline fs::path lock_file(const fs::path& root) { return root / "tf" / ".terraform.lock.hcl"; }
inline fs::path platforms_file(const fs::path& root) { return root / "tf" / "platforms"; }
inline fs::path tfrc_file(const fs::path& root) { return root / "tf" / "podplane.tfrc"; }
inline fs::path nstance_modules_dir(const fs::path& root) { return root / "tf" / "modules" / "nstance"; }
inline fs::path current_version_file(const fs::path& root) { return nstance_modules_dir(root) / "current-version"; }

inline fs::path vmconfig_manifests_dir(const fs::path& root) { return root / "vmconfig" / "manifests"; }
inline fs::path vmconfig_artifacts_dir(const fs::path& root) { return root / "vmconfig" / "artifacts"; }
// arch/<arch>/vmconfig/artifacts/…: each architecture's own base for VMs (cache/views.hpp).
inline fs::path vmconfig_arch_bases_dir(const fs::path& root) { return root / "arch"; }

// Netsy seeds as Podplane keeps them: seeds/manifests/seeds.json, seeds/snapshots/<name>/<version>/<file>.
inline fs::path seeds_dir(const fs::path& root) { return root / "seeds"; }
inline fs::path seeds_manifest_file(const fs::path& root) { return root / "seeds" / "manifests" / "seeds.json"; }
inline fs::path seeds_snapshots_dir(const fs::path& root) { return root / "seeds" / "snapshots"; }

}  // namespace podplane::cache::layout
