#pragma once
// Engine releases kept in the store (docs/tools.md): the terraform and tofu release zips, their
// upstream SHA256SUMS and its detached OpenPGP signature, checked against the release key each
// project publishes (pinned here) whenever they are fetched, imported or verified
// (cache/recheck.hpp). Pure functions over bytes; errors are podplane::Error naming the file.
#include <string>
#include <string_view>
#include <vector>

#include "cache/openpgp.hpp"
#include "lockfile/platform.hpp"

namespace podplane::cache {

// "terraform_1.9.8_linux_amd64.zip", as both projects name their release zips.
[[nodiscard]] std::string tool_archive_name(lockfile::Engine engine, std::string_view version, std::string_view platform);
// "terraform_1.9.8_SHA256SUMS".
[[nodiscard]] std::string tool_shasums_name(lockfile::Engine engine, std::string_view version);
// The detached signature over it: "terraform_1.9.8_SHA256SUMS.sig" (HashiCorp),
// "tofu_1.8.5_SHA256SUMS.gpgsig" (OpenTofu; its ".sig" is a cosign signature).
[[nodiscard]] std::string tool_signature_name(lockfile::Engine engine, std::string_view version);
// The program inside the zip: "terraform" or "tofu".
[[nodiscard]] std::string_view tool_binary_name(lockfile::Engine engine);

// The fingerprint of the key each project signs its releases with (HashiCorp's
// C874011F…72D7468F, OpenTofu's E3E6E43D…E5FD9F80), and the armored key itself.
[[nodiscard]] std::string_view pinned_tool_key_fingerprint(lockfile::Engine engine);
[[nodiscard]] std::string_view pinned_tool_key(lockfile::Engine engine);

// The armored keys a release of `engine` must be signed by, and whose they are: the pinned key,
// or, only when the test setting PODPLANE_TOOLS_KEYRING_FOR_TESTS names an armored key file,
// that file's keys instead (never a default: docs/tools.md). Error when that file cannot be read.
[[nodiscard]] cache::SigningKeys tool_signing_keys(lockfile::Engine engine);

// Verifies `signature` over `shasums` with tool_signing_keys(engine); returns the primary
// fingerprint of the key that signed. Error naming the SHA256SUMS file otherwise.
[[nodiscard]] std::string verify_tool_shasums(lockfile::Engine engine, std::string_view version, std::string_view shasums,
                                              std::string_view signature);

// The sha256 (lower-case hex) `shasums` lists for `filename`. Error naming the file when the
// document lists no such file or is malformed.
[[nodiscard]] std::string tool_listed_digest(const std::string& shasums, const std::string& filename,
                                             const std::string& shasums_name);

}  // namespace podplane::cache
