// deps prune and deps du: the newest N and what anyone pins stay (rows, views, objects), the
// rest goes, a dry run changes no byte, a second run removes nothing, and a kill at any point
// leaves a store that verify passes or that the next prune completes.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "cache/layout.hpp"
#include "cache/maintenance.hpp"
#include "cache/prune.hpp"
#include "cache/row_rules.hpp"
#include "cache/store.hpp"
#include "cache/views.hpp"
#include "lockfile/hash.hpp"
#include "tests/cache/child_process.hpp"
#include "tests/support/background.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using ::testing::HasSubstr;

const std::string null_address = "registry.opentofu.org/hashicorp/null";
const std::string nstance_address = "registry.opentofu.org/nstance-dev/nstance/aws";
const std::string manifest_name = "vmconfig_knc_debian-13_arm64";
const std::string pause = "registry.k8s.io/pause";

// A store that has taken three provider versions, two module versions, two vmconfig
// manifests (each with its artifacts), an artifact no manifest lists, two image tags that
// share a layer, two seeds.json and two versions of a seed snapshot; the tf selection names
// the newest provider and module.
struct PruneFixture {
  TempDir dir;
  fs::path root = dir / "deps";
  std::map<std::string, std::vector<std::string>> provider_objects;  // version → its objects
  std::map<std::string, std::string> module_file;                    // version → its own file's object
  std::string shared_module_file, shared_layer;
  std::map<std::string, std::string> manifest, containerd, os_image, image_manifest, image_layer, seeds, snapshot;
  std::map<std::string, std::string> signature_manifest, signature_payload;  // an image tag's cosign signature
  std::string stray;

  PruneFixture() {
    Store store = Store::open(root);
    for (std::string version : {"3.2.2", "3.2.3", "3.2.4"}) add_provider(store, version);
    shared_module_file = store.add_bytes("shared module file\n");
    for (std::string version : {"2.0.0", "2.0.1"}) {
      module_file[version] = store.add_bytes("module " + version + "\n");
      (void)store.add_module_tree({0, nstance_address, version, "", "https://example.com/nstance-" + version, "",
                                   {{"modules/cluster/main.tf", 0644, module_file[version], 0},
                                    {"modules/shard/main.tf", 0644, shared_module_file, 0}}});
    }
    shared_layer = store.add_bytes("a layer both tags share");
    for (std::string tag : {"3.9", "3.10"}) add_image(store, tag);
    for (std::string version : {"20260101", "20260724"}) add_manifest(store, version);
    stray = add_vm_artifact(store, "stray", "1.0", "no manifest lists this");
    for (std::string version : {"1.0.0", "1.1.0"}) {
      Artifact seed = test::seed_manifest_row(seeds[version] = store.add_bytes("{\"seeds\": {\"version\": \"" + version + "\"}}"),
                                              "seeds-" + version);
      seed.filename = "seeds.json";
      (void)store.add_artifact(seed);
      snapshot[version] = store.add_bytes("snapshot " + version);
      (void)store.add_artifact(test::seed_snapshot_row(snapshot[version], "recommended", version, "recommended.netsy",
                                                       file_digest_hex(store.object_path(snapshot[version]), DigestAlgorithm::sha512)));
    }
    TfSelection selection;
    selection.providers = {{null_address, "3.2.4", "~> 3.2"}};
    selection.platforms = {"linux_amd64", "linux_arm64"};
    selection.module_address = nstance_address;
    selection.module_version = "2.0.1";
    store.set_tf_selection(selection);
    (void)rebuild_views(store);
  }

  void add_provider(Store& store, const std::string& version) {
    auto& objects = provider_objects[version];
    auto document = [&](ArtifactKind kind, const std::string& filename, const std::string& bytes) {
      Artifact a = test::provider_document_row(kind, store.add_bytes(bytes), null_address, version);
      a.filename = filename;
      (void)store.add_artifact(a);
      objects.push_back(a.digest);
      return a.digest;
    };
    std::string sums = document(ArtifactKind::provider_shasums, "terraform-provider-null_" + version + "_SHA256SUMS", "sums " + version);
    std::string sig = document(ArtifactKind::provider_signature, "terraform-provider-null_" + version + "_SHA256SUMS.sig", "sig " + version);
    std::string keys = document(ArtifactKind::provider_keys, "keys.json", "keys " + version);
    for (std::string platform : {"linux_amd64", "linux_arm64"}) {
      fs::path work = dir / ("zip-" + version + "-" + platform);
      test::write_file(work / "terraform-provider-null", "binary " + version + " " + platform);
      test::ProcessOptions in_work;
      in_work.cwd = work;
      auto zipped = test::run({"zip", "-q", "-X", "p.zip", "terraform-provider-null"}, in_work);
      if (zipped.exit_code != 0) throw std::runtime_error("zip failed (apt-get install zip): " + zipped.err);
      Artifact a = test::provider_package_row(store.add_file(work / "p.zip"), platform, null_address, version);
      a.h1 = lockfile::h1_hash_of_zip(work / "p.zip");
      std::int64_t id = store.add_artifact(a);
      store.add_provenance({id, sums, sig, keys, "ABCD", "signed", ""});
      objects.push_back(a.digest);
    }
  }

  std::string add_vm_artifact(Store& store, const std::string& name, const std::string& version, const std::string& bytes) {
    Artifact a = test::vmconfig_artifact_row(store.add_bytes(bytes), name, version,
                                             "https://example.com/" + name + "-" + version + ".bin", "linux_arm64");
    (void)store.add_artifact(a);
    return a.digest;
  }

  void add_manifest(Store& store, const std::string& version) {
    const std::string containerd_version = version == "20260101" ? "1.7.0" : "2.0.0";
    const std::string image_version = version == "20260101" ? "1.0" : "2.0";
    containerd[version] = add_vm_artifact(store, "containerd", containerd_version, "containerd " + containerd_version);
    os_image[version] = add_vm_artifact(store, "os-image", image_version, "os image " + image_version);
    nlohmann::json document = {
        {"vmconfig",
         {{"version", version},
          {"kind", "knc"},
          {"os", {{"arch", "arm64"}, {"image", {{"version", image_version}}}}},
          {"dependencies", {{"containerd", {{"version", containerd_version}}}}},
          // The old manifest pins the old image tag's manifest by digest.
          {"images", version == "20260101" ? nlohmann::json::array({{{"image", pause + ":3.9"}, {"digest", "sha256:" + image_manifest["3.9"]}}})
                                           : nlohmann::json::array()}}}};
    Artifact m = test::vmconfig_manifest_row(manifest[version] = store.add_bytes(document.dump()), manifest_name, version, "linux_arm64");
    m.filename = manifest_name + "_" + version + ".json";
    (void)store.add_artifact(m);
  }

  void add_image(Store& store, const std::string& tag) {
    image_layer[tag] = store.add_bytes("layer of " + tag);
    std::string digest = image_manifest[tag] = store.add_bytes("{\"manifest\": \"" + tag + "\"}");
    auto row = [&](ArtifactKind kind, const std::string& version, const std::string& object, const std::string& platform) {
      (void)store.add_artifact(image_row(kind, pause, version, platform, "sha256:" + object, 0, ""));
    };
    row(ArtifactKind::image_manifest, tag, digest, "linux_amd64");
    row(ArtifactKind::image_blob, "sha256:" + digest, image_layer[tag], "");
    row(ArtifactKind::image_blob, "sha256:" + digest, shared_layer, "");
    // Its cosign signature: the .sig attachment naming the manifest, and the payload it lists.
    signature_payload[tag] = store.add_bytes("{\"critical\": \"" + tag + "\"}");
    std::string signature = signature_manifest[tag] = store.add_bytes("{\"signature of\": \"" + tag + "\"}");
    row(ArtifactKind::image_attachment, "sha256-" + digest + ".sig", signature, "");
    row(ArtifactKind::image_blob, "sha256:" + signature, signature_payload[tag], "");
  }
};

std::set<std::string> items_of(const Store& store) {
  std::set<std::string> items;
  for (const auto& a : store.artifacts()) items.insert(std::string(to_string(a.kind)) + " " + a.address + " " + a.version);
  for (const auto& t : store.module_trees()) items.insert("module " + t.address + " " + t.version);
  return items;
}

bool on_disk(const Store& store, const std::string& digest) { return fs::exists(store.object_path(digest)); }

TEST(Prune, KeepsTheNewestNAndWhatTheyNeedAndRemovesTheRestWithItsViewsAndObjects) {
  PruneFixture f;
  Store store = Store::open(f.root, Store::Access::read_write, Store::TempSweep::none);
  const fs::path old_zip = layout::providers_dir(f.root) / "registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.3_linux_amd64.zip";
  ASSERT_TRUE(fs::exists(old_zip));
  PrunePolicy policy;
  policy.keep = 1;
  auto report = prune_store(store, policy);

  auto items = items_of(store);
  // Kept: the newest provider (the selection's too), module, manifest with its artifacts, tag, seeds and snapshot.
  for (const std::string& kept : std::vector<std::string>{"provider_package " + null_address + " 3.2.4", "provider_shasums " + null_address + " 3.2.4",
                           "provider_keys " + null_address + " 3.2.4", "module " + nstance_address + " 2.0.1",
                           "vmconfig_manifest " + manifest_name + " 20260724", "vmconfig_artifact containerd 2.0.0",
                           "vmconfig_artifact os-image 2.0", "image_manifest " + pause + " 3.10",
                           "image_blob " + pause + " sha256:" + f.image_manifest["3.10"], "seed_manifest seeds seeds-1.1.0",
                           "seed_snapshot recommended 1.1.0", "image_attachment " + pause + " sha256-" + f.image_manifest["3.10"] + ".sig",
                           "image_blob " + pause + " sha256:" + f.signature_manifest["3.10"]})
    EXPECT_TRUE(items.count(kept)) << kept;
  // Gone: everything older, and what only the old ones needed (or nothing needs).
  for (const std::string& gone : std::vector<std::string>{"provider_package " + null_address + " 3.2.2", "provider_signature " + null_address + " 3.2.3",
                           "module " + nstance_address + " 2.0.0", "vmconfig_manifest " + manifest_name + " 20260101",
                           "vmconfig_artifact containerd 1.7.0", "vmconfig_artifact os-image 1.0", "vmconfig_artifact stray 1.0",
                           "image_manifest " + pause + " 3.9", "image_blob " + pause + " sha256:" + f.image_manifest["3.9"],
                           "seed_manifest seeds seeds-1.0.0", "seed_snapshot recommended 1.0.0",
                           "image_attachment " + pause + " sha256-" + f.image_manifest["3.9"] + ".sig",
                           "image_blob " + pause + " sha256:" + f.signature_manifest["3.9"]})
    EXPECT_FALSE(items.count(gone)) << gone;

  for (const auto& digest : f.provider_objects["3.2.3"]) EXPECT_FALSE(on_disk(store, digest)) << digest;
  for (const auto& digest : f.provider_objects["3.2.4"]) EXPECT_TRUE(store.has_object(digest)) << digest;
  EXPECT_FALSE(on_disk(store, f.module_file["2.0.0"]));
  EXPECT_TRUE(store.has_object(f.shared_module_file));  // the kept version's file too
  EXPECT_FALSE(on_disk(store, f.manifest["20260101"]));
  EXPECT_FALSE(on_disk(store, f.containerd["20260101"]));
  EXPECT_FALSE(on_disk(store, f.stray));
  EXPECT_FALSE(on_disk(store, f.image_layer["3.9"]));
  EXPECT_TRUE(store.has_object(f.shared_layer));  // the kept tag needs it too
  // A kept image keeps its signature and the signature's payload; a pruned one's go with it.
  EXPECT_TRUE(store.has_object(f.signature_payload["3.10"]));
  EXPECT_FALSE(on_disk(store, f.signature_manifest["3.9"]));
  EXPECT_FALSE(on_disk(store, f.signature_payload["3.9"]));
  EXPECT_FALSE(on_disk(store, f.snapshot["1.0.0"]));
  EXPECT_TRUE(store.has_object(f.snapshot["1.1.0"]));

  // Views: the old versions' files are gone, the index lists what stays, and verify is clean.
  EXPECT_FALSE(fs::exists(old_zip));
  EXPECT_FALSE(fs::exists(layout::nstance_modules_dir(f.root) / "2.0.0"));
  EXPECT_TRUE(fs::exists(layout::nstance_modules_dir(f.root) / "2.0.1/modules/cluster/main.tf"));
  auto index = nlohmann::json::parse(test::read_file(layout::providers_dir(f.root) / "registry.opentofu.org/hashicorp/null/index.json"));
  EXPECT_EQ(index["versions"].size(), 1u) << index.dump();
  EXPECT_FALSE(report.removed_views.empty());
  auto verify = verify_store(store);
  EXPECT_TRUE(verify.ok()) << to_json(verify).dump(2);
  EXPECT_TRUE(verify.garbage.empty()) << to_json(verify).dump(2);

  // The report and the audit log say what went.
  EXPECT_EQ(report.plan.removed_items(), 13u) << to_json(report.plan).dump(2);  // 11 items and the old tag's signature with its payload
  EXPECT_EQ(report.gc.objects.size(), report.plan.objects_freed);
  EXPECT_EQ(report.gc.bytes, report.plan.bytes_freed);
  bool audited = false;
  for (const auto& entry : store.audit_log()) audited = audited || entry.action == "prune";
  EXPECT_TRUE(audited);

  // A second run removes nothing.
  auto again = prune_store(store, policy);
  EXPECT_EQ(again.plan.removed_items(), 0u) << to_json(again.plan).dump(2);
  EXPECT_EQ(again.rows_removed, 0u);
  EXPECT_TRUE(again.gc.objects.empty());
  EXPECT_TRUE(again.removed_views.empty());
}

// A referrer (an SBOM naming the image's digest as its subject) goes where its image goes.
TEST(Prune, AKeptImageKeepsItsReferrersAndAPrunedOneTakesThemAlong) {
  PruneFixture f;
  Store store = Store::open(f.root, Store::Access::read_write, Store::TempSweep::none);
  std::map<std::string, std::string> referrer, sbom;
  for (const std::string tag : {"3.9", "3.10"}) {
    sbom[tag] = store.add_bytes("sbom of " + tag);
    referrer[tag] = store.add_bytes("{\"subject\": \"" + tag + "\"}");
    auto row = [&](ArtifactKind kind, const std::string& version, const std::string& object) {
      (void)store.add_artifact(image_row(kind, pause, version, "", "sha256:" + object, 0, ""));
    };
    row(ArtifactKind::image_attachment, "sha256:" + f.image_manifest[tag], referrer[tag]);
    row(ArtifactKind::image_blob, "sha256:" + referrer[tag], sbom[tag]);
  }
  PrunePolicy policy;
  policy.keep = 1;
  (void)prune_store(store, policy);
  auto items = items_of(store);
  EXPECT_TRUE(items.count("image_attachment " + pause + " sha256:" + f.image_manifest["3.10"]));
  EXPECT_TRUE(items.count("image_blob " + pause + " sha256:" + referrer["3.10"]));
  EXPECT_TRUE(store.has_object(sbom["3.10"]));
  EXPECT_FALSE(items.count("image_attachment " + pause + " sha256:" + f.image_manifest["3.9"]));
  EXPECT_FALSE(items.count("image_blob " + pause + " sha256:" + referrer["3.9"]));
  EXPECT_FALSE(on_disk(store, sbom["3.9"]));
}

TEST(Prune, KeepsWhatALockOrAManifestPinsAndWhatWasAddedSince) {
  PruneFixture f;
  Store store = Store::open(f.root, Store::Access::read_write, Store::TempSweep::none);
  test::write_file(f.dir / "site.lock.hcl",
                   "provider \"" + null_address + "\" {\n  version = \"3.2.2\"\n  hashes = [\"h1:x=\"]\n}\n");
  PrunePolicy policy;
  policy.keep = 1;
  policy.pins = lock_file_pins(f.dir / "site.lock.hcl");
  policy.pinned_manifests = {{f.manifest["20260101"], "cluster c.jsonc"}};
  auto plan = plan_prune(store, policy);
  auto find = [&](ItemFamily family, const std::string& name, const std::string& version) -> const StoreItem& {
    for (const auto& item : plan.items)
      if (item.family == family && item.name == name && item.version == version) return item;
    throw std::runtime_error("no item " + name + " " + version);
  };
  EXPECT_THAT(find(ItemFamily::provider, null_address, "3.2.2").kept_because, HasSubstr("pinned by lock"));
  EXPECT_EQ(find(ItemFamily::provider, null_address, "3.2.3").kept_because, "");
  EXPECT_EQ(find(ItemFamily::provider, null_address, "3.2.4").kept_because, "newest 1");
  // The pinned manifest keeps what it lists: its artifacts and the image tag it pins by digest.
  EXPECT_THAT(find(ItemFamily::vmconfig_manifest, manifest_name, "20260101").kept_because, HasSubstr("pinned by cluster c.jsonc"));
  EXPECT_THAT(find(ItemFamily::vmconfig_artifact, "containerd", "1.7.0").kept_because, HasSubstr("needed by vmconfig manifest"));
  EXPECT_THAT(find(ItemFamily::image, pause, "3.9").kept_because, HasSubstr("needed by vmconfig manifest"));
  EXPECT_THAT(find(ItemFamily::image_blobs, pause, "sha256:" + f.image_manifest["3.9"]).kept_because, HasSubstr("needed by image"));
  EXPECT_EQ(find(ItemFamily::vmconfig_artifact, "stray", "1.0").kept_because, "");

  // --older-than: nothing of this store is older than an hour, so nothing goes.
  policy.pins.clear();
  policy.pinned_manifests.clear();
  policy.added_before = "2000-01-01T00:00:00Z";
  EXPECT_EQ(plan_prune(store, policy).removed_items(), 0u);  // the artifact no manifest lists too
  policy.added_before = "2999-01-01T00:00:00Z";
  EXPECT_GT(plan_prune(store, policy).removed_items(), 0u);
}

TEST(Prune, RefusesKeepZeroAndAManifestItCannotRead) {
  PruneFixture f;
  Store store = Store::open(f.root, Store::Access::read_write, Store::TempSweep::none);
  PrunePolicy none;
  none.keep = 0;
  EXPECT_THROW((void)plan_prune(store, none), UsageError);
  auto before = items_of(store);
  fs::remove(store.object_path(f.manifest["20260724"]));
  PrunePolicy policy;
  policy.keep = 1;
  try {
    (void)prune_store(store, policy);
    FAIL() << "a prune went ahead without knowing what a kept manifest needs";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot tell what vmconfig manifest " + manifest_name + " 20260724 needs"));
  }
  EXPECT_EQ(items_of(store), before);
}

TEST(Prune, RefusesWhileAnotherProcessHasTheStoreOpenForWriting) {
  PruneFixture f;
  Store other = Store::open(f.root);
  Store store = Store::open(f.root, Store::Access::read_write, Store::TempSweep::none);
  auto before = items_of(store);
  PrunePolicy policy;
  policy.keep = 1;
  // flock is per open file description: the second handle's shared lock stands for another writer.
  EXPECT_THROW((void)prune_store(store, policy), Error);
  EXPECT_EQ(items_of(store), before);
}

TEST(Du, CountsEveryItemAndWhatAPruneWouldFree) {
  PruneFixture f;
  Store store = Store::open(f.root, Store::Access::read_only);
  auto all = plan_prune(store, {});
  EXPECT_EQ(all.removed_items(), 1u);  // every version is kept; the artifact no manifest lists is not
  EXPECT_EQ(all.objects_freed, 1u);
  std::uint64_t sum = 0;
  std::size_t providers = 0;
  for (const auto& item : all.items) {
    sum += item.bytes;
    if (item.family == ItemFamily::provider) ++providers;
  }
  EXPECT_EQ(providers, 3u);
  EXPECT_GE(sum, all.object_bytes);  // shared objects count once in the store, in each row here
  PrunePolicy policy;
  policy.keep = 2;
  auto two = plan_prune(store, policy);
  EXPECT_GT(two.objects_freed, 0u);
  EXPECT_LT(two.bytes_freed, two.object_bytes);
}

// Every file and link below `root` with its bytes (or target) and mode: what "changes nothing"
// means, the index and its WAL included.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
    // SQLite's shared-memory and (empty) log files, which any reader of a WAL index may create.
    if (it->path().filename() == "index.db-shm") continue;
    if (it->path().filename() == "index.db-wal" && fs::file_size(it->path()) == 0) continue;
    const auto status = it->symlink_status();
    std::string what = std::to_string(static_cast<int>(status.permissions())) + " ";
    if (fs::is_symlink(status)) what += "-> " + fs::read_symlink(it->path()).string();
    else if (fs::is_regular_file(status)) what += sha256_hex(test::read_file(it->path()));
    else what += "dir";
    files[it->path().lexically_relative(root).string()] = what;
  }
  return files;
}

test::ProcessResult podplane(const fs::path& root, const std::vector<std::string>& args) {
  return test::run_podplane(args, test::with_deps_root(root));
}

fs::path stress_binary() { return test::build_dir() / "tests/tools/store-stress/store-stress"; }

TEST(PruneCli, DryRunAndDuChangeNoByteAndSayWhatTheRealRunDoes) {
  PruneFixture f;
  const auto before = snapshot(f.root);
  auto dry = podplane(f.root, {"deps", "prune", "--keep", "1", "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("would remove provider " + null_address + " 3.2.2"));
  EXPECT_THAT(dry.out, HasSubstr("would remove 13 item(s)"));
  auto dry_json = podplane(f.root, {"deps", "prune", "--keep", "1", "--dry-run", "--json"});
  ASSERT_EQ(dry_json.exit_code, 0) << dry_json.err;
  auto planned = nlohmann::json::parse(dry_json.out);
  auto du = podplane(f.root, {"deps", "du", "--json", "--keep", "1"});
  ASSERT_EQ(du.exit_code, 0) << du.err;
  auto usage = nlohmann::json::parse(du.out);
  auto du_text = podplane(f.root, {"deps", "du"});
  ASSERT_EQ(du_text.exit_code, 0) << du_text.err;
  EXPECT_THAT(du_text.out, HasSubstr("provider " + null_address + ": 3 version(s)"));
  EXPECT_EQ(snapshot(f.root), before) << "a dry run or du changed the store";

  EXPECT_EQ(usage["by_family"]["provider"]["items"], 3);
  EXPECT_EQ(usage["by_family"]["provider"]["rows"], 15);  // 3 × (2 packages, sums, signature, keys)
  EXPECT_EQ(usage["prune"]["objects_freed"], planned["objects_freed"]);
  EXPECT_EQ(usage["prune"]["bytes_freed"], planned["bytes_freed"]);

  auto real = podplane(f.root, {"deps", "prune", "--keep", "1", "--json"});
  ASSERT_EQ(real.exit_code, 0) << real.out << real.err;
  auto done = nlohmann::json::parse(real.out);
  EXPECT_EQ(done["removed_items"], planned["removed_items"]);
  EXPECT_EQ(done["gc"]["objects"].size(), planned["objects_freed"].get<std::size_t>());
  EXPECT_EQ(done["gc"]["bytes"], planned["bytes_freed"]);
  auto again = podplane(f.root, {"deps", "prune", "--keep", "1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("removed 0 item(s)"));
}

TEST(PruneCli, KeepsWhatAClusterStackAndALockPin) {
  PruneFixture f;
  const fs::path stack = f.dir / "stack";
  fs::create_directories(stack);
  test::ProcessOptions in_stack = test::with_deps_root(f.root);
  in_stack.cwd = stack;
  auto init = test::run_podplane({"cluster", "init", "--provider", "aws", "--id", "prune-c"}, in_stack);
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const fs::path config = stack / "podplane.cluster.jsonc";
  ASSERT_TRUE(fs::exists(config));
  // As `cluster create` leaves them: the lock and the manifest copy of the stack's flavour.
  test::write_file(stack / ".terraform.lock.hcl", "provider \"" + null_address + "\" {\n  version = \"3.2.2\"\n  hashes = [\"h1:x=\"]\n}\n");
  {
    Store store = Store::open(f.root, Store::Access::read_only);
    test::write_file(stack / ("podplane.cluster." + manifest_name + ".json"), store.read_object(f.manifest["20260101"]));
  }
  test::write_file(f.dir / "root" / ".terraform.lock.hcl",
                   "provider \"" + null_address + "\" {\n  version = \"3.2.3\"\n  hashes = [\"h1:x=\"]\n}\n");
  auto dry = podplane(f.root, {"deps", "prune", "--keep", "1", "--keep-config", config.string(), "--keep-root",
                               (f.dir / "root").string(), "--dry-run", "--json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  std::map<std::string, std::string> kept;
  const auto planned = nlohmann::json::parse(dry.out);
  for (const auto& item : planned["items"])
    kept[item["family"].get<std::string>() + " " + item["name"].get<std::string>() + " " + item["version"].get<std::string>()] =
        item.value("kept_because", "");
  EXPECT_THAT(kept["provider " + null_address + " 3.2.2"], HasSubstr("pinned by cluster " + config.string()));
  // --keep-root keeps what the root needs (fetch/root_needs.hpp), its lock's providers first.
  EXPECT_THAT(kept["provider " + null_address + " 3.2.3"], HasSubstr("pinned by root " + (f.dir / "root").string()));
  EXPECT_THAT(kept["vmconfig_manifest " + manifest_name + " 20260101"], HasSubstr("pinned by cluster"));
  EXPECT_THAT(kept["vmconfig_artifact containerd 1.7.0"], HasSubstr("needed by"));
  EXPECT_EQ(kept["module " + nstance_address + " 2.0.0"], "");

  auto missing = podplane(f.root, {"deps", "prune", "--keep", "1", "--keep-root", f.dir.path().string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("has no .terraform.lock.hcl"));
  auto zero = podplane(f.root, {"deps", "prune", "--keep", "0"});
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
  auto no_keep = podplane(f.root, {"deps", "prune"});
  EXPECT_EQ(no_keep.exit_code, 2) << no_keep.err;
  auto bad_age = podplane(f.root, {"deps", "prune", "--keep", "1", "--older-than", "soon"});
  EXPECT_EQ(bad_age.exit_code, 2) << bad_age.err;
}

// The items a prune to the newest version leaves in the fixture's store.
std::set<std::string> items_after_keep_one() {
  PruneFixture f;
  Store store = Store::open(f.root, Store::Access::read_write, Store::TempSweep::none);
  PrunePolicy policy;
  policy.keep = 1;
  (void)prune_store(store, policy);
  return items_of(store);
}

class PruneKill : public ::testing::TestWithParam<std::string> {};

TEST_P(PruneKill, AKilledPruneLeavesAStoreVerifyPassesOrTheNextPruneCompletes) {
  ASSERT_TRUE(fs::exists(stress_binary())) << "build the store-stress helper first: " << stress_binary();
  const auto expected = items_after_keep_one();
  PruneFixture f;
  const std::string step = GetParam();
  std::set<std::string> before;
  {
    Store store = Store::open(f.root, Store::Access::read_only);
    before = items_of(store);
  }
  {
    test::ChildProcess prune({stress_binary().string(), f.root.string(), "--prune", "1", "--pause-after", step},
                             f.dir / "prune.stderr");
    ASSERT_EQ(prune.read_line(), "PRUNE " + step) << test::read_file(f.dir / "prune.stderr");
    prune.kill(SIGKILL);
    EXPECT_EQ(prune.wait(), -SIGKILL);
  }
  {
    Store store = Store::open(f.root, Store::Access::read_only);
    auto verify = verify_store(store);
    if (step == "planned") {
      EXPECT_TRUE(verify.ok()) << to_json(verify).dump(2);
      EXPECT_EQ(items_of(store), before);  // nothing went
    } else if (step == "views") {
      EXPECT_TRUE(verify.ok()) << to_json(verify).dump(2);  // only garbage objects are left
      EXPECT_FALSE(verify.garbage.empty());
    }
    if (step != "planned") {
      EXPECT_EQ(items_of(store), expected);  // the rows went at once
    }
  }
  auto next = podplane(f.root, {"deps", "prune", "--keep", "1"});
  ASSERT_EQ(next.exit_code, 0) << next.out << next.err;
  Store store = Store::open(f.root, Store::Access::read_only);
  EXPECT_EQ(items_of(store), expected);
  auto verify = verify_store(store);
  EXPECT_TRUE(verify.ok()) << to_json(verify).dump(2);
  EXPECT_TRUE(verify.garbage.empty()) << to_json(verify).dump(2);
}

INSTANTIATE_TEST_SUITE_P(Steps, PruneKill, ::testing::Values("planned", "rows", "views"));

// A store of nothing but artifacts no manifest lists: a prune removes every row, so a kill
// right after that commit leaves an index with objects rows and no content row. What finishes
// a killed prune (the prune again; or gc and `verify --repair`, in either order) must finish
// this one too, and not take the index for a lost one.
class PruneKillEmptying : public ::testing::TestWithParam<std::string> {};

TEST_P(PruneKillEmptying, APruneKilledAfterRemovingEveryRowIsFinishedByTheNextCommand) {
  ASSERT_TRUE(fs::exists(stress_binary())) << "build the store-stress helper first: " << stress_binary();
  PruneFixture f;  // for its temp dir and its row helper: this test's store is its own
  const fs::path root = f.dir / "unlisted";
  std::vector<std::string> objects;
  {
    Store store = Store::open(root);
    for (std::string name : {"stray", "leftover"})
      for (std::string version : {"1.0", "2.0"}) objects.push_back(f.add_vm_artifact(store, name, version, name + " " + version));
    (void)rebuild_views(store);
  }
  {
    test::ChildProcess prune({stress_binary().string(), root.string(), "--prune", "1", "--pause-after", "rows"}, f.dir / "prune.stderr");
    ASSERT_EQ(prune.read_line(), "PRUNE rows") << test::read_file(f.dir / "prune.stderr");
    prune.kill(SIGKILL);
    EXPECT_EQ(prune.wait(), -SIGKILL);
  }
  {
    Store store = Store::open(root, Store::Access::read_only);
    ASSERT_TRUE(store.artifacts().empty()) << "the prune's commit removed every row";
    for (const auto& digest : objects) ASSERT_TRUE(on_disk(store, digest)) << "the kill came before any object went";
  }

  // gc names what it removes: the prune's objects, and not "an empty index".
  auto gc = [&] {
    auto run = podplane(root, {"deps", "gc"});
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_THAT(run.out, HasSubstr("removed " + std::to_string(objects.size()) + " object(s)"));
    EXPECT_THAT(run.err, ::testing::Not(HasSubstr("empty")));
  };
  auto repair = [&] {
    auto run = podplane(root, {"deps", "verify", "--repair"});
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_THAT(run.out, HasSubstr("removed view vmconfig/artifacts/stray/1.0/stray-1.0.bin"));
  };
  const std::string next = GetParam();
  if (next == "prune") {
    auto again = podplane(root, {"deps", "prune", "--keep", "1"});
    ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  } else if (next == "gc") {
    gc();
    repair();
  } else {
    repair();
    gc();
  }

  auto verify = podplane(root, {"deps", "verify", "--json"});
  ASSERT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_TRUE(nlohmann::json::parse(verify.out)["garbage"].empty()) << verify.out;
  EXPECT_FALSE(fs::exists(root / "vmconfig" / "artifacts" / "stray" / "1.0" / "stray-1.0.bin")) << "a view of a removed row stays";
  {
    Store store = Store::open(root, Store::Access::read_only);
    for (const auto& digest : objects) EXPECT_FALSE(on_disk(store, digest)) << digest;
  }
  auto idle = podplane(root, {"deps", "gc"});
  ASSERT_EQ(idle.exit_code, 0) << idle.out << idle.err;
  EXPECT_THAT(idle.out, HasSubstr("removed 0 object(s)"));
}

INSTANTIATE_TEST_SUITE_P(NextCommand, PruneKillEmptying, ::testing::Values("prune", "gc", "repair"));

// `curl` of one path of a running mirror serve: the HTTP status and the body.
std::pair<std::string, std::string> fetch(const std::string& base, const std::string& path, const fs::path& scratch) {
  auto result = test::run({"curl", "-s", "-o", scratch.string(), "-w", "%{http_code}", base + path});
  return {result.out, fs::exists(scratch) ? test::read_file(scratch) : ""};
}

TEST(PruneCli, MirrorServeAnswersEveryKeptPathWhileAPruneRunsAndAWriterWaits) {
  ASSERT_TRUE(fs::exists(stress_binary())) << stress_binary();
  ASSERT_TRUE(test::have_program("curl"));
  PruneFixture f;
  test::Background serve({test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"},
                         {{"PODPLANE_DEPS_CACHE_DIR", f.root.string()}}, f.dir / "serve.stderr");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << test::read_file(f.dir / "serve.stderr");
  if (base.back() == '/') base.pop_back();
  std::string kept_zip, kept_artifact;
  {
    Store store = Store::open(f.root, Store::Access::read_only);
    kept_zip = store.read_object(f.provider_objects["3.2.4"][3]);  // linux_amd64's zip
    kept_artifact = "containerd 2.0.0";
  }
  const std::vector<std::pair<std::string, std::string>> kept = {
      {"/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip", kept_zip},
      {"/arch/arm64/vmconfig/artifacts/containerd/2.0.0/containerd-2.0.0.bin", kept_artifact},
  };
  auto all_answer = [&](const std::string& when) {
    for (const auto& [path, bytes] : kept) {
      auto [status, body] = fetch(base, path, f.dir / "body");
      EXPECT_EQ(status, "200") << path << " " << when;
      EXPECT_EQ(body, bytes) << path << " " << when;
    }
  };
  all_answer("before the prune");

  test::ChildProcess prune({stress_binary().string(), f.root.string(), "--prune", "1", "--pause-after", "rows"}, f.dir / "prune.stderr");
  ASSERT_EQ(prune.read_line(), "PRUNE rows") << test::read_file(f.dir / "prune.stderr");
  all_answer("with the rows removed");
  // A writer that opens the store now waits for the prune (its shared lock), then runs.
  test::ChildProcess writer({stress_binary().string(), f.root.string(), "--worker", "w", "--unique", "3"}, f.dir / "writer.stderr");
  prune.close_stdin();
  EXPECT_EQ(prune.read_line(), "PRUNED 13");
  EXPECT_EQ(prune.wait(), 0) << test::read_file(f.dir / "prune.stderr");
  EXPECT_EQ(writer.wait(), 0) << test::read_file(f.dir / "writer.stderr");
  all_answer("after the prune");

  Store store = Store::open(f.root);
  EXPECT_EQ(store.artifacts({.address = "stress-worker-w"}).size(), 3u);
  (void)rebuild_views(store);  // the stress writer indexes raw rows; a real fill builds their views
  auto verify = verify_store(store);
  EXPECT_TRUE(verify.ok()) << to_json(verify).dump(2);
}

TEST(PruneCli, MirrorServeStopsAnsweringPrunedPathsAfterAPruneAndKeepsAnsweringKeptOnes) {
  ASSERT_TRUE(test::have_program("curl"));
  PruneFixture f;
  // A short watch interval: serve picks the prune's commit up by itself, no signal.
  test::Background serve({test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http",
                          "--watch-interval", "50"},
                         {{"PODPLANE_DEPS_CACHE_DIR", f.root.string()}}, f.dir / "serve.stderr");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << test::read_file(f.dir / "serve.stderr");
  if (base.back() == '/') base.pop_back();
  const std::string provider_dir = "/v1/mirror/registry.opentofu.org/hashicorp/null/";
  std::string kept_zip, pruned_zip;
  {
    Store store = Store::open(f.root, Store::Access::read_only);
    kept_zip = store.read_object(f.provider_objects["3.2.4"][3]);  // linux_amd64's zip
    pruned_zip = store.read_object(f.provider_objects["3.2.3"][3]);
  }
  // Kept paths with their bytes ("" where only the status matters); pruned paths.
  const std::vector<std::pair<std::string, std::string>> kept = {
      {provider_dir + "terraform-provider-null_3.2.4_linux_amd64.zip", kept_zip},
      {provider_dir + "3.2.4.json", ""},
      {provider_dir + "index.json", ""},
      {"/arch/arm64/vmconfig/artifacts/containerd/2.0.0/containerd-2.0.0.bin", "containerd 2.0.0"},
  };
  const std::vector<std::string> pruned = {
      provider_dir + "terraform-provider-null_3.2.3_linux_amd64.zip",
      provider_dir + "terraform-provider-null_3.2.2_linux_arm64.zip",
      provider_dir + "3.2.3.json",
      provider_dir + "3.2.2.json",
      "/arch/arm64/vmconfig/artifacts/containerd/1.7.0/containerd-1.7.0.bin",
  };
  auto kept_answer = [&](const std::string& when) {
    for (const auto& [path, bytes] : kept) {
      auto [status, body] = fetch(base, path, f.dir / "body");
      EXPECT_EQ(status, "200") << path << " " << when;
      if (!bytes.empty()) {
        EXPECT_EQ(body, bytes) << path << " " << when;
      }
    }
  };
  kept_answer("before the prune");
  for (const auto& path : pruned) EXPECT_EQ(fetch(base, path, f.dir / "body").first, "200") << path << " before the prune";
  EXPECT_EQ(fetch(base, provider_dir + "terraform-provider-null_3.2.3_linux_amd64.zip", f.dir / "body").second, pruned_zip);

  auto real = podplane(f.root, {"deps", "prune", "--keep", "1"});
  ASSERT_EQ(real.exit_code, 0) << real.out << real.err;

  // Bounded wait for the reload: until every pruned path answers 404 (or 10 s pass).
  auto statuses = [&] {
    std::map<std::string, std::string> answers;
    for (const auto& path : pruned) answers[path] = fetch(base, path, f.dir / "body").first;
    return answers;
  };
  const auto all_gone = [](const std::map<std::string, std::string>& answers) {
    for (const auto& [path, status] : answers)
      if (status != "404") return false;
    return true;
  };
  auto answers = statuses();
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       !all_gone(answers) && std::chrono::steady_clock::now() < deadline; answers = statuses())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (const auto& [path, status] : answers) EXPECT_EQ(status, "404") << path << "\n" << test::read_file(f.dir / "serve.stderr");
  kept_answer("after the prune");
  auto index = nlohmann::json::parse(fetch(base, provider_dir + "index.json", f.dir / "body").second);
  EXPECT_EQ(index["versions"], nlohmann::json({{"3.2.4", nlohmann::json::object()}})) << index.dump();
}

}  // namespace
}  // namespace podplane::cache
