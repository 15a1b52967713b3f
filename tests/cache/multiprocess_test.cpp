// Several real processes on one store, and processes killed with SIGKILL mid-ingest.
// The store-stress helper (tests/tools/store-stress) pauses at a deterministic point and says
// so on stdout; the test reads that line and kills it there. No sleeps anywhere.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "cache/layout.hpp"
#include "cache/store.hpp"
#include "tests/cache/child_process.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::ChildProcess;
using test::TempDir;
using ::testing::HasSubstr;

fs::path stress_binary() { return test::build_dir() / "tests/tools/store-stress/store-stress"; }

std::vector<fs::path> temp_files(const fs::path& root) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(layout::temp_dir(root), ec), end; !ec && it != end; it.increment(ec)) files.push_back(it->path());
  return files;
}

test::ProcessResult podplane(const fs::path& root, const std::vector<std::string>& args) {
  test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = root.string();
  return test::run_podplane(args, options);
}

nlohmann::json verify_json(const fs::path& root, int expected_exit = 0) {
  auto result = podplane(root, {"deps", "verify", "--json"});
  EXPECT_EQ(result.exit_code, expected_exit) << result.out << result.err;
  return nlohmann::json::parse(result.out);
}

class MultiProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(stress_binary())) << "build the store-stress helper first: " << stress_binary();
    ASSERT_TRUE(fs::exists(test::podplane_binary())) << test::podplane_binary();
    root_ = dir_ / "deps";
  }
  std::unique_ptr<ChildProcess> start(const std::vector<std::string>& args, const std::string& name) {
    std::vector<std::string> argv{stress_binary().string(), root_.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<ChildProcess>(argv, dir_ / (name + ".stderr"));
  }
  TempDir dir_;
  fs::path root_;
};

TEST_F(MultiProcess, FourWritersIngestSharedAndOwnObjectsIntoOneStore) {
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(start({"--worker", std::to_string(i), "--shared", "200", "--unique", "200"}, "worker" + std::to_string(i)));
  }
  for (auto& worker : workers) worker->close_stdin();
  for (auto& worker : workers) {
    EXPECT_EQ(worker->wait(), 0) << test::read_file(worker->stderr_file());
  }

  auto report = verify_json(root_);
  EXPECT_TRUE(report["ok"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["objects_checked"], 1000) << "200 shared + 4 x 200 own objects, each once";
  EXPECT_EQ(report["artifacts_checked"], 1000);
  EXPECT_TRUE(report["problems"].empty()) << report.dump(2);
  EXPECT_TRUE(report["garbage"].empty()) << report.dump(2);
  EXPECT_TRUE(temp_files(root_).empty());

  Store store = Store::open(root_, Store::Access::read_only);
  auto artifacts = store.artifacts();
  ASSERT_EQ(artifacts.size(), 1000u);
  std::set<std::string> digests;
  for (const auto& a : artifacts) digests.insert(a.digest);
  EXPECT_EQ(digests.size(), 1000u);
  EXPECT_EQ(store.artifacts({.address = "stress-shared"}).size(), 200u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(store.artifacts({.address = "stress-worker-" + std::to_string(i)}).size(), 200u);
  int audits = 0;
  for (const auto& entry : store.audit_log()) audits += entry.action == "stress";
  EXPECT_EQ(audits, 4);
}

TEST_F(MultiProcess, SigkillMidWriteLeavesOnlyATempFileThatGcSweeps) {
  auto worker = start({"--worker", "k", "--unique", "5", "--pause-in-object", "2"}, "killed");
  ASSERT_EQ(worker->read_line(), "PAUSED") << test::read_file(worker->stderr_file());
  ASSERT_EQ(temp_files(root_).size(), 1u) << "the half-written object sits in store/tmp";
  worker->kill(SIGKILL);
  EXPECT_EQ(worker->wait(), -SIGKILL);

  auto report = verify_json(root_);
  EXPECT_TRUE(report["ok"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["artifacts_checked"], 2);
  ASSERT_EQ(report["garbage"].size(), 1u) << report.dump(2);
  EXPECT_THAT(report["garbage"][0].get<std::string>(), HasSubstr("temp file"));
  EXPECT_EQ(temp_files(root_).size(), 1u) << "verify only reads";

  auto dry = podplane(root_, {"deps", "gc", "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("would remove temp file"));
  EXPECT_EQ(temp_files(root_).size(), 1u) << "--dry-run removes nothing";

  auto gc = podplane(root_, {"deps", "gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("removed temp file"));
  EXPECT_TRUE(temp_files(root_).empty());
  auto after = verify_json(root_);
  EXPECT_TRUE(after["ok"].get<bool>());
  EXPECT_TRUE(after["garbage"].empty()) << after.dump(2);
  EXPECT_EQ(after["objects_checked"], 2);
}

TEST_F(MultiProcess, TheNextWritableOpenSweepsADeadWritersTempFile) {
  auto worker = start({"--worker", "k", "--unique", "3", "--pause-in-object", "0"}, "killed");
  ASSERT_EQ(worker->read_line(), "PAUSED") << test::read_file(worker->stderr_file());
  worker->kill(SIGKILL);
  EXPECT_EQ(worker->wait(), -SIGKILL);
  ASSERT_EQ(temp_files(root_).size(), 1u);
  Store store = Store::open(root_);
  EXPECT_TRUE(temp_files(root_).empty());
  EXPECT_TRUE(store.artifacts().empty());
  // The store still takes the object the dead process was writing.
  EXPECT_EQ(store.add_bytes("after the crash").size(), 64u);
}

TEST_F(MultiProcess, SigkillBetweenPublishAndRowLeavesAnUnreferencedObjectForGc) {
  auto worker = start({"--worker", "k", "--unique", "3", "--pause-after-commit", "1"}, "killed");
  std::string line = worker->read_line();
  ASSERT_THAT(line, ::testing::StartsWith("COMMITTED ")) << test::read_file(worker->stderr_file());
  std::string digest = line.substr(10);
  worker->kill(SIGKILL);
  EXPECT_EQ(worker->wait(), -SIGKILL);

  fs::path object;
  {
    Store store = Store::open(root_, Store::Access::read_only);
    object = store.object_path(digest);
    EXPECT_EQ(store.artifacts().size(), 1u);
  }
  ASSERT_TRUE(fs::exists(object));
  auto report = verify_json(root_);
  EXPECT_TRUE(report["ok"].get<bool>()) << report.dump(2);
  ASSERT_EQ(report["garbage"].size(), 1u) << report.dump(2);
  EXPECT_THAT(report["garbage"][0].get<std::string>(), HasSubstr("unreferenced object " + digest));

  auto gc = podplane(root_, {"deps", "gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_THAT(gc.out, HasSubstr("removed object " + digest));
  EXPECT_FALSE(fs::exists(object));
  auto after = verify_json(root_);
  EXPECT_TRUE(after["ok"].get<bool>()) << after.dump(2);
  EXPECT_TRUE(after["garbage"].empty()) << after.dump(2);
  EXPECT_EQ(after["artifacts_checked"], 1);
}

TEST_F(MultiProcess, ALiveWritersTempFileSurvivesOtherOpensAndGcWaitsForIt) {
  auto worker = start({"--worker", "live", "--unique", "3", "--pause-in-object", "1"}, "live");
  ASSERT_EQ(worker->read_line(), "PAUSED") << test::read_file(worker->stderr_file());
  { Store other = Store::open(root_); }
  EXPECT_EQ(temp_files(root_).size(), 1u) << "a live writer's temp file is not garbage";

  auto gc = podplane(root_, {"deps", "gc"});
  EXPECT_EQ(gc.exit_code, 1);
  EXPECT_THAT(gc.err, HasSubstr("another podplane process"));
  EXPECT_EQ(temp_files(root_).size(), 1u);

  worker->close_stdin();  // let it finish the object
  EXPECT_EQ(worker->wait(), 0) << test::read_file(worker->stderr_file());
  EXPECT_TRUE(temp_files(root_).empty());
  auto report = verify_json(root_);
  EXPECT_TRUE(report["ok"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["artifacts_checked"], 3);
  EXPECT_TRUE(report["garbage"].empty()) << report.dump(2);
}

}  // namespace
}  // namespace podplane::cache
