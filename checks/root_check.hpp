#pragma once
// `podplane stack check DIR…`: whether `init` of any OpenTofu/Terraform root (one we did not
// generate) will find everything offline, by podplane's own reading. What the root needs is
// fetch/root_needs.hpp's one definition (its lock's providers, the module versions its calls
// select, recursively). Per root: it has a .terraform.lock.hcl whose entries cover what the
// root and its modules require; every module call selects a package the store (or the mirror)
// holds; per platform, every provider of that lock has a package whose hashes the lock records,
// in the store (and in its views) or, with a mirror URL, in that mirror's network-mirror
// answers. "Covers" and "has a package the lock accepts" are lockfile/lock_rules.hpp's rules,
// the same ones `cluster check` judges by. The engine's own run (stack_check.hpp) comes after.
// Reads the root's .tf/.tf.json files and lock only. Never opens a connection except to the mirror
// URL given. Rows go into a CheckReport whose remedies are the commands that fix each failure.
// Throws podplane::Error only when a root cannot be read at all (not a directory).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "checks/check_report.hpp"
#include "cache/store.hpp"
#include "fetch/root_needs.hpp"
#include "lockfile/platform.hpp"
#include "net/http.hpp"

namespace podplane::checks {

// Where a root's dependencies must resolve from.
struct RootCheckSource {
  const cache::Store* store = nullptr;  // the store (its index and views), when no mirror_url
  std::string mirror_url;               // a running `mirror serve` (https://host:port), else ""
  net::HttpOptions http;             // for mirror_url
};

struct RootCheckOptions {
  std::vector<std::string> platforms;           // empty: every platform the store holds of the lock's providers
  std::optional<std::filesystem::path> repo_root;  // --repo-root: where local module calls may lead
  std::string flags;  // the check's own flags, repeated in the commands it prints ("--mirror URL …")
};

// Checks one root, adding rows to `out`. Returns what the root needs when it could be read
// (its lock, calls and origin hosts, for the engine's run), else nullopt.
std::optional<fetch::RootNeeds> check_root(const RootCheckSource& source, const std::filesystem::path& root_dir,
                                            const RootCheckOptions& options, CheckReporter& out);

}  // namespace podplane::checks
