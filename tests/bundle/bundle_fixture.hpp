#pragma once
// Synthetic stores for the bundle tests, filled through the Store API: a provider release
// (SHA256SUMS, signature, keys, zips for several platforms with provenance), a module tree,
// a vmconfig manifest and artifact, and a TfSelection.
#include <filesystem>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle::test {

namespace fs = std::filesystem;

inline const std::vector<std::string> kPlatforms = {"darwin_arm64", "linux_amd64", "linux_arm64"};

// Deterministic pseudo-random bytes (so two fills give the same store content).
std::string synthetic_bytes(const std::string& seed, std::size_t size);

// Adds provider `type` `version` for `platforms`, each zip `zip_size` bytes; returns package digests.
// The rows' added_at (which a bundle's created_at follows) is `added_at`, or a fixed day by default.
std::vector<std::string> add_provider(cache::Store& store, const std::string& type, const std::string& version,
                                      const std::vector<std::string>& platforms, std::size_t zip_size,
                                      const std::string& added_at = "");
void add_module(cache::Store& store, const std::string& version);
void add_vmconfig(cache::Store& store);
void set_selection(cache::Store& store, const std::string& aws_version);

// The whole fixture: aws 6.2.0 (3 platforms), random 3.7.1 (3 platforms), nstance 2.0.1, vmconfig.
void fill_store(cache::Store& store, std::size_t zip_size = 20000);

// Every object file under the deps root hashes to its name (no unverified byte got in).
void expect_objects_intact(const fs::path& deps_root);
// Sorted "kind address version platform filename digest" lines of the index.
std::vector<std::string> artifact_lines(const cache::Store& store);
std::vector<std::string> module_lines(const cache::Store& store);

// The transfer report's judge: the CycloneDX library's strict validator for spec 1.6
// (tests/tools/cyclonedx/validate.js, its npm packages installed by scripts/setup) run on
// `report`; it prints "valid" and exits 0 when the document passes. The library's folder:
// a test asserts it is there (no silent skip) before it validates.
fs::path cyclonedx_library();
podplane::test::ProcessResult validate_cyclonedx(const fs::path& report);

}  // namespace podplane::bundle::test
