// End to end through the podplane binary: keygen, create, inventory, verify, import, deltas,
// exit codes, an import racing a reader of the same store, and an import without network.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "cache/store.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::run;
using podplane::test::run_podplane;
using podplane::test::TempDir;
namespace fs = std::filesystem;

ProcessOptions at(const fs::path& root) {
  ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = root.string();
  return options;
}

std::string show(const ProcessResult& r) { return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err; }

class BundleCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = cache::Store::open(online());
    test::fill_store(store, zip_size());
    auto keygen = run_podplane({"bundle", "keygen", (dir / "site").string()});
    ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
  }
  virtual std::size_t zip_size() const { return 20000; }
  fs::path online() const { return dir / "online"; }
  fs::path offline() const { return dir / "offline"; }
  std::string key() const { return (dir / "site.key").string(); }
  std::string pub() const { return (dir / "site.pub").string(); }

  TempDir dir;
};

TEST_F(BundleCli, KeygenCreateVerifyImportAndDelta) {
  struct stat st {};
  ASSERT_EQ(::stat(key().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const std::string bundle = (dir / "site.bundle").string();
  auto create = run_podplane({"bundle", "create", bundle, "--sign", key()}, at(online()));
  ASSERT_EQ(create.exit_code, 0) << show(create);
  EXPECT_NE(create.out.find("in 1 volume(s)"), std::string::npos) << create.out;
  EXPECT_NE(create.out.find("signed"), std::string::npos);

  auto verify = run_podplane({"bundle", "verify", bundle, "--trust", pub()});
  ASSERT_EQ(verify.exit_code, 0) << show(verify);

  auto unsigned_import = run_podplane({"bundle", "import", bundle}, at(offline()));
  EXPECT_EQ(unsigned_import.exit_code, 1) << show(unsigned_import);
  EXPECT_NE(unsigned_import.out.find("untrusted key"), std::string::npos) << show(unsigned_import);

  auto import = run_podplane({"bundle", "import", bundle, "--trust", pub()}, at(offline()));
  ASSERT_EQ(import.exit_code, 0) << show(import);
  EXPECT_NE(import.out.find("imported"), std::string::npos);

  {
    auto a = cache::Store::open(online());
    auto b = cache::Store::open(offline());
    EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(b));
    test::add_provider(a, "aws", "6.3.0", test::kPlatforms, 20000);
  }

  const std::string inventory = (dir / "inventory.json").string();
  auto inv = run_podplane({"bundle", "inventory", "-o", inventory}, at(offline()));
  ASSERT_EQ(inv.exit_code, 0) << show(inv);
  const std::string delta = (dir / "delta.bundle").string();
  auto cut = run_podplane({"bundle", "create", delta, "--since", inventory, "--sign", key()}, at(online()));
  ASSERT_EQ(cut.exit_code, 0) << show(cut);
  EXPECT_NE(cut.out.find(" 5 objects"), std::string::npos) << cut.out;
  EXPECT_LT(fs::file_size(delta), fs::file_size(bundle));
  auto apply = run_podplane({"bundle", "import", delta, "--trust", pub()}, at(offline()));
  ASSERT_EQ(apply.exit_code, 0) << show(apply);
  auto a = cache::Store::open(online());
  auto b = cache::Store::open(offline());
  EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(b));
}

TEST_F(BundleCli, ExitCodesForUsageAndDamage) {
  auto bad_size = run_podplane({"bundle", "create", (dir / "x").string(), "--volume-size", "12X"}, at(online()));
  EXPECT_EQ(bad_size.exit_code, 2) << show(bad_size);
  auto missing = run_podplane({"bundle", "verify", (dir / "nope").string()});
  EXPECT_EQ(missing.exit_code, 1) << show(missing);
  auto no_args = run_podplane({"bundle", "import"}, at(offline()));
  EXPECT_EQ(no_args.exit_code, 2) << show(no_args);
}

TEST_F(BundleCli, VolumesThroughTheBinary) {
  const std::string bundle = (dir / "v.bundle").string();
  auto create = run_podplane({"bundle", "create", bundle, "--sign", key(), "--volume-size", "40K"}, at(online()));
  ASSERT_EQ(create.exit_code, 0) << show(create);
  std::vector<std::string> volumes;
  for (const auto& entry : fs::directory_iterator(dir.path()))
    if (entry.path().filename().string().rfind("v.bundle.", 0) == 0) volumes.push_back(entry.path().string());
  std::sort(volumes.begin(), volumes.end());
  ASSERT_GE(volumes.size(), 3u);
  EXPECT_NE(volumes[0].find(".001-of-"), std::string::npos);
  // All but the first: the report names the missing volume and exits 1.
  std::vector<std::string> args = {"bundle", "import", "--trust", pub()};
  args.insert(args.end(), volumes.rbegin(), volumes.rend() - 1);
  auto partial = run_podplane(args, at(offline()));
  EXPECT_EQ(partial.exit_code, 1) << show(partial);
  EXPECT_NE(partial.out.find("missing: volume 1 of " + std::to_string(volumes.size())), std::string::npos) << partial.out;
  auto rest = run_podplane({"bundle", "import", "--trust", pub(), volumes[0]}, at(offline()));
  EXPECT_EQ(rest.exit_code, 0) << show(rest);
}

class BundleCliLarge : public BundleCli {
 protected:
  std::size_t zip_size() const override { return 3 << 20; }
};

TEST_F(BundleCliLarge, ImportWhileAnotherProcessReadsTheStore) {
  const std::string bundle = (dir / "big.bundle").string();
  ASSERT_EQ(run_podplane({"bundle", "create", bundle, "--sign", key()}, at(online())).exit_code, 0);
  // The offline store exists before the reader starts, as on a real site.
  ASSERT_EQ(run_podplane({"bundle", "inventory"}, at(offline())).exit_code, 0);

  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, failures{0};
  std::string failure;
  std::thread reader([&] {
    // Bounded: at most 200 reads, and it stops once the import has finished.
    for (int i = 0; i < 200 && !done; ++i) {
      // Two kinds of reader: the index listing and the inventory (index + every object).
      auto r = i % 2 == 0 ? run_podplane({"deps", "ls"}, at(offline())) : run_podplane({"bundle", "inventory"}, at(offline()));
      ++reads;
      if (r.exit_code != 0) {
        ++failures;
        failure = show(r);
      }
    }
  });
  auto import = run_podplane({"bundle", "import", bundle, "--trust", pub()}, at(offline()));
  done = true;
  reader.join();
  ASSERT_EQ(import.exit_code, 0) << show(import);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(failures.load(), 0) << failure;
  auto after = run_podplane({"bundle", "inventory"}, at(offline()));
  ASSERT_EQ(after.exit_code, 0);
  auto b = cache::Store::open(offline());
  auto a = cache::Store::open(online());
  EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(b));
}

TEST_F(BundleCliLarge, ImportKilledMidwayResumes) {
  const std::string bundle = (dir / "big.bundle").string();
  ASSERT_EQ(run_podplane({"bundle", "create", bundle, "--sign", key()}, at(online())).exit_code, 0);
  const fs::path objects = offline() / "store" / "objects" / "sha256";
  auto object_count = [&] {
    std::error_code ec;
    std::size_t n = 0;
    if (!fs::exists(objects, ec)) return n;
    for (auto it = fs::recursive_directory_iterator(objects, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      n += it->is_regular_file() ? 1 : 0;
    return n;
  };
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("PODPLANE_DEPS_CACHE_DIR", offline().c_str(), 1);
    std::string binary = podplane::test::podplane_binary().string();
    execl(binary.c_str(), binary.c_str(), "--quiet", "bundle", "import", bundle.c_str(), "--trust", pub().c_str(), (char*)nullptr);
    _exit(127);
  }
  // Readiness probe, bounded: kill as soon as the first object is published.
  for (int i = 0; i < 20000 && object_count() == 0; ++i) ::usleep(500);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const bool killed = WIFSIGNALED(status);
  std::cout << "[  NOTE    ] import " << (killed ? "killed" : "finished before the kill") << " with " << object_count()
            << " objects published\n";
  test::expect_objects_intact(offline());
  auto rerun = run_podplane({"bundle", "import", bundle, "--trust", pub()}, at(offline()));
  ASSERT_EQ(rerun.exit_code, 0) << show(rerun);
  test::expect_objects_intact(offline());
  auto a = cache::Store::open(online());
  auto b = cache::Store::open(offline());
  EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(b));
  EXPECT_TRUE(fs::is_empty(offline() / "store" / "tmp")) << "the killed writer's temp file was not swept";
}

TEST_F(BundleCli, ImportWithoutAnyNetwork) {
  const std::string bundle = (dir / "n.bundle").string();
  ASSERT_EQ(run_podplane({"bundle", "create", bundle, "--sign", key()}, at(online())).exit_code, 0);
  auto probe = run({"unshare", "-rn", "true"});
  ProcessOptions options = at(offline());
  // Every proxy variable points at a closed port: a connection attempt could not succeed either way.
  for (const char* name : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"})
    options.env[name] = "http://127.0.0.1:9";
  ProcessResult import;
  if (probe.exit_code == 0) {
    import = run({"unshare", "-rn", podplane::test::podplane_binary().string(), "bundle", "import", bundle, "--trust", pub()}, options);
  } else {
    std::cout << "[  NOTE    ] unshare -rn refused by this kernel (" << probe.err
              << "); importing with proxies pointed at a closed port instead\n";
    import = run_podplane({"bundle", "import", bundle, "--trust", pub()}, options);
  }
  ASSERT_EQ(import.exit_code, 0) << show(import);
  auto a = cache::Store::open(online());
  auto b = cache::Store::open(offline());
  EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(b));
}

}  // namespace
}  // namespace podplane::bundle
