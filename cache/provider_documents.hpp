#pragma once
// What the store publishes about provider packages beyond the files themselves: the hashes a
// lock file records, the lock of a selection and the network mirror JSON documents. One owner
// for each, so the lock view, the stacks, `cluster check`, `deps tf --write-lock` and
// `mirror serve` write the same bytes. Defined in cache/views.cpp beside the views that write
// them; a header of its own because it speaks lockfile/ types, and bundle/, which may use
// cache/ but not lockfile/, includes cache/views.hpp.
#include <map>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "lockfile/lock_file.hpp"

namespace podplane::cache {

// The lock-file hashes of one provider package: its h1 when the row has one (a row may lack
// it) and its zh (taken from the digest when the row has none). Never an empty hash.
[[nodiscard]] std::vector<std::string> package_lock_hashes(const Artifact& package);

// The hashes `providers lock` records for one stored package (docs/protocols.md §1.4, §4.5):
// package_lock_hashes() plus, when the package was checked against a signed SHA256SUMS
// document (its provenance says "signed" and the store holds the document), the `zh:` of
// every line of that document: every platform of the release and its `_manifest.json`,
// stored or not. A package without a signed document (a network mirror's, an unverified one)
// gets package_lock_hashes() alone, as the engines record for such a source.
[[nodiscard]] std::vector<std::string> release_lock_hashes(const Store& store, const Artifact& package);

// The lock of chosen provider versions (the store's selection, or the versions `cluster
// upgrade` chose): one entry per provider, holding release_lock_hashes() of each of
// `packages` that is that provider at that version for one of `platforms`, so that the file
// is byte for byte what `<engine> providers lock -platform=…` writes for those platforms.
// Every writer of a lock from the store builds it here: the view tf/.terraform.lock.hcl and
// the stacks.
[[nodiscard]] lockfile::LockFile selection_lock(const Store& store, const std::vector<TfSelection::Provider>& providers,
                                                const std::vector<std::string>& platforms,
                                                const std::vector<Artifact>& packages);

// The network mirror documents of one provider (docs/protocols.md §2, §5) as `providers mirror`
// writes them (Go's json.MarshalIndent: two-space indent, sorted keys, no trailing newline),
// from its packages: `packages` must all have one address; of two packages of one version and
// platform the later one is listed. Both the views and `mirror serve` publish these bytes.
struct ProviderMirrorDocuments {
  std::string index;                            // index.json
  std::map<std::string, std::string> versions;  // version → <version>.json
};
[[nodiscard]] ProviderMirrorDocuments provider_mirror_documents(const std::vector<Artifact>& packages);

}  // namespace podplane::cache
