// Golden files of the bundle formats (docs/bundle-format.md): the manifest and signature
// block of a whole-store bundle, the signature block of an unsigned one, the inventory of that
// store, and the manifest of a delta cut against that inventory, all from a small store whose
// every byte is fixed. Every JSON example in docs/bundle-format.md must be one of these files
// (marked `<!-- golden: tests/data/bundle/… -->`), so the doc, the files and the writers
// cannot drift apart. Signed with the secret key of RFC 8032 test 1, so the signature is fixed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "base/digest.hpp"
#include "bundle/create.hpp"
#include "bundle/manifest.hpp"
#include "cache/store.hpp"
#include "lockfile/hash.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/zip_fixture.hpp"

namespace podplane::bundle {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::read_file;
using test::run;
using test::run_podplane;
using test::TempDir;
using test::write_file;

// RFC 8032 §7.1 test 1: secret key 9d61b19d…7f60, public key d75a9801…511a.
constexpr const char* kTestKey =
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n"
    "-----END PRIVATE KEY-----\n";
constexpr const char* kTestPublicKey =
    "-----BEGIN PUBLIC KEY-----\n"
    "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"
    "-----END PUBLIC KEY-----\n";

// `bundle inventory` draws a random store id; the golden inventory carries this one instead.
constexpr const char* kGoldenStoreId = "00112233445566778899aabbccddeeff";

const std::string kAws = "registry.opentofu.org/hashicorp/aws";
const std::string kNstance = "registry.opentofu.org/nstance-dev/nstance/aws";

// One provider release for linux_amd64 as `deps tf` stores it: SHA256SUMS, its signature and
// the registry's keys (artifacts too), and the package with its provenance.
void add_aws_release(cache::Store& store, const fs::path& scratch, const std::string& version, const std::string& added_at) {
  const std::string base = "terraform-provider-aws_" + version;
  const std::string release = "https://releases.hashicorp.com/terraform-provider-aws/" + version + "/";
  const fs::path zip = scratch / (base + "_linux_amd64.zip");
  test::make_zip(zip, {{"terraform-provider-aws_v" + version + "_x5", "#!/bin/sh\necho terraform-provider-aws " + version + "\n",
                        test::ZipEntry::Kind::file, false}});
  const std::string zip_digest = store.add_file(zip);
  const std::string sums_digest = store.add_bytes(zip_digest + "  " + base + "_linux_amd64.zip\n");
  const std::string sig_digest = store.add_bytes("(the detached OpenPGP signature of " + base + "_SHA256SUMS)\n");
  const std::string keys_digest =
      store.add_bytes(R"json({"gpg_public_keys":[{"key_id":"34365D9472D7468F","ascii_armor":"(armored key)"}]})json");
  // The shared builders' rows, from where the golden release came and when.
  auto add = [&](cache::Artifact a, const std::string& url, const std::string& h1 = "") {
    a.h1 = h1;
    a.upstream_url = url;
    a.added_at = added_at;
    return store.add_artifact(a);
  };
  add(test::provider_document_row(cache::ArtifactKind::provider_shasums, sums_digest, kAws, version), release + base + "_SHA256SUMS");
  add(test::provider_document_row(cache::ArtifactKind::provider_signature, sig_digest, kAws, version),
      release + base + "_SHA256SUMS.sig");
  add(test::provider_document_row(cache::ArtifactKind::provider_keys, keys_digest, kAws, version),
      "https://registry.opentofu.org/v1/providers/hashicorp/aws/" + version + "/download/linux/amd64");
  std::int64_t id = add(test::provider_package_row(zip_digest, "linux_amd64", kAws, version), release + base + "_linux_amd64.zip",
                        lockfile::h1_hash_of_zip(zip));
  cache::Provenance p;
  p.artifact_id = id;
  p.shasums_digest = sums_digest;
  p.signature_digest = sig_digest;
  p.keys_digest = keys_digest;
  p.key_fingerprint = "C874011F0AB405110D02105534365D9472D7468F";
  p.result = "signed";
  p.checked_at = added_at;
  store.add_provenance(p);
}

void select_aws(cache::Store& store, const std::string& version) {
  cache::TfSelection s;
  s.providers = {{kAws, version, "~> 6.0"}};
  s.platforms = {"linux_amd64"};
  s.module_address = kNstance;
  s.module_version = "2.0.1";
  s.engine = "tofu";
  store.set_tf_selection(s);
}

// The whole store of the golden files: aws 6.2.0, the nstance module 2.0.1, one vmconfig
// manifest with its kernel, and the selection.
void fill_golden_store(cache::Store& store, const fs::path& scratch) {
  add_aws_release(store, scratch, "6.2.0", "2026-11-02T10:00:00Z");
  cache::ModuleTree tree;
  tree.address = kNstance;
  tree.version = "2.0.1";
  tree.upstream_url = "https://github.com/nstance-dev/terraform-aws-nstance/archive/refs/tags/v2.0.1.tar.gz";
  tree.added_at = "2026-11-02T10:00:05Z";
  for (const auto& [path, mode, content] :
       std::vector<std::tuple<std::string, std::uint32_t, std::string>>{
           {"main.tf", 0644, "module \"cluster\" {\n  source = \"./modules/cluster\"\n}\n"},
           {"modules/cluster/bootstrap.sh", 0755, "#!/bin/sh\nexec nstance-agent\n"}}) {
    const std::string digest = store.add_bytes(content);
    tree.files.push_back({path, mode, digest, static_cast<std::int64_t>(content.size())});
  }
  store.add_module_tree(tree);

  const std::string kernel = "(the kernel image of vmconfig knc debian-13 amd64)\n";
  const std::string kernel_digest = store.add_bytes(kernel);
  const std::string manifest = R"({"vmconfig":{"version":"13.2","dependencies":{"kernel":{"digest":"sha256:)" +
                               kernel_digest + R"("}}}})" "\n";
  // As deps download stores a manifest (trust unverified, its file name stamped), and a file it lists.
  cache::Artifact m = test::vmconfig_manifest_row(store.add_bytes(manifest), "vmconfig_knc_debian-13_amd64", "13.2");
  m.upstream_url = "https://vmconfig.example.com/manifests/vmconfig_knc_debian-13_amd64.json";
  m.added_at = "2026-11-03T08:00:00Z";
  store.add_artifact(m);
  cache::Artifact k =
      test::vmconfig_artifact_row(kernel_digest, "kernel", "6.12.1", "https://vmconfig.example.com/artifacts/vmlinuz-6.12.1");
  k.added_at = "2026-11-03T08:00:01Z";
  store.add_artifact(k);
  select_aws(store, "6.2.0");
}

class BundleGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_program("python3") || !test::have_program("tar"))
      GTEST_SKIP() << "python3 (to write the provider zip) and tar (to read volumes) are needed";
    write_file(dir / "site.key", kTestKey);
    ::chmod((dir / "site.key").c_str(), 0600);
    write_file(dir / "site.pub", kTestPublicKey);
    auto store = cache::Store::open(root());
    fill_golden_store(store, dir.path());
  }
  fs::path root() const { return dir / "online"; }
  test::ProcessOptions at(const fs::path& deps_root) const {
    test::ProcessOptions options;
    options.env["PODPLANE_DEPS_CACHE_DIR"] = deps_root.string();
    return options;
  }
  // One entry of a volume, read by GNU tar.
  std::string entry(const fs::path& volume, const std::string& name) const {
    auto result = run({"tar", "-xOf", volume.string(), name});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.out;
  }
  // `bundle inventory` of the golden store, with the golden store id in place of its random one.
  std::string inventory() const {
    auto result = run_podplane({"bundle", "inventory"}, at(root()));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    const std::string id = json::parse(result.out).at("store_id").get<std::string>();
    EXPECT_TRUE(std::regex_match(id, std::regex("[0-9a-f]{32}"))) << id;
    std::string text = result.out;
    const std::string field = "\"store_id\":\"" + id + "\"";
    auto at = text.find(field);
    EXPECT_NE(at, std::string::npos) << text;
    if (at != std::string::npos) text.replace(at, field.size(), "\"store_id\":\"" + std::string(kGoldenStoreId) + "\"");
    return text;
  }

  TempDir dir;
};

TEST_F(BundleGolden, ManifestAndSignatureOfAWholeStoreBundle) {
  const fs::path bundle = dir / "site.bundle";
  auto create = run_podplane({"bundle", "create", bundle.string(), "--sign", (dir / "site.key").string()}, at(root()));
  ASSERT_EQ(create.exit_code, 0) << create.out << create.err;
  test::expect_golden("bundle/whole-store.manifest.json", entry(bundle, "manifest.json"));
  test::expect_golden("bundle/whole-store.manifest.sig", entry(bundle, "manifest.sig"));

  // What the golden files describe imports as it is, signature and h1 checks included.
  auto import = run_podplane({"bundle", "import", bundle.string(), "--trust", (dir / "site.pub").string()}, at(dir / "offline"));
  EXPECT_EQ(import.exit_code, 0) << import.out << import.err;
}

TEST_F(BundleGolden, SignatureBlockOfAnUnsignedBundle) {
  const fs::path bundle = dir / "unsigned.bundle";
  auto create = run_podplane({"bundle", "create", bundle.string()}, at(root()));
  ASSERT_EQ(create.exit_code, 0) << create.out << create.err;
  test::expect_golden("bundle/unsigned.manifest.sig", entry(bundle, "manifest.sig"));
  // The manifest does not depend on the signature.
  test::expect_golden("bundle/whole-store.manifest.json", entry(bundle, "manifest.json"));
}

TEST_F(BundleGolden, InventoryOfTheStore) { test::expect_golden("bundle/inventory.json", inventory()); }

// A delta cut against the golden inventory after an upgrade to aws 6.3.0, expiring 30 days
// after a fixed "now" (through the library: the binary takes the wall clock).
TEST_F(BundleGolden, ManifestOfADeltaThatExpires) {
  write_file(dir / "inventory.json", inventory());
  {
    auto store = cache::Store::open(root());
    add_aws_release(store, dir.path(), "6.3.0", "2026-12-01T09:30:00Z");
    select_aws(store, "6.3.0");
  }
  auto store = cache::Store::open(root());
  CreateOptions options;
  options.since = dir / "inventory.json";
  options.signing_key = dir / "site.key";
  options.expires_in = parse_duration("30d");
  options.now = [] { return parse_rfc3339("2026-12-01T12:00:00Z"); };
  auto plan = plan_bundle(store, dir / "delta.bundle", options);
  ASSERT_EQ(plan.volumes.size(), 1u);
  test::expect_golden("bundle/delta.manifest.json", plan.volumes[0].manifest_bytes);
}

// The parsers read every golden file back to the same bytes.
TEST(BundleGoldenFiles, ParseAndSerializeToTheSameBytes) {
  const fs::path data = test::test_data_dir() / "bundle";
  for (const char* name : {"whole-store.manifest.json", "delta.manifest.json"}) {
    const std::string bytes = read_file(data / name);
    EXPECT_EQ(BundleManifest::parse(bytes).serialize(), bytes) << name;
  }
  for (const char* name : {"whole-store.manifest.sig", "unsigned.manifest.sig"}) {
    const std::string bytes = read_file(data / name);
    EXPECT_EQ(SignatureBlock::parse(bytes).serialize(), bytes) << name;
  }
  const std::string inventory = read_file(data / "inventory.json");
  EXPECT_EQ(Inventory::parse(inventory).serialize(), inventory);
  // The delta names the golden inventory it was cut against.
  auto delta = BundleManifest::parse(read_file(data / "delta.manifest.json"));
  ASSERT_TRUE(delta.since);
  EXPECT_EQ(delta.since->inventory_digest, sha256_hex(inventory));
}

// A value on one line, with a space after ':' and ','.
std::string one_line(const json& value) {
  if (!value.is_structured()) return value.dump();
  std::string out = value.is_object() ? "{" : "[";
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    out += first ? "" : ", ";
    first = false;
    if (value.is_object()) out += json(it.key()).dump() + ": ";
    out += one_line(*it);
  }
  return out + (value.is_object() ? "}" : "]");
}

// An example as the doc would show it: a value on one line when it fits in 100 columns, else
// one member per line, keys sorted. Two values are equal exactly when their layouts are, and a
// difference shows as a line diff, with text that can be pasted into the doc.
std::string doc_layout(const json& value, std::size_t indent = 0) {
  std::string flat = one_line(value);
  if (!value.is_structured() || value.empty() || indent + flat.size() <= 100) return flat;
  const std::string pad(indent + 2, ' ');
  std::string out = value.is_object() ? "{\n" : "[\n";
  std::size_t n = 0;
  for (auto it = value.begin(); it != value.end(); ++it) {
    out += pad + (value.is_object() ? json(it.key()).dump() + ": " : "") + doc_layout(*it, indent + 2) +
           (++n < value.size() ? ",\n" : "\n");
  }
  return out + std::string(indent, ' ') + (value.is_object() ? "}" : "]");
}

TEST(BundleFormatDoc, EveryJsonExampleIsAGoldenFileAndEveryGoldenFileIsShown) {
  const fs::path doc = test::source_dir() / "docs" / "bundle-format.md";
  std::istringstream lines(read_file(doc));
  const std::regex marker(R"(<!-- golden: (tests/data/bundle/[A-Za-z0-9._-]+) -->)");
  std::set<std::string> shown;
  std::string line, pending;
  int number = 0, pending_line = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::smatch m;
    if (std::regex_search(line, m, marker)) {
      pending = m[1];
      pending_line = number;
      continue;
    }
    if (!line.starts_with("```json")) continue;
    const int block_line = number;
    std::string block;
    while (std::getline(lines, line) && !line.starts_with("```")) {
      ++number;
      block += line + "\n";
    }
    ++number;
    if (pending.empty() || pending_line != block_line - 1) {
      ADD_FAILURE() << doc.string() << ":" << block_line
                    << ": a JSON example without a `<!-- golden: tests/data/bundle/NAME -->` line right above it";
      pending.clear();
      continue;
    }
    const fs::path golden = test::source_dir() / pending;
    shown.insert(pending);
    if (!fs::exists(golden)) {
      ADD_FAILURE() << doc.string() << ":" << block_line << ": " << pending << " does not exist";
      pending.clear();
      continue;
    }
    const std::string expected = read_file(golden);
    const json parsed = json::parse(block, nullptr, false);
    const json want = json::parse(expected, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << doc.string() << ":" << block_line << ": the example is not valid JSON";
    ASSERT_FALSE(want.is_discarded()) << pending << " is not valid JSON";
    // The golden file is the canonical form, and the doc's example is the same JSON value
    // (compared laid out, so that a difference shows as a line diff).
    EXPECT_EQ(want.dump() + "\n", expected) << pending << " is not compact JSON with sorted keys and one newline";
    if (!parsed.is_discarded()) {
      EXPECT_EQ(doc_layout(parsed), doc_layout(want))
          << doc.string() << ":" << block_line << ": the example is not " << pending
          << " (any key order and layout will do; the one above, with sorted keys, can be pasted)";
    }
    pending.clear();
  }
  for (const char* name : {"whole-store.manifest.json", "delta.manifest.json", "whole-store.manifest.sig",
                           "unsigned.manifest.sig", "inventory.json"}) {
    const std::string path = std::string("tests/data/bundle/") + name;
    EXPECT_TRUE(shown.count(path)) << doc.string() << " shows no example of " << path;
  }
}

}  // namespace
}  // namespace podplane::bundle
