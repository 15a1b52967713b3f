// Podplane's own release files as a stored release (docs/tools.md "Podplane's own releases"):
// `deps tools --podplane-release` on a small hand-made dist/ (a tarball holding a script as
// bin/podplane, a deb and an OCI image named as scripts/package names them), what is indexed,
// a rerun that is up to date, directories refused with nothing indexed, and the way across: a
// signed bundle imported into a fresh store, `deps verify`, `mirror serve`, and `tools install
// podplane --from` the served URL, whose bin/podplane then runs. A tarball its SHA256SUMS does
// not list is refused at import with nothing indexed, and a hostile tarball at install with
// nothing written.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "cache/store.hpp"
#include "tests/support/background.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

const std::string kVersion = "9.8.7";
const std::string kTree = "podplane-9.8.7-linux-amd64";
const std::string kTarball = kTree + ".tar.gz";
const std::string kDeb = "podplane_9.8.7_amd64.deb";
const std::string kImage = "podplane-mirror-9.8.7-linux-amd64.oci.tar";
const std::string kSums = "podplane_9.8.7_SHA256SUMS";

// A tarball shaped like scripts/package's: one tree, its bin/podplane a program that prints
// the version (here a script), and `extra` python lines adding more members.
void make_tarball(const fs::path& file, const std::string& extra = "") {
  (void)make_archive(file, "add('" + kTree + "/', kind=tarfile.DIRTYPE, mode=0o755)\n"
                           "add('" + kTree + "/bin/', kind=tarfile.DIRTYPE, mode=0o755)\n"
                           "add('" + kTree + "/bin/podplane', data=b'#!/bin/sh\\necho podplane " + kVersion + "\\n', mode=0o755)\n"
                           "add('" + kTree + "/README.md', data=b'podplane\\n')\n" + extra);
}

// A dist/ of one release: the tarball, a deb and an OCI image (their bytes only need names).
fs::path make_dist(const fs::path& dist) {
  make_tarball(dist / kTarball);
  write_file(dist / kDeb, "!<arch>\ndebian-binary   stand-in for a deb\n");
  write_file(dist / kImage, "oci-layout stand-in for an image archive\n");
  return dist;
}

class PodplaneRelease : public ::testing::Test {
 protected:
  fs::path online() const { return dir / "online"; }
  ProcessResult podplane(const fs::path& root, const std::vector<std::string>& args) const {
    return run_podplane(args, with_deps_root(root));
  }
  std::vector<cache::Artifact> rows(const fs::path& root, std::optional<cache::ArtifactKind> kind = std::nullopt) const {
    if (!fs::exists(root / "store" / "index.db")) return {};
    return cache::Store::open(root, cache::Store::Access::read_only).artifacts({.kind = kind});
  }
  TempDir dir;
};

TEST_F(PodplaneRelease, AddsEachFileWithASha256sumsTheStoreWritesAndIsUpToDateOnARerun) {
  const fs::path dist = make_dist(dir / "dist");
  auto added = podplane(online(), {"deps", "tools", "--podplane-release", dist.string()});
  ASSERT_EQ(added.exit_code, 0) << added.out << added.err;
  const std::string tarball_digest = sha256_hex(read_file(dist / kTarball));
  EXPECT_NE(added.out.find("podplane 9.8.7 linux_amd64: added " + kTarball + " (sha256:" + tarball_digest + ")"),
            std::string::npos)
      << added.out;

  auto archives = rows(online(), cache::ArtifactKind::tool_archive);
  ASSERT_EQ(archives.size(), 3u);
  std::string expected_sums;
  // sha256sum's format, by file name.
  for (const std::string& name : {kTarball, kImage, kDeb}) expected_sums += sha256_hex(read_file(dist / name)) + "  " + name + "\n";
  for (const auto& row : archives) {
    EXPECT_EQ(row.address, "podplane");
    EXPECT_EQ(row.version, kVersion);
    EXPECT_EQ(row.platform, "linux_amd64") << row.filename;
    EXPECT_EQ(row.digest, sha256_hex(read_file(dist / row.filename)));
    EXPECT_EQ(row.trust, cache::Trust::unverified) << "no upstream signs them";
  }
  auto sums = rows(online(), cache::ArtifactKind::tool_shasums);
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums[0].filename, kSums);
  EXPECT_EQ(cache::Store::open(online(), cache::Store::Access::read_only).read_object(sums[0].digest), expected_sums);
  EXPECT_TRUE(rows(online(), cache::ArtifactKind::tool_signature).empty());

  auto again = podplane(online(), {"deps", "tools", "--podplane-release", dist.string()});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(again.out, "podplane 9.8.7: up to date (3 file(s) stored)\n");
  EXPECT_EQ(rows(online()).size(), 4u);

  auto verify = podplane(online(), {"deps", "verify"});
  ASSERT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("3 podplane release files against their SHA256SUMS: ok"), std::string::npos) << verify.out;
  EXPECT_EQ(verify.out.find("engine release"), std::string::npos) << "no engine release is stored: " << verify.out;
  auto du = podplane(online(), {"deps", "du", "--json"});
  ASSERT_EQ(du.exit_code, 0) << du.out << du.err;
  // One item of the family tool: the version, with its three files and SHA256SUMS.
  bool counted = false;
  const auto usage = nlohmann::json::parse(du.out);
  for (const auto& name : usage["by_name"]) {
    if (name["name"] != "podplane") continue;
    counted = true;
    EXPECT_EQ(name["family"], "tool");
    EXPECT_EQ(name["versions"], 1);
    EXPECT_EQ(name["rows"], 4);
  }
  EXPECT_TRUE(counted) << du.out;
}

TEST_F(PodplaneRelease, RefusesADirectoryOfTwoVersionsOrOfOtherFilesAndIndexesNothing) {
  const fs::path mixed = make_dist(dir / "mixed");
  write_file(mixed / "podplane_9.8.8_amd64.deb", "another version\n");
  auto refused = podplane(online(), {"deps", "tools", "--podplane-release", mixed.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("holds release files of 2 podplane versions; give a directory of one version"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("9.8.8: podplane_9.8.8_amd64.deb"), std::string::npos) << refused.err;
  EXPECT_TRUE(rows(online()).empty());

  const fs::path other = make_dist(dir / "other");
  write_file(other / "notes.txt", "not a release file\n");
  refused = podplane(online(), {"deps", "tools", "--podplane-release", other.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("holds what is not a podplane release file"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("\n  notes.txt"), std::string::npos) << refused.err;
  EXPECT_TRUE(rows(online()).empty());

  // A stored version keeps its bytes: the same name with others is refused, nothing changes.
  const fs::path dist = make_dist(dir / "dist");
  ASSERT_EQ(podplane(online(), {"deps", "tools", "--podplane-release", dist.string()}).exit_code, 0);
  const fs::path rebuilt = make_dist(dir / "rebuilt");
  write_file(rebuilt / kDeb, "other bytes under the same name\n");
  refused = podplane(online(), {"deps", "tools", "--podplane-release", rebuilt.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("is not the podplane 9.8.7 release file the store holds"), std::string::npos) << refused.err;
  EXPECT_EQ(rows(online()).size(), 4u);
}

// The whole way: online store -> signed bundle -> a fresh store -> verify -> mirror serve ->
// tools install --from the served URL -> the installed program runs.
TEST_F(PodplaneRelease, CrossesInASignedBundleIsServedAndInstallsFromTheSiteMirror) {
  ASSERT_TRUE(have_program("curl"));
  const fs::path dist = make_dist(dir / "dist");
  ASSERT_EQ(run_podplane({"bundle", "keygen", (dir / "release").string()}).exit_code, 0);
  auto added = podplane(online(), {"deps", "tools", "--podplane-release", dist.string(), "--sign", (dir / "release.key").string()});
  ASSERT_EQ(added.exit_code, 0) << added.out << added.err;
  EXPECT_NE(added.out.find("wrote " + kSums + " listing 3 file(s), signed with sha256:"), std::string::npos) << added.out;
  ASSERT_EQ(run_podplane({"bundle", "keygen", (dir / "site").string()}).exit_code, 0);
  auto created = podplane(online(), {"bundle", "create", (dir / "deps.bundle").string(), "--sign", (dir / "site.key").string()});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;

  const fs::path site = dir / "site-deps";
  auto imported = podplane(site, {"bundle", "import", (dir / "deps.bundle").string(), "--trust", (dir / "site.pub").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  EXPECT_EQ(rows(site, cache::ArtifactKind::tool_archive).size(), 3u);
  auto verify = podplane(site, {"deps", "verify"});
  ASSERT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("3 podplane release files against their SHA256SUMS: ok"), std::string::npos) << verify.out;

  Background serve({podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"},
                   {{"PODPLANE_DEPS_CACHE_DIR", site.string()}}, dir / "serve.err");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << read_file(dir / "serve.err");
  if (base.back() == '/') base.pop_back();
  auto sums = run({"curl", "-fsS", base + "/tools/podplane/9.8.7/" + kSums});
  ASSERT_EQ(sums.exit_code, 0) << sums.err;
  EXPECT_NE(sums.out.find(sha256_hex(read_file(dist / kDeb)) + "  " + kDeb + "\n"), std::string::npos) << sums.out;
  auto deb = run({"curl", "-fsS", base + "/tools/podplane/9.8.7/" + kDeb});
  EXPECT_EQ(deb.out, read_file(dist / kDeb));
  auto catalogue = nlohmann::json::parse(run({"curl", "-fsS", base + "/catalogue.json"}).out);
  ASSERT_TRUE(catalogue.contains("podplane")) << catalogue.dump(2);
  ASSERT_EQ(catalogue["podplane"].size(), 3u);
  EXPECT_FALSE(catalogue.contains("tools")) << "no engine release is stored";
  bool listed = false;
  for (const auto& row : catalogue["podplane"]) {
    if (row["filename"] != kTarball) continue;
    listed = true;
    EXPECT_EQ(row["sha256"], sha256_hex(read_file(dist / kTarball)));
    EXPECT_EQ(row["install"], "podplane tools install podplane 9.8.7 --platform linux_amd64 --to /opt --from MIRROR_URL");
  }
  EXPECT_TRUE(listed) << catalogue["podplane"].dump(2);
  auto page = run({"curl", "-fsS", base + "/catalogue/podplane/"});
  EXPECT_NE(page.out.find("--from <span class=\"mirror-url\">"), std::string::npos) << page.out;

  // A machine with no store at all takes it from the mirror.
  const fs::path opt = dir / "opt";
  auto installed = run_podplane({"tools", "install", "podplane", "9.8.7", "--platform", "linux_amd64", "--to", opt.string(),
                                 "--from", base, "--trust", (dir / "release.pub").string()},
                                with_deps_root(dir / "no-store"));
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  const fs::path program = opt / kTree / "bin" / "podplane";
  EXPECT_NE(installed.out.find("installed podplane 9.8.7 (linux_amd64) at " + program.string()), std::string::npos)
      << installed.out;
  EXPECT_EQ(run({program.string()}).out, "podplane 9.8.7\n");
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(opt)) left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{kTree}) << "no temp dir is left beside the tree";

  // The next version travels in a --since delta: only its files cross.
  const fs::path next = dir / "dist-next";
  write_file(next / "podplane_9.8.8_amd64.deb", "the next release's deb\n");
  ASSERT_EQ(podplane(online(), {"deps", "tools", "--podplane-release", next.string()}).exit_code, 0);
  ASSERT_EQ(podplane(site, {"bundle", "inventory", "-o", (dir / "site.inventory").string()}).exit_code, 0);
  auto delta = podplane(online(), {"bundle", "create", (dir / "delta.bundle").string(), "--sign", (dir / "site.key").string(),
                                   "--since", (dir / "site.inventory").string()});
  ASSERT_EQ(delta.exit_code, 0) << delta.out << delta.err;
  auto applied = podplane(site, {"bundle", "import", (dir / "delta.bundle").string(), "--trust", (dir / "site.pub").string()});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_EQ(rows(site, cache::ArtifactKind::tool_archive).size(), 4u);
  EXPECT_EQ(rows(site, cache::ArtifactKind::tool_shasums).size(), 2u);
  // A version is one prune item: keeping the newest one takes 9.8.7 whole, SHA256SUMS and all.
  auto pruned = podplane(online(), {"deps", "prune", "--keep", "1"});
  ASSERT_EQ(pruned.exit_code, 0) << pruned.out << pruned.err;
  for (const auto& row : rows(online())) EXPECT_EQ(row.version, "9.8.8") << row.filename;
  EXPECT_EQ(rows(online()).size(), 2u);

  // Installed once; a second run refuses to overwrite it.
  auto twice = run_podplane({"tools", "install", "podplane", "9.8.7", "--platform", "linux_amd64", "--to", opt.string(),
                             "--from", base, "--trust", (dir / "release.pub").string()});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("exists already"), std::string::npos) << twice.err;
}

// A bundle whose tarball is not the one its release's SHA256SUMS lists (as a signer's store
// tampered with would make) is refused at import, and the volume's rows are rolled back.
TEST_F(PodplaneRelease, ATarballItsSha256sumsDoesNotListIsRefusedAtImportWithNothingIndexed) {
  const fs::path dist = make_dist(dir / "dist");
  {
    auto store = cache::Store::open(online());
    const std::string listed = sha256_hex(read_file(dist / kTarball));
    const std::string document = listed + "  " + kTarball + "\n";
    cache::Artifact sums = podplane_release_row(cache::ArtifactKind::tool_shasums, store.add_bytes(document), kVersion);
    sums.filename = kSums;
    (void)store.add_artifact(sums);
    const std::string tampered = read_file(dist / kTarball) + "appended";
    (void)store.add_artifact(podplane_release_row(cache::ArtifactKind::tool_archive, store.add_bytes(tampered), kVersion, kTarball, "linux_amd64"));
  }
  auto created = podplane(online(), {"bundle", "create", (dir / "deps.bundle").string()});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  const fs::path site = dir / "site-deps";
  auto imported = podplane(site, {"bundle", "import", "--allow-unsigned", (dir / "deps.bundle").string()});
  EXPECT_NE(imported.exit_code, 0) << imported.out;
  EXPECT_NE((imported.out + imported.err).find("podplane release not verified: podplane 9.8.7 " + kTarball + ": " + kSums +
                                               " does not list this file's digest"),
            std::string::npos)
      << imported.out << imported.err;
  EXPECT_TRUE(rows(site, cache::ArtifactKind::tool_archive).empty());
  EXPECT_TRUE(rows(site, cache::ArtifactKind::tool_shasums).empty()) << "the volume's rows roll back together";
}

// Install from the local store: the good tarball lands whole; a hostile one (an entry climbing
// out with "..", a link out of the tree) is refused and nothing is written under --to.
TEST_F(PodplaneRelease, InstallsFromTheStoreAndRefusesAHostileTarballWritingNothing) {
  const fs::path dist = make_dist(dir / "dist");
  ASSERT_EQ(podplane(online(), {"deps", "tools", "--podplane-release", dist.string()}).exit_code, 0);
  const fs::path opt = dir / "opt";
  auto installed = podplane(online(), {"tools", "install", "podplane", "9.8.7", "--platform", "linux_amd64", "--to", opt.string()});
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  struct stat info {};
  ASSERT_EQ(::stat((opt / kTree / "bin" / "podplane").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0111, 0111u);
  EXPECT_EQ(run({(opt / kTree / "bin" / "podplane").string()}).out, "podplane 9.8.7\n");

  // A release the store lacks names the command that adds it.
  auto missing = podplane(online(), {"tools", "install", "podplane", "9.8.6", "--platform", "linux_amd64", "--to",
                                     (dir / "none").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("podplane-9.8.6-linux-amd64.tar.gz is not in the store"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("podplane deps tools --podplane-release"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(dir / "none"));

  for (const auto& [name, member] : std::vector<std::pair<std::string, std::string>>{
           {"climbs", "add('" + kTree + "/../../escaped', data=b'out')\n"},
           {"links-out", "add('" + kTree + "/lib', kind=tarfile.SYMTYPE, link='../../..')\n"}}) {
    SCOPED_TRACE(name);
    const fs::path root = dir / ("hostile-" + name);
    const fs::path hostile = dir / ("dist-" + name);
    make_tarball(hostile / kTarball, member);
    ASSERT_EQ(podplane(root, {"deps", "tools", "--podplane-release", hostile.string()}).exit_code, 0);
    const fs::path to = dir / ("to-" + name) / "opt";
    auto refused = podplane(root, {"tools", "install", "podplane", "9.8.7", "--platform", "linux_amd64", "--to", to.string()});
    EXPECT_EQ(refused.exit_code, 1) << refused.out;
    EXPECT_NE(refused.err.find(kTarball), std::string::npos) << refused.err;
    EXPECT_FALSE(fs::exists(dir / ("to-" + name))) << "nothing of the run is left, not even the directories it made";
    EXPECT_FALSE(fs::exists(dir / "escaped"));
  }
}

// `tools install podplane --from URL` takes nothing on the URL's word alone: the release's
// SHA256SUMS must carry a signature by a key given with --trust (deps tools --sign), else the
// install is refused with nothing written, unless --allow-unsigned-release says otherwise.
class SignedPodplaneRelease : public PodplaneRelease {
 protected:
  // A store holding the release (signed with `key` unless empty), served by `mirror serve`.
  std::string serve_release(const std::string& key) {
    std::vector<std::string> args{"deps", "tools", "--podplane-release", make_dist(dir / "dist").string()};
    if (!key.empty()) args.insert(args.end(), {"--sign", (dir / (key + ".key")).string()});
    auto added = podplane(online(), args);
    EXPECT_EQ(added.exit_code, 0) << added.out << added.err;
    serve_ = std::make_unique<Background>(
        std::vector<std::string>{podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"},
        std::map<std::string, std::string>{{"PODPLANE_DEPS_CACHE_DIR", online().string()}}, dir / "serve.err");
    std::string base = serve_->first_line();
    EXPECT_FALSE(base.empty()) << read_file(dir / "serve.err");
    if (!base.empty() && base.back() == '/') base.pop_back();
    return base;
  }
  void keygen(const std::string& name) { ASSERT_EQ(run_podplane({"bundle", "keygen", (dir / name).string()}).exit_code, 0); }
  ProcessResult install(const std::string& base, const std::vector<std::string>& flags) {
    std::vector<std::string> args{"tools", "install", "podplane", kVersion, "--platform", "linux_amd64", "--to",
                                  (dir / "opt").string(), "--from", base};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_podplane(args, with_deps_root(dir / "no-store"));
  }
  std::unique_ptr<Background> serve_;
};

TEST_F(SignedPodplaneRelease, AnUnsignedReleaseFromAUrlIsRefusedUnlessAllowed) {
  const std::string base = serve_release("");
  auto refused = install(base, {});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("podplane 9.8.7 from " + base + " is not signed (no podplane_9.8.7_SHA256SUMS.sig)"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--allow-unsigned-release"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(dir / "opt")) << "nothing is written";
  auto allowed = install(base, {"--allow-unsigned-release"});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
  EXPECT_NE(allowed.out.find("is not signed; installing it on --allow-unsigned-release"), std::string::npos) << allowed.out;
}

TEST_F(SignedPodplaneRelease, AReleaseSignedByAKeyNotTrustedIsRefused) {
  keygen("release");
  keygen("other");
  const std::string base = serve_release("release");
  auto untrusted = install(base, {"--trust", (dir / "other.pub").string()});
  EXPECT_EQ(untrusted.exit_code, 1) << untrusted.out << untrusted.err;
  EXPECT_NE(untrusted.err.find("is by a release key not given with --trust"), std::string::npos) << untrusted.err;
  EXPECT_FALSE(fs::exists(dir / "opt"));
  auto no_trust = install(base, {});
  EXPECT_EQ(no_trust.exit_code, 2) << no_trust.out << no_trust.err;
  EXPECT_NE(no_trust.err.find("give --trust with the release key's public key"), std::string::npos) << no_trust.err;
  auto trusted = install(base, {"--trust", (dir / "other.pub").string(), "--trust", (dir / "release.pub").string()});
  EXPECT_EQ(trusted.exit_code, 0) << trusted.out << trusted.err;
}

// A server that changes the SHA256SUMS (and the tarball with it) after the release was signed:
// `mirror export` of the signed release, altered, served by a plain web server.
TEST_F(SignedPodplaneRelease, ASha256sumsAlteredAfterSigningIsRefused) {
  ASSERT_TRUE(have_program("python3"));
  keygen("release");
  (void)serve_release("release");
  ASSERT_EQ(podplane(online(), {"mirror", "export", (dir / "site").string()}).exit_code, 0);
  const fs::path release = dir / "site" / "tools" / "podplane" / kVersion;
  make_tarball(release / kTarball, "add('" + kTree + "/bin/extra', data=b'planted\\n', mode=0o755)\n");
  write_file(release / kSums, sha256_hex(read_file(release / kTarball)) + "  " + kTarball + "\n");
  Background web({"python3", "-u", "-c",
                  "import http.server, functools, sys\n"
                  "h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])\n"
                  "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), h)\n"
                  "print('http://127.0.0.1:%d' % s.server_address[1], flush=True)\n"
                  "s.serve_forever()\n",
                  (dir / "site").string()},
                 {}, dir / "web.err");
  const std::string base = web.first_line();
  ASSERT_FALSE(base.empty()) << read_file(dir / "web.err");
  auto refused = install(base, {"--trust", (dir / "release.pub").string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("does not verify with " + (dir / "release.pub").string()), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(dir / "opt"));
}

TEST_F(SignedPodplaneRelease, AStoredReleaseIsSignedOnceAndKeepsItsSignature) {
  keygen("release");
  keygen("other");
  const fs::path dist = make_dist(dir / "dist");
  ASSERT_EQ(podplane(online(), {"deps", "tools", "--podplane-release", dist.string()}).exit_code, 0);
  auto signed_later = podplane(online(), {"deps", "tools", "--podplane-release", dist.string(), "--sign", (dir / "release.key").string()});
  ASSERT_EQ(signed_later.exit_code, 0) << signed_later.out << signed_later.err;
  EXPECT_NE(signed_later.out.find("signed " + kSums + " with sha256:"), std::string::npos) << signed_later.out;
  EXPECT_EQ(rows(online(), cache::ArtifactKind::tool_signature).size(), 1u);
  auto again = podplane(online(), {"deps", "tools", "--podplane-release", dist.string(), "--sign", (dir / "other.key").string()});
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_NE(again.err.find("is signed already by another release key"), std::string::npos) << again.err;
  auto verify = podplane(online(), {"deps", "verify"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

}  // namespace
}  // namespace podplane::test
