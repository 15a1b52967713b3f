#pragma once
// gocheck (tests/tools/gocheck): HashiCorp's and Go's own implementations, for cross-checks.
//   gocheck hashzip FILE | hashdir DIR    → prints the dirhash h1 on stdout
//   gocheck hclparse FILE...              → exit 0 if hclparse accepts every file, else
//                                           diagnostics on stderr and exit 1
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

namespace podplane::test {

// Path of the built gocheck binary (built before any test binary).
std::filesystem::path gocheck_binary();

// Runs `gocheck hclparse` on the files; exit_code 0 means HashiCorp's parser accepts them all.
ProcessResult gocheck_hclparse(const std::vector<std::filesystem::path>& files);
// `gocheck hclparse` on text written to a temp file named `name` under `dir`.
ProcessResult gocheck_hclparse_text(const std::filesystem::path& dir, const std::string& name, const std::string& text);
// dirhash.HashZip / HashDir with Hash1; throws std::runtime_error with Go's message on failure.
std::string gocheck_hashzip(const std::filesystem::path& zip);
std::string gocheck_hashdir(const std::filesystem::path& dir);

}  // namespace podplane::test
