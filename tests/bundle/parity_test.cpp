// Parity through the binary, with Debian's real par2 and real volumes on disk: a bundle cut
// into volumes with `--parity 25` survives a damaged and a deleted volume, refuses to import
// when half of them are gone (the store as it was), `bundle verify` says what is damaged and
// whether it can be repaired, hostile or broken parity files are refused before par2 runs, and
// without par2 installed only a needed repair fails, naming the package.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <regex>

#include "base/digest.hpp"
#include "cache/store.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

using podplane::test::ProcessOptions;
using podplane::test::run_podplane;
using podplane::test::show;
using podplane::test::TempDir;
namespace fs = std::filesystem;

// What `podplane bundle import DIR/NAME*` hands over: every file of DIR whose name starts with
// NAME, sorted, as a shell glob would.
std::vector<std::string> glob(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().starts_with(prefix)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Every regular file under `root` with its sha256: what "the store is unchanged" compares.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  if (!fs::exists(root)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file()) files[fs::relative(entry.path(), root).string()] = file_digest_hex(entry.path());
  return files;
}

void flip_bytes_in_the_middle(const fs::path& file) {
  std::string bytes = podplane::test::read_file(file);
  ASSERT_GT(bytes.size(), 200u);
  for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i) bytes[i] = static_cast<char>(~bytes[i]);
  podplane::test::write_file(file, bytes);
}

class BundleParity : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(podplane::test::have_program("par2")) << "par2 is not installed: run scripts/setup";
    auto store = cache::Store::open(online());
    test::fill_store(store);
    // Enough objects for 6 and more volumes of 48 KiB.
    test::add_provider(store, "tls", "4.0.0", test::kPlatforms, 20000);
    test::add_provider(store, "local", "2.5.1", test::kPlatforms, 20000);
    ASSERT_EQ(run_podplane({"bundle", "keygen", (dir / "site").string()}).exit_code, 0);
  }
  fs::path online() const { return dir / "online"; }
  fs::path media() const { return dir / "media"; }
  std::string bundle() const { return (media() / "deps.bundle").string(); }
  std::string key() const { return (dir / "site.key").string(); }
  std::string pub() const { return (dir / "site.pub").string(); }
  ProcessOptions at(const fs::path& root) const {
    ProcessOptions options = podplane::test::with_deps_root(root);
    options.env["TMPDIR"] = scratch().string();  // where par2 rebuilds: checked empty after each run
    return options;
  }
  fs::path scratch() const { return dir / "tmp"; }

  // The fixture store cut into 48 KiB volumes, signed, with 25% parity: the volume names.
  std::vector<fs::path> create_with_parity() {
    fs::create_directories(media());
    fs::create_directories(scratch());
    // Named relative to the working directory, as people type it.
    ProcessOptions in_media = at(online());
    in_media.cwd = media();
    auto create = run_podplane({"bundle", "create", "deps.bundle", "--sign", key(), "--volume-size", "48K", "--parity", "25"},
                               in_media);
    EXPECT_EQ(create.exit_code, 0) << show(create);
    std::vector<fs::path> volumes;
    for (const auto& file : glob(media(), "deps.bundle."))
      if (std::regex_match(fs::path(file).filename().string(), std::regex(R"(deps\.bundle\.\d{3}-of-\d{3})")))
        volumes.push_back(file);
    EXPECT_GE(volumes.size(), 6u) << "the fixture should cut into at least 6 volumes";
    EXPECT_TRUE(fs::exists(media() / "deps.bundle.par2")) << show(create);
    EXPECT_FALSE(glob(media(), "deps.bundle.vol").empty()) << show(create);
    return volumes;
  }

  void expect_scratch_empty() const {
    for (const auto& entry : fs::directory_iterator(scratch())) ADD_FAILURE() << "left in the scratch dir: " << entry.path();
  }

  TempDir dir;
};

// One volume damaged in its middle and another deleted: import rebuilds both from parity and
// imports every row a clean import gives, leaving the media as they were.
TEST_F(BundleParity, ImportRepairsADamagedAndADeletedVolume) {
  auto volumes = create_with_parity();
  ASSERT_GE(volumes.size(), 6u);
  // Debian's own par2 reads the media as they lie, run in their directory as docs/bundle-format.md says.
  auto par2_in = [&](const fs::path& where, const std::string& action) {
    ProcessOptions options;
    options.cwd = where;
    options.env["OMP_WAIT_POLICY"] = "passive";
    return podplane::test::run({"par2", action, "deps.bundle.par2"}, options);
  };
  auto checked = par2_in(media(), "verify");
  EXPECT_EQ(checked.exit_code, 0) << show(checked);
  EXPECT_NE(checked.out.find("All files are correct, repair is not required."), std::string::npos) << show(checked);
  for (const auto& v : volumes)
    EXPECT_NE(checked.out.find("Target: \"" + v.filename().string() + "\" - found."), std::string::npos) << show(checked);
  const auto volumes_as_made = snapshot(media());
  std::vector<std::string> intact{"bundle", "import"};
  for (const auto& v : volumes) intact.push_back(v.string());
  intact.insert(intact.end(), {"--trust", pub()});
  auto whole = run_podplane(intact, at(dir / "clean"));
  ASSERT_EQ(whole.exit_code, 0) << show(whole);

  flip_bytes_in_the_middle(volumes[1]);
  fs::remove(volumes[3]);
  const auto media_before = snapshot(media());
  std::vector<std::string> args{"bundle", "import"};
  for (const auto& file : glob(media(), "deps.bundle")) args.push_back(file);
  args.insert(args.end(), {"--trust", pub()});
  auto repaired = run_podplane(args, at(dir / "repaired"));
  ASSERT_EQ(repaired.exit_code, 0) << show(repaired);
  const std::string damaged = volumes[1].filename().string(), deleted = volumes[3].filename().string();
  EXPECT_NE(repaired.out.find(damaged + " damaged, " + deleted + " missing: repaired from parity"), std::string::npos)
      << show(repaired);
  EXPECT_NE(repaired.out.find(volumes[1].string() + " (damaged, rebuilt from parity): volume 2 of"), std::string::npos)
      << show(repaired);
  EXPECT_NE(repaired.out.find(volumes[3].string() + " (missing, rebuilt from parity): volume 4 of"), std::string::npos)
      << show(repaired);

  auto a = cache::Store::open(dir / "clean");
  auto b = cache::Store::open(dir / "repaired");
  EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(b));
  EXPECT_EQ(test::module_lines(a), test::module_lines(b));
  EXPECT_EQ(test::artifact_lines(a), test::artifact_lines(cache::Store::open(online())));
  test::expect_objects_intact(dir / "repaired");
  // The media were only read: the damaged volume is still damaged, the deleted one still gone,
  // nothing was added beside them; the rebuilt volumes lived in the scratch dir, now removed.
  EXPECT_EQ(snapshot(media()), media_before);
  expect_scratch_empty();

  // Named relative to the working directory, as people type them: the rebuilt volume is
  // named like the others, with no "./" before it.
  ProcessOptions in_media = at(dir / "unused");
  in_media.cwd = media();
  std::vector<std::string> relative{"bundle", "verify", "--trust", pub()};
  for (const auto& file : glob(media(), "deps.bundle")) relative.push_back(fs::path(file).filename().string());
  auto verified = run_podplane(relative, in_media);
  EXPECT_EQ(verified.exit_code, 0) << show(verified);
  EXPECT_NE(verified.out.find("\n" + deleted + " (missing, rebuilt from parity): volume 4 of"), std::string::npos)
      << show(verified);
  EXPECT_EQ(verified.out.find("./"), std::string::npos) << show(verified);

  // par2 repair of a copy of the media restores both volumes byte for byte.
  fs::copy(media(), dir / "copy");
  auto repair = par2_in(dir / "copy", "repair");
  EXPECT_EQ(repair.exit_code, 0) << show(repair);
  EXPECT_NE(repair.out.find("Repair complete."), std::string::npos) << show(repair);
  for (const auto& v : volumes)
    EXPECT_EQ(file_digest_hex(dir / "copy" / v.filename()), volumes_as_made.at(v.filename().string())) << v;
}

// Half the volumes gone is more than 25% parity covers: import refuses the bundle, names the
// lost volumes, and the store's files are exactly as before (and a new store is not made).
TEST_F(BundleParity, HalfTheVolumesLostIsRefusedAndTheStoreIsUnchanged) {
  auto volumes = create_with_parity();
  ASSERT_GE(volumes.size(), 6u);
  // A store that already holds something else, so that "nothing added" means something.
  {
    TempDir other;
    auto store = cache::Store::open(other / "root");
    test::add_provider(store, "null", "3.2.0", {"linux_amd64"}, 5000);
    const std::string small = (dir / "small.bundle").string();
    ASSERT_EQ(run_podplane({"bundle", "create", small, "--sign", key()}, at(other / "root")).exit_code, 0);
    ASSERT_EQ(run_podplane({"bundle", "import", small, "--trust", pub()}, at(dir / "offline")).exit_code, 0);
  }
  std::vector<std::string> lost;
  for (std::size_t i = 0; i < volumes.size(); i += 2) {
    fs::remove(volumes[i]);
    lost.push_back(volumes[i].filename().string());
  }
  const auto store_before = snapshot(dir / "offline");
  ASSERT_FALSE(store_before.empty());
  std::vector<std::string> args{"bundle", "import"};
  for (const auto& file : glob(media(), "deps.bundle")) args.push_back(file);
  args.insert(args.end(), {"--trust", pub()});
  auto refused = run_podplane(args, at(dir / "offline"));
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  for (const auto& name : lost) EXPECT_NE(refused.out.find("lost: " + name + " (missing)"), std::string::npos) << show(refused);
  EXPECT_NE(refused.out.find("NOT repairable from parity (par2: You need "), std::string::npos) << show(refused);
  // The volumes that are here are whole: counted as held back with their bundle, not as refused or damaged.
  EXPECT_NE(refused.err.find("incomplete: 0 volume(s) refused or damaged, 0 volume(s) missing, 0 row(s) waiting for objects; " +
                             std::to_string(lost.size()) + " volume(s) lost that parity cannot rebuild, so the " +
                             std::to_string(volumes.size() - lost.size()) +
                             " volume(s) of their bundle given with them were not imported"),
            std::string::npos)
      << show(refused);
  EXPECT_EQ(snapshot(dir / "offline"), store_before);

  auto fresh = run_podplane(args, at(dir / "fresh"));
  EXPECT_EQ(fresh.exit_code, 1) << show(fresh);
  EXPECT_FALSE(fs::exists(dir / "fresh")) << "a refused import made a store";
  expect_scratch_empty();

  // Without parity the volumes that are here import as they always did (the rest reported).
  args.push_back("--no-parity");
  auto partial = run_podplane(args, at(dir / "partial"));
  EXPECT_EQ(partial.exit_code, 1) << show(partial);
  EXPECT_NE(partial.out.find("note: parity files not used (--no-parity)"), std::string::npos) << show(partial);
  EXPECT_NE(partial.out.find("missing: volume 1 of"), std::string::npos) << show(partial);
}

// verify names the damaged and the missing volumes and says whether parity can rebuild them:
// yes (exit 0, the rebuilt volumes verified), and no once half of them are gone (exit 1).
TEST_F(BundleParity, VerifySaysWhatIsDamagedOrMissingAndWhetherItIsRepairable) {
  auto volumes = create_with_parity();
  ASSERT_GE(volumes.size(), 6u);
  auto verify = [&] {
    std::vector<std::string> args{"bundle", "verify"};
    for (const auto& file : glob(media(), "deps.bundle")) args.push_back(file);
    args.insert(args.end(), {"--trust", pub()});
    return run_podplane(args, at(dir / "unused"));
  };
  auto whole = verify();
  ASSERT_EQ(whole.exit_code, 0) << show(whole);
  EXPECT_NE(whole.out.find("parity: bundle deps.bundle: " + std::to_string(volumes.size()) +
                           " volume(s) covered by"),
            std::string::npos)
      << show(whole);
  EXPECT_NE(whole.out.find("all whole (each of the size and MD5 the parity set describes)"), std::string::npos)
      << show(whole);

  flip_bytes_in_the_middle(volumes[2]);
  fs::remove(volumes[0]);
  auto repairable = verify();
  EXPECT_EQ(repairable.exit_code, 0) << show(repairable);
  EXPECT_NE(repairable.out.find(volumes[2].filename().string() + " damaged, " + volumes[0].filename().string() +
                                " missing: repairable from parity"),
            std::string::npos)
      << show(repairable);
  EXPECT_NE(repairable.out.find(volumes[2].string() + " (damaged, rebuilt from parity): volume 3 of"), std::string::npos)
      << show(repairable);

  // Read without parity, a volume missing from the media is named as not given (verify has no store).
  std::vector<std::string> without{"bundle", "verify", "--no-parity", "--trust", pub()};
  for (std::size_t i = 1; i < volumes.size(); ++i) without.push_back(volumes[i].string());
  auto unrepaired = run_podplane(without, at(dir / "unused"));
  EXPECT_EQ(unrepaired.exit_code, 1) << show(unrepaired);
  EXPECT_NE(unrepaired.out.find("missing: volume 1 of " + std::to_string(volumes.size()) + " of bundle "), std::string::npos)
      << show(unrepaired);
  EXPECT_NE(unrepaired.out.find(" was not among the files given: its objects were not verified"), std::string::npos)
      << show(unrepaired);

  for (std::size_t i = 1; i < volumes.size(); i += 2) fs::remove(volumes[i]);
  auto lost = verify();
  EXPECT_EQ(lost.exit_code, 1) << show(lost);
  EXPECT_NE(lost.out.find("NOT repairable from parity"), std::string::npos) << show(lost);
  EXPECT_NE(lost.out.find("lost: " + volumes[2].filename().string() + " (damaged)"), std::string::npos) << show(lost);
  EXPECT_NE(lost.out.find("lost: " + volumes[1].filename().string() + " (missing)"), std::string::npos) << show(lost);
  // The damaged volume that is here is still read, and found damaged.
  EXPECT_NE(lost.out.find(volumes[2].string() + ": volume 3 of"), std::string::npos) << show(lost);
  expect_scratch_empty();
}

// Volumes differ in size (objects are never split across them): 25% of the whole cannot rebuild
// the volume that holds the one large object. create says how large a lost volume its parity
// rebuilds, warns naming the volume it cannot, still exits 0, and names the --parity that
// covers every volume; both claims hold when that volume is lost.
TEST_F(BundleParity, CreateWarnsOfAVolumeTooLargeForItsParityAndNamesThePercentThatCoversIt) {
  fs::create_directories(scratch());
  {
    auto store = cache::Store::open(dir / "uneven");
    test::add_provider(store, "big", "1.0.0", {"linux_amd64"}, 1000000);
    test::add_provider(store, "small", "1.0.0", test::kPlatforms, 60000);
  }
  auto create = [&](const fs::path& where, const std::string& percent) {
    fs::create_directories(where);
    return run_podplane({"bundle", "create", (where / "u.bundle").string(), "--sign", key(), "--volume-size", "1000K",
                         "--parity", percent},
                        at(dir / "uneven"));
  };
  // The volumes in `where`, largest first.
  auto volumes_in = [&](const fs::path& where) {
    std::vector<fs::path> volumes;
    for (const auto& file : glob(where, "u.bundle."))
      if (!file.ends_with(".par2") && file.find("-of-") != std::string::npos) volumes.emplace_back(file);
    std::sort(volumes.begin(), volumes.end(), [](const auto& a, const auto& b) { return fs::file_size(a) > fs::file_size(b); });
    return volumes;
  };
  auto verify_without = [&](const fs::path& where, const fs::path& lost) {
    std::vector<std::string> args{"bundle", "verify", "--trust", pub()};
    for (const auto& file : glob(where, "u.bundle"))
      if (file != lost.string()) args.push_back(file);
    return run_podplane(args, at(dir / "unused"));
  };

  auto uneven = create(dir / "at25", "25");
  ASSERT_EQ(uneven.exit_code, 0) << show(uneven);
  const auto volumes = volumes_in(dir / "at25");
  ASSERT_GE(volumes.size(), 2u) << show(uneven);
  EXPECT_NE(uneven.out.find("parity: rebuilds any one lost volume of up to "), std::string::npos) << show(uneven);
  std::smatch warning;
  ASSERT_TRUE(std::regex_search(uneven.err, warning,
                                std::regex(R"(podplane: warning: 25% parity cannot rebuild (\S+) if lost: .*; --parity (\d+) )"
                                           R"(rebuilds any one lost volume)")))
      << show(uneven);
  EXPECT_EQ(warning[1].str(), volumes[0].filename().string()) << show(uneven);
  const std::string covering = warning[2].str();
  EXPECT_GT(std::stoi(covering), 25);
  auto largest_lost = verify_without(dir / "at25", volumes[0]);
  EXPECT_EQ(largest_lost.exit_code, 1) << show(largest_lost);
  EXPECT_NE(largest_lost.out.find("NOT repairable from parity"), std::string::npos) << show(largest_lost);
  auto smallest_lost = verify_without(dir / "at25", volumes.back());
  EXPECT_EQ(smallest_lost.exit_code, 0) << show(smallest_lost);

  auto covered = create(dir / "covered", covering);
  ASSERT_EQ(covered.exit_code, 0) << show(covered);
  EXPECT_EQ(covered.err.find("warning"), std::string::npos) << show(covered);
  auto rebuilt = verify_without(dir / "covered", volumes_in(dir / "covered").front());
  EXPECT_EQ(rebuilt.exit_code, 0) << show(rebuilt);
  EXPECT_NE(rebuilt.out.find("missing: repairable from parity"), std::string::npos) << show(rebuilt);
  expect_scratch_empty();
}

// The 16-byte set id of the recovery set in `par2_file` (its first packet's header).
std::string set_id_of(const fs::path& par2_file) { return podplane::test::read_file(par2_file).substr(32, 16); }

// A PAR2 packet with a correct MD5, as par2 would accept it.
std::string packet(const std::string& set_id, const std::string& type, std::string body) {
  while (body.size() % 4 != 0) body.push_back('\0');
  auto le = [](std::uint64_t value, int size) {
    std::string bytes;
    for (int i = 0; i < size; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    return bytes;
  };
  std::string hashed = set_id + type + body;
  Hasher md5(DigestAlgorithm::md5);
  md5.update(hashed);
  return std::string("PAR2\0PKT", 8) + le(64 + body.size(), 8) + md5.finish_raw() + hashed;
}

// Parity files are hostile input: a description that names a path out of the bundle's
// directory, hidden after garbage in a recovery file; a parity set of another file renamed to
// the bundle's name; parity files that are all garbage; a FIFO named as a parity file. Each is
// refused with a clear error before par2 runs, and nothing changes: no store, the media as
// they were. --no-parity still reads the volumes.
TEST_F(BundleParity, HostileOrBrokenParityFilesAreRefusedAndChangeNothing) {
  auto volumes = create_with_parity();
  ASSERT_GE(volumes.size(), 6u);
  flip_bytes_in_the_middle(volumes[1]);  // so that a repair would be needed
  std::vector<std::string> args{"bundle", "import"};
  for (const auto& v : volumes) args.push_back(v.string());
  args.insert(args.end(), {"--trust", pub()});
  auto expect_refused = [&](const std::string& fragment) {
    const auto media_before = snapshot(media());
    auto refused = run_podplane(args, at(dir / "offline"));
    EXPECT_EQ(refused.exit_code, 1) << show(refused);
    EXPECT_NE(refused.err.find(fragment), std::string::npos) << show(refused);
    EXPECT_FALSE(fs::exists(dir / "offline")) << show(refused);
    EXPECT_EQ(snapshot(media()), media_before);
    expect_scratch_empty();
  };

  const fs::path hostile = media() / "deps.bundle.vol999+001.par2";
  const std::string id = set_id_of(media() / "deps.bundle.par2");
  std::string description = std::string(16, 'F') + std::string(32, '\0') + std::string("\x10\0\0\0\0\0\0\0", 8) + "../../escape";
  podplane::test::write_file(hostile, "garbage before the packet" + packet(id, std::string("PAR 2.0\0FileDesc", 16), description));
  expect_refused("claims a file that is not a volume of bundle deps.bundle: refused before par2 runs\n"
                 "  expected: 'deps.bundle' or 'deps.bundle.NNN-of-MMM'\n  got:      '../../escape'");
  fs::remove(hostile);

  // A real par2 set, made for another file and renamed to this bundle's names.
  const fs::path elsewhere = dir / "elsewhere";
  podplane::test::write_file(elsewhere / "passwd", std::string(4000, 'x'));
  ProcessOptions quiet_threads;
  quiet_threads.env["OMP_WAIT_POLICY"] = "passive";
  auto made = podplane::test::run(
      {"par2", "create", "-q", "-b16", "-r10", (elsewhere / "passwd.par2").string(), (elsewhere / "passwd").string()},
      quiet_threads);
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  std::vector<std::pair<fs::path, std::string>> saved;
  for (const auto& file : glob(media(), "deps.bundle")) {
    if (!file.ends_with(".par2")) continue;
    saved.emplace_back(file, podplane::test::read_file(file));
    fs::remove(file);
  }
  fs::copy_file(elsewhere / "passwd.par2", media() / "deps.bundle.par2");
  expect_refused("got:      'passwd'");
  fs::remove(media() / "deps.bundle.par2");

  // Every parity file garbage: no recovery set at all.
  for (const auto& [file, bytes] : saved) podplane::test::write_file(file, podplane::test::read_file(volumes[0]).substr(0, bytes.size()));
  expect_refused("no usable PAR2 recovery set in the parity files of bundle deps.bundle");
  auto without = run_podplane([&] {
    auto a = args;
    a.push_back("--no-parity");
    return a;
  }(), at(dir / "without"));
  EXPECT_EQ(without.exit_code, 1) << show(without);  // the damaged volume is damaged
  EXPECT_NE(without.out.find(volumes[1].string() + ": volume 2 of"), std::string::npos) << show(without);
  for (const auto& [file, bytes] : saved) podplane::test::write_file(file, bytes);

  // A FIFO named as a parity file is not opened for reading (which would block).
  ASSERT_EQ(::mkfifo((media() / "deps.bundle.vol998+001.par2").c_str(), 0600), 0);
  expect_refused("parity file " + (media() / "deps.bundle.vol998+001.par2").string() + " is not a regular file");
}

// Without par2 installed: creating parity is refused before a volume is written, an import
// that needs no repair goes on (its volumes checked against the parity set all the same), and
// one that does need it fails naming the package, its store not even made.
TEST_F(BundleParity, WithoutPar2OnlyANeededRepairFailsAndSaysWhichPackage) {
  auto volumes = create_with_parity();
  ASSERT_GE(volumes.size(), 6u);
  fs::create_directories(dir / "empty-path");
  auto without_par2 = [&](const fs::path& root) {
    ProcessOptions options = at(root);
    options.env["PATH"] = (dir / "empty-path").string();
    return options;
  };

  fs::create_directories(dir / "other-media");
  auto create = run_podplane({"bundle", "create", (dir / "other-media" / "x.bundle").string(), "--parity", "10"},
                             without_par2(online()));
  EXPECT_EQ(create.exit_code, 1) << show(create);
  EXPECT_NE(create.err.find("needs the par2 program, which is not installed: install Debian's package par2"), std::string::npos)
      << show(create);
  EXPECT_TRUE(fs::is_empty(dir / "other-media")) << show(create);

  std::vector<std::string> args{"bundle", "import"};
  for (const auto& file : glob(media(), "deps.bundle")) args.push_back(file);
  args.insert(args.end(), {"--trust", pub()});
  auto unneeded = run_podplane(args, without_par2(dir / "whole"));
  EXPECT_EQ(unneeded.exit_code, 0) << show(unneeded);
  EXPECT_NE(unneeded.out.find("all whole (each of the size and MD5 the parity set describes)"), std::string::npos)
      << show(unneeded);

  // A damaged volume is found without par2 (by the MD5 the parity set describes), before any
  // of the bundle is imported; so is a missing one.
  flip_bytes_in_the_middle(volumes[4]);
  fs::remove(volumes[2]);
  args.erase(std::remove(args.begin(), args.end(), volumes[2].string()), args.end());
  auto needed = run_podplane(args, without_par2(dir / "needed"));
  EXPECT_EQ(needed.exit_code, 1) << show(needed);
  EXPECT_NE(needed.out.find("lost: " + volumes[2].filename().string() + " (missing)"), std::string::npos) << show(needed);
  EXPECT_NE(needed.out.find("lost: " + volumes[4].filename().string() + " (damaged)"), std::string::npos) << show(needed);
  EXPECT_NE(needed.out.find("install Debian's package par2 (apt-get install par2)"), std::string::npos) << show(needed);
  EXPECT_FALSE(fs::exists(dir / "needed"));
}

}  // namespace
}  // namespace podplane::bundle
