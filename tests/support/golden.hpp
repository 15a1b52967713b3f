#pragma once
// Golden files: the exact bytes a writer must produce, kept under tests/data/ and compared
// byte for byte. This is the only place that reads the update switch: with
// PODPLANE_UPDATE_GOLDEN=1 (exactly "1") the comparisons rewrite the files instead (then
// review `git diff tests/data` and commit); any other value, or any other variable, compares
// as usual. A missing golden file is a test failure that prints the command creating it.
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace podplane::test {

// True only when PODPLANE_UPDATE_GOLDEN is exactly "1".
bool updating_golden();

// `actual` against tests/data/<name> ("bundle/manifest.json"), or rewrites that file.
void expect_golden(const std::filesystem::path& name, std::string_view actual);

// A directory of golden files (file name → bytes) against tests/data/<name>/: the same names
// and the same bytes. Updating replaces the directory's files as a whole.
void expect_golden_dir(const std::filesystem::path& name, const std::map<std::string, std::string>& files);

// The same two at an explicit path (the helper's own tests use a temp dir).
void expect_golden_at(const std::filesystem::path& file, std::string_view actual);
void expect_golden_dir_at(const std::filesystem::path& dir, const std::map<std::string, std::string>& files);

// The command that rewrites the golden files of the running test:
// PODPLANE_UPDATE_GOLDEN=1 <this test binary> --gtest_filter=<Suite>.<Test>
std::string golden_update_command();

}  // namespace podplane::test
