#pragma once
// `podplane stack check DIR…`: whether `init` of any OpenTofu/Terraform root (one we did not
// generate) will find everything offline. Per root: it has a .terraform.lock.hcl whose entries
// cover what the root and its modules require; per platform, every provider of that lock has a
// package whose hashes the lock records, in the store (and in its views, where the store's tfrc
// points) or, with a mirror URL, in that mirror's network-mirror answers; every remote module the
// root calls (followed through the modules it calls) has a package the call's version allows.
// "Covers" and "has a package the lock accepts" are lockfile/lock_rules.hpp's rules, the same
// ones `cluster check` judges by.
// Reads the root's .tf/.tf.json files and lock only. Never opens a connection except to the mirror
// URL given. Rows go into a CheckReport whose remedies are the commands that fix each failure.
// Throws podplane::Error only when a root cannot be read at all (not a directory).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "checks/check_report.hpp"
#include "cache/store.hpp"
#include "lockfile/platform.hpp"
#include "net/http.hpp"

namespace podplane::checks {

// Where a root's dependencies must resolve from.
struct RootCheckSource {
  const cache::Store* store = nullptr;  // the store (its index and views), when no mirror_url
  std::string mirror_url;               // a running `mirror serve` (https://host:port), else ""
  mirror::HttpOptions http;             // for mirror_url
};

// The engine a root's lock was written for: registry.terraform.io entries → terraform, else tofu.
[[nodiscard]] lockfile::Engine root_engine(const std::filesystem::path& root_dir);

// Checks one root for `platforms` (empty: every platform the store holds packages of, else this
// machine's), adding rows to `out`.
void check_root(const RootCheckSource& source, const std::filesystem::path& root_dir,
                const std::vector<std::string>& platforms, CheckReporter& out);

}  // namespace podplane::checks
