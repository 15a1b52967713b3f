// End to end through the podplane binary: keygen, create, inventory, verify, import, deltas,
// exit codes, an import racing a reader of the same store, an import killed after its first
// object and resumed, and an import without network.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
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
using podplane::test::show;
using podplane::test::TempDir;
using podplane::test::write_file;
namespace fs = std::filesystem;

ProcessOptions at(const fs::path& root) { return podplane::test::with_deps_root(root); }

// Imports `bundle` into offline() in a child podplane that the test hook `variable` (bundle/
// import.cpp) pauses at its point, and SIGKILLs it there. Returns what the hook announced, or
// "" (with a test failure) when the import ended before it got there.
std::string kill_import_at(const fs::path& offline, const std::string& bundle, const std::string& pub,
                           const char* variable, const fs::path& fifo) {
  EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // Open before the import starts, so the hook always finds its reader.
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  EXPECT_GE(reader, 0) << std::strerror(errno);
  pid_t pid = fork();
  EXPECT_GE(pid, 0);
  if (pid == 0) {
    setenv("PODPLANE_DEPS_CACHE_DIR", offline.c_str(), 1);
    setenv(variable, fifo.c_str(), 1);
    std::string binary = podplane::test::podplane_binary().string();
    execl(binary.c_str(), binary.c_str(), "--quiet", "bundle", "import", bundle.c_str(), "--trust", pub.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Readiness probe, bounded (120 s): the announcement, while the import is still running.
  std::string announced;
  bool exited = false;
  for (int i = 0; i < 600 && announced.find('\n') == std::string::npos && !exited; ++i) {
    pollfd ready{reader, POLLIN, 0};
    if (::poll(&ready, 1, 200) > 0 && (ready.revents & POLLIN)) {
      char buffer[256];
      ssize_t n = ::read(reader, buffer, sizeof buffer);
      if (n > 0) announced.append(buffer, static_cast<std::size_t>(n));
    }
    exited = ::waitpid(pid, nullptr, WNOHANG) == pid;
  }
  if (!exited) ::kill(pid, SIGKILL);
  int status = 0;
  if (!exited) ::waitpid(pid, &status, 0);
  ::close(reader);
  EXPECT_FALSE(exited) << "the import ended before it got to " << variable;
  EXPECT_TRUE(exited || (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  return exited ? std::string() : announced;
}

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
  // A newer version is not what the receiver pruned: none of the delta is older than its newest.
  EXPECT_NE(cut.out.find("of the delta, 0 item(s) (0 B) are versions older than the receiver's newest"), std::string::npos)
      << cut.out;
  EXPECT_LT(fs::file_size(delta), fs::file_size(bundle));
  auto apply = run_podplane({"bundle", "import", delta, "--trust", pub()}, at(offline()));
  ASSERT_EQ(apply.exit_code, 0) << show(apply);
  auto a = cache::Store::open(online());
  auto b = cache::Store::open(offline());
  EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(b));
}

// `inventory -o` replaces its file whole (temp beside it, synced, renamed): a target it cannot
// replace gets a clear error naming it and leaves nothing behind, and a second run replaces
// the first file in place.
TEST_F(BundleCli, InventoryOutputIsReplacedWholeOrLeftAsItWas) {
  const fs::path out = dir / "out";
  write_file(out / "kept", "old");  // a directory where the inventory should go
  auto refused = run_podplane({"bundle", "inventory", "-o", out.string()}, at(online()));
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_NE(refused.err.find("cannot replace " + out.string()), std::string::npos) << show(refused);
  EXPECT_EQ(podplane::test::read_file(out / "kept"), "old");
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << entry.path();

  const fs::path inventory = dir / "inventory.json";
  ASSERT_EQ(run_podplane({"bundle", "inventory", "-o", inventory.string()}, at(offline())).exit_code, 0);
  auto second = run_podplane({"bundle", "inventory", "-o", inventory.string()}, at(online()));
  ASSERT_EQ(second.exit_code, 0) << show(second);
  EXPECT_EQ(podplane::test::read_file(inventory), run_podplane({"bundle", "inventory"}, at(online())).out);
}

// An import killed after its rows committed and before it wrote their views: the next
// command to open the store, whichever it is (here `deps ls`, which only reads), writes the
// views first, so `deps verify` and a filesystem-mirror user find them without a re-import.
TEST_F(BundleCli, ImportKilledBeforeItsViewsHasThemWrittenByTheNextCommand) {
  const std::string bundle = (dir / "all.bundle").string();
  ASSERT_EQ(run_podplane({"bundle", "create", bundle, "--sign", key()}, at(online())).exit_code, 0);
  const std::string announced = kill_import_at(offline(), bundle, pub(), "PODPLANE_TEST_IMPORT_PAUSE_VIEWS", dir / "pause");
  ASSERT_EQ(announced, "rows committed\n");
  const fs::path lock = offline() / "tf" / ".terraform.lock.hcl";
  ASSERT_FALSE(fs::exists(lock)) << "killed before the views, yet they were written";
  ASSERT_FALSE(fs::is_empty(offline() / "store" / "views-pending")) << "the import left no mark";

  auto ls = run_podplane({"deps", "ls"}, at(offline()));
  ASSERT_EQ(ls.exit_code, 0) << show(ls);
  EXPECT_TRUE(fs::exists(lock));
  EXPECT_TRUE(fs::is_empty(offline() / "store" / "views-pending"));
  // (The fixture's packages carry no signing keys, which verify reports; no view is missing.)
  auto verify = run_podplane({"deps", "verify"}, at(offline()));
  std::istringstream lines(verify.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("problem:")) {
      EXPECT_EQ(line.find("view"), std::string::npos) << show(verify);
    }
  }
  EXPECT_NE(verify.out.find(" views, "), std::string::npos) << show(verify);

  // A completed import leaves no mark behind.
  auto again = run_podplane({"bundle", "import", bundle, "--trust", pub()}, at(offline()));
  ASSERT_EQ(again.exit_code, 0) << show(again);
  EXPECT_TRUE(fs::is_empty(offline() / "store" / "views-pending"));
}

// `-o` keeps what its target is: a FIFO gets the inventory in place (it stays a FIFO), `-` is
// standard output, and a symlink is written through and kept.
TEST_F(BundleCli, InventoryOutputKeepsAFifoAStdoutAndALink) {
  const std::string expected = run_podplane({"bundle", "inventory"}, at(online())).out;
  ASSERT_FALSE(expected.empty());

  auto to_stdout = run_podplane({"bundle", "inventory", "-o", "-"}, at(online()));
  ASSERT_EQ(to_stdout.exit_code, 0) << show(to_stdout);
  EXPECT_EQ(to_stdout.out, expected);
  EXPECT_FALSE(fs::exists(fs::current_path() / "-"));

  const fs::path fifo = dir / "inventory.pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // The reading end is open before podplane runs (so its open for writing never waits) and
  // is read once it has ended: an inventory fits in the pipe's buffer.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  auto to_fifo = run_podplane({"bundle", "inventory", "-o", fifo.string()}, at(online()));
  std::string through_fifo;
  char buffer[65536];
  for (ssize_t n; (n = ::read(reader, buffer, sizeof buffer)) > 0;) through_fifo.append(buffer, static_cast<std::size_t>(n));
  ::close(reader);
  ASSERT_EQ(to_fifo.exit_code, 0) << show(to_fifo);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced by a file";
  EXPECT_EQ(through_fifo, expected);

  write_file(dir / "kept" / "inventory.json", "old");
  fs::create_symlink(dir / "kept" / "inventory.json", dir / "inventory-link.json");
  auto through_link = run_podplane({"bundle", "inventory", "-o", (dir / "inventory-link.json").string()}, at(online()));
  ASSERT_EQ(through_link.exit_code, 0) << show(through_link);
  EXPECT_TRUE(fs::is_symlink(dir / "inventory-link.json"));
  EXPECT_EQ(podplane::test::read_file(dir / "kept" / "inventory.json"), expected);
}

// `bundle create` onto a device or FIFO (`bundle create /dev/null` as root) is refused before
// anything is written, and the node stays what it was.
TEST_F(BundleCli, CreateRefusesATargetThatIsNotAFile) {
  const fs::path fifo = dir / "volume.pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto refused = run_podplane({"bundle", "create", fifo.string()}, at(online()));
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_NE(refused.err.find("cannot write bundle volume " + fifo.string() + ": it exists and is not a regular file"),
            std::string::npos)
      << show(refused);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced by a file";
}

// A store whose index.db was deleted is not a new, empty store: its inventory would ask the
// online side for every object again. Refused, and no index is made.
TEST_F(BundleCli, InventoryOfAStoreThatLostItsIndexIsRefused) {
  const fs::path index = online() / "store" / "index.db";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(index.string() + suffix);
  auto inventory = run_podplane({"bundle", "inventory"}, at(online()));
  EXPECT_EQ(inventory.exit_code, 1) << show(inventory);
  EXPECT_NE(inventory.err.find("has lost its index: " + index.string() + " is missing while store/objects holds objects"),
            std::string::npos)
      << show(inventory);
  EXPECT_EQ(inventory.out, "");
  EXPECT_FALSE(fs::exists(index));
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
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    // v.bundle.NNN-of-NNN; beside them the transfer report, v.bundle.cdx.json and .report.html
    if (name.starts_with("v.bundle.") && name.find("-of-") != std::string::npos) volumes.push_back(entry.path().string());
  }
  std::sort(volumes.begin(), volumes.end());
  ASSERT_GE(volumes.size(), 3u);
  EXPECT_TRUE(fs::exists(dir / "v.bundle.cdx.json"));
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

// A SIGKILL at a known point: the import has committed its first object (published, in the
// objects table) and no row. The test-only hook PODPLANE_TEST_IMPORT_PAUSE (bundle/import.cpp)
// announces that object on a FIFO and holds the import there until the kill, so the rerun
// always takes the resume path: it skips that object and imports the rest.
TEST_F(BundleCliLarge, ImportKilledAfterItsFirstObjectResumes) {
  const std::string bundle = (dir / "big.bundle").string();
  ASSERT_EQ(run_podplane({"bundle", "create", bundle, "--sign", key()}, at(online())).exit_code, 0);
  const std::string announced = kill_import_at(offline(), bundle, pub(), "PODPLANE_TEST_IMPORT_PAUSE", dir / "pause");
  ASSERT_EQ(announced.size(), std::string("committed \n").size() + 64) << announced;
  const std::string first = announced.substr(10, 64);

  // Exactly that object arrived, whole, and no row did.
  test::expect_objects_intact(offline());
  {
    auto store = cache::Store::open(offline(), cache::Store::Access::read_only);
    EXPECT_TRUE(store.has_object(first));
    EXPECT_TRUE(store.artifacts().empty());
    EXPECT_TRUE(store.module_trees().empty());
  }
  std::size_t objects = 0;
  for (const auto& entry : fs::recursive_directory_iterator(offline() / "store" / "objects" / "sha256"))
    objects += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(objects, 1u);

  auto rerun = run_podplane({"bundle", "import", bundle, "--trust", pub()}, at(offline()));
  ASSERT_EQ(rerun.exit_code, 0) << show(rerun);
  EXPECT_NE(rerun.out.find(", 1 already present"), std::string::npos) << rerun.out;
  test::expect_objects_intact(offline());
  auto a = cache::Store::open(online());
  auto b = cache::Store::open(offline());
  EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(b));
  EXPECT_EQ(test::module_lines(a), test::module_lines(b));
  EXPECT_TRUE(fs::is_empty(offline() / "store" / "tmp"));
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
