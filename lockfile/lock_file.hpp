#pragma once
// .terraform.lock.hcl: read (strict, as the engines read it) and write (the exact bytes
// `tofu init` / `terraform init` write; docs/protocols.md §4.1). Errors carry file:line:column.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "lockfile/platform.hpp"

namespace podplane::lockfile {

struct ProviderLock {
  std::string address;      // fully-qualified, normalised: registry.opentofu.org/hashicorp/aws
  std::string version;      // canonical
  std::string constraints;  // canonical string, may be empty
  std::vector<std::string> hashes;  // any order in; written sorted and deduplicated
};

struct LockFile {
  std::vector<ProviderLock> providers;  // any order in; written sorted by address

  const ProviderLock* find(std::string_view address) const;
};

// `source_name` is used in error messages (a path or "<stdin>").
[[nodiscard]] LockFile parse_lock_file(std::string_view text, std::string_view source_name);
[[nodiscard]] LockFile read_lock_file(const std::filesystem::path& file);
// The engine's header line ("tofu init" or "terraform init") then the blocks. Versions and
// constraints are written canonically; an address that is not fully-qualified and normalised,
// a duplicate address or a hash without "scheme:" is an Error (the engines would reject it).
[[nodiscard]] std::string render_lock_file(const LockFile& lock, Engine engine);

}  // namespace podplane::lockfile
