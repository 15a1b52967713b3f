#pragma once
// What the engines demand of a .terraform.lock.hcl before `init -lockfile=readonly` installs
// anything, as two rules over lockfile types: the lock covers what the root requires, and a
// package is one the lock accepts. `cluster check` and `stack check` both judge by these (and
// only word the answers differently). Pure.
#include <map>
#include <string>
#include <vector>

#include "lockfile/lock_file.hpp"
#include "lockfile/version.hpp"

namespace podplane::lockfile {

// One provider a root (or a module it calls) requires.
struct RequiredProvider {
  std::vector<Constraints> constraints;  // one per declaration
  std::string declared_in;               // the first file that asks for it, for messages
};

// A required provider the lock does not cover.
struct LockGap {
  enum class Kind {
    no_entry,             // the lock has no entry for it
    version_not_allowed,  // the entry's version is not one the merged constraints allow
  };
  Kind kind = Kind::no_entry;
  std::string address;         // registry.opentofu.org/hashicorp/aws
  std::string declared_in;     // from RequiredProvider
  std::string locked_version;  // version_not_allowed: what the lock has
  std::string constraints;     // version_not_allowed: the merged constraints, canonical
};

// Each provider of `required` (by full address) that `lock` does not cover, in address order:
// offline, `init -lockfile=readonly` fails on any, however complete the store is. An entry
// whose version does not parse is not allowed by anything.
[[nodiscard]] std::vector<LockGap> lock_gaps(const std::map<std::string, RequiredProvider>& required,
                                             const LockFile& lock);

// Whether the engines install a package whose hashes are `package_hashes` (its h1 and/or zh)
// under a lock entry recording `lock_hashes`: when ANY one of the package's hashes is in the
// lock, as Terraform and OpenTofu verify it. Not all: `init` on one machine records the h1 of
// that platform's package and only the zh (from SHA256SUMS) of the others. A lock entry that
// records no hashes verifies nothing, as the engines' installer skips the check then.
[[nodiscard]] bool package_matches_lock(const std::vector<std::string>& package_hashes,
                                        const std::vector<std::string>& lock_hashes);

}  // namespace podplane::lockfile
