#include "tests/support/golden.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "tests/support/test_support.hpp"

namespace podplane::test {

bool updating_golden() {
  const char* value = std::getenv("PODPLANE_UPDATE_GOLDEN");
  return value != nullptr && std::string_view(value) == "1";
}

std::string golden_update_command() {
  std::error_code ec;
  fs::path binary = fs::read_symlink("/proc/self/exe", ec);
  std::string command = "PODPLANE_UPDATE_GOLDEN=1 " + (ec ? std::string("<test binary>") : binary.string());
  if (const auto* test = ::testing::UnitTest::GetInstance()->current_test_info()) {
    command += " --gtest_filter='" + std::string(test->test_suite_name()) + "." + test->name() + "'";
  }
  return command;
}

void expect_golden(const fs::path& name, std::string_view actual) { expect_golden_at(test_data_dir() / name, actual); }

void expect_golden_dir(const fs::path& name, const std::map<std::string, std::string>& files) {
  expect_golden_dir_at(test_data_dir() / name, files);
}

void expect_golden_at(const fs::path& file, std::string_view actual) {
  if (updating_golden()) {
    write_file(file, std::string(actual));
    std::cout << "[ GOLDEN   ] wrote " << file.string() << "\n";
    return;
  }
  if (!fs::is_regular_file(file)) {
    ADD_FAILURE() << "golden file " << file.string() << " is missing; create it with\n  " << golden_update_command();
    return;
  }
  EXPECT_EQ(read_file(file), std::string(actual)) << "differs from the golden file " << file.string()
                                     << "\nIf the change is intended, rewrite it and review the diff:\n  "
                                     << golden_update_command();
}

void expect_golden_dir_at(const fs::path& dir, const std::map<std::string, std::string>& files) {
  if (updating_golden()) {
    fs::remove_all(dir);
    for (const auto& [name, content] : files) write_file(dir / name, content);
    std::cout << "[ GOLDEN   ] wrote " << files.size() << " files to " << dir.string() << "\n";
    return;
  }
  if (!fs::is_directory(dir)) {
    ADD_FAILURE() << "golden directory " << dir.string() << " is missing; create it with\n  " << golden_update_command();
    return;
  }
  std::map<std::string, std::string> expected;
  for (const auto& entry : fs::directory_iterator(dir)) expected[entry.path().filename().string()] = read_file(entry.path());
  for (const auto& [name, content] : expected) {
    auto it = files.find(name);
    if (it == files.end()) {
      ADD_FAILURE() << name << " is in the golden directory " << dir.string() << " but was not produced";
      continue;
    }
    EXPECT_EQ(content, it->second) << name << " differs from the golden file " << (dir / name).string()
                                   << "\nIf the change is intended, rewrite it and review the diff:\n  "
                                   << golden_update_command();
  }
  for (const auto& [name, content] : files) {
    if (!expected.count(name))
      ADD_FAILURE() << name << " was produced but is not in the golden directory " << dir.string()
                    << "; if it should be:\n  " << golden_update_command();
  }
}

}  // namespace podplane::test
