// Pure format tests: keys and signatures, manifest and inventory (de)serialisation, names.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "base/error.hpp"
#include "bundle/create.hpp"
#include "bundle/manifest.hpp"
#include "bundle/signing.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

using podplane::test::TempDir;

TEST(BundleSigning, KeygenWritesPrivateKeyMode0600AndSignsVerifiably) {
  TempDir dir;
  auto files = generate_key_pair(dir / "site");
  struct stat st {};
  ASSERT_EQ(::stat(files.private_key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto key = SigningKey::load(files.private_key);
  auto pub = PublicKey::load(files.public_key);
  EXPECT_EQ(key.public_key().raw_hex(), pub.raw_hex());
  EXPECT_EQ(pub.key_id().rfind("sha256:", 0), 0u);
  std::string signature = key.sign_hex("manifest bytes");
  EXPECT_EQ(signature.size(), 128u);
  EXPECT_EQ(signature, key.sign_hex("manifest bytes")) << "Ed25519 is deterministic: reproducible bundles rely on it";
  EXPECT_TRUE(pub.verifies("manifest bytes", signature));
  EXPECT_FALSE(pub.verifies("manifest bytez", signature));
  std::string flipped = signature;
  flipped[5] = flipped[5] == '0' ? '1' : '0';
  EXPECT_FALSE(pub.verifies("manifest bytes", flipped));
  EXPECT_FALSE(pub.verifies("manifest bytes", "zz"));
}

TEST(BundleSigning, KeygenRefusesToOverwrite) {
  TempDir dir;
  (void)generate_key_pair(dir / "k");
  EXPECT_THROW(generate_key_pair(dir / "k"), Error);
}

TEST(BundleSigning, OtherKeyDoesNotVerify) {
  TempDir dir;
  auto a = SigningKey::load(generate_key_pair(dir / "a").private_key);
  auto b = PublicKey::load(generate_key_pair(dir / "b").public_key);
  EXPECT_FALSE(b.verifies("m", a.sign_hex("m")));
}

TEST(BundleSigning, RejectsNonEd25519AndGarbageKeys) {
  TempDir dir;
  podplane::test::write_file(dir / "garbage.pub", "not a key\n");
  EXPECT_THROW(PublicKey::load(dir / "garbage.pub"), Error);
  auto rsa = podplane::test::run({"openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out",
                                  (dir / "rsa.key").string()});
  ASSERT_EQ(rsa.exit_code, 0) << rsa.err;
  EXPECT_THROW(SigningKey::load(dir / "rsa.key"), Error);
}

BundleManifest sample_manifest() {
  BundleManifest m;
  m.tool_version = "0.1.0";
  m.created_at = "2026-11-03T08:00:01Z";
  m.bundle_id = std::string(64, 'a');
  m.since = SinceInventory{std::string(64, 'b'), "store-1", 7};
  m.platforms = {"linux_amd64"};
  m.volume_index = 2;
  m.volume_count = 3;
  m.total_objects = 1;
  m.total_bytes = 5;
  m.objects = {{std::string(64, 'c'), 5}};
  TravellingArtifact a;
  a.artifact.kind = cache::ArtifactKind::provider_package;
  a.artifact.address = "registry.opentofu.org/hashicorp/aws";
  a.artifact.version = "6.2.0";
  a.artifact.platform = "linux_amd64";
  a.artifact.filename = "terraform-provider-aws_6.2.0_linux_amd64.zip";
  a.artifact.digest = std::string(64, 'c');
  a.artifact.size = 5;
  a.artifact.trust = cache::Trust::signed_upstream;
  cache::Provenance p;
  p.shasums_digest = std::string(64, 'd');
  p.result = "signed";
  a.provenance.push_back(p);
  m.artifacts.push_back(a);
  cache::ModuleTree t;
  t.address = "registry.opentofu.org/nstance-dev/nstance/aws";
  t.version = "2.0.1";
  t.files.push_back({"modules/cluster/main.tf", 0644, std::string(64, 'e'), 10});
  m.module_trees.push_back(t);
  cache::TfSelection s;
  s.providers.push_back({"registry.opentofu.org/hashicorp/aws", "6.2.0", "~> 6.0"});
  s.platforms = {"linux_amd64"};
  m.tf_selection = s;
  return m;
}

TEST(BundleManifestFormat, RoundTripsByteForByte) {
  BundleManifest m = sample_manifest();
  std::string text = m.serialize();
  BundleManifest back = BundleManifest::parse(text);
  EXPECT_EQ(back.serialize(), text);
  EXPECT_EQ(back.volume_index, 2);
  EXPECT_EQ(back.since->store_id, "store-1");
  ASSERT_EQ(back.artifacts.size(), 1u);
  EXPECT_EQ(back.artifacts[0].provenance.at(0).shasums_digest, std::string(64, 'd'));
  EXPECT_EQ(back.module_trees.at(0).files.at(0).path, "modules/cluster/main.tf");
  EXPECT_EQ(text.back(), '\n');
}

void expect_refused(const std::function<void(BundleManifest&)>& mutate, const std::string& needle) {
  BundleManifest m = sample_manifest();
  mutate(m);
  try {
    (void)BundleManifest::parse(m.serialize());
    ADD_FAILURE() << "accepted a manifest that should be refused (" << needle << ")";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(BundleManifestFormat, RefusesHostileNamesAndDigests) {
  expect_refused([](auto& m) { m.artifacts[0].artifact.filename = "../../etc/passwd"; }, "path separator");
  expect_refused([](auto& m) { m.artifacts[0].artifact.filename = ".."; }, "relative directory");
  expect_refused([](auto& m) { m.artifacts[0].artifact.address = "/etc/x"; }, "absolute");
  expect_refused([](auto& m) { m.artifacts[0].artifact.address = "registry/../x"; }, "'..'");
  expect_refused([](auto& m) { m.artifacts[0].artifact.version = "1.0\n"; }, "control character");
  expect_refused([](auto& m) { m.module_trees[0].files[0].path = "../outside.tf"; }, "'..'");
  expect_refused([](auto& m) { m.module_trees[0].files[0].path = "/abs.tf"; }, "absolute");
  expect_refused([](auto& m) { m.module_trees[0].files[0].mode = 04755; }, "permission bits");
  expect_refused([](auto& m) { m.objects[0].digest = "ABC"; }, "sha256");
  expect_refused([](auto& m) { m.objects.push_back(m.objects[0]); }, "twice");
  expect_refused([](auto& m) { m.volume_index = 4; }, "out of range");
  expect_refused([](auto& m) { m.format_version = 2; }, "format version");
  expect_refused([](auto& m) { m.tf_selection->engine = "bash"; }, "engine");
}

// A provider package's plugin protocols travel only where the store knows them; a manifest
// without them (an older podplane's) reads as before, with the protocols not known.
TEST(BundleManifestFormat, ProtocolsTravelWhenKnownAndOldManifestsReadAsUnknown) {
  BundleManifest m = sample_manifest();
  std::string old_text = m.serialize();
  EXPECT_EQ(old_text.find("protocols"), std::string::npos);
  EXPECT_FALSE(BundleManifest::parse(old_text).artifacts.at(0).artifact.protocols.has_value());
  const std::string unknown_id = row_id(m.artifacts[0].artifact, m.artifacts[0].provenance);

  m.artifacts[0].artifact.protocols = std::vector<std::string>{"5.0", "6.0"};
  std::string text = m.serialize();
  EXPECT_NE(text.find("\"protocols\":[\"5.0\",\"6.0\"]"), std::string::npos) << text;
  BundleManifest back = BundleManifest::parse(text);
  EXPECT_EQ(back.serialize(), text);
  EXPECT_EQ(back.artifacts.at(0).artifact.protocols, (std::vector<std::string>{"5.0", "6.0"}));
  EXPECT_NE(row_id(m.artifacts[0].artifact, m.artifacts[0].provenance), unknown_id)
      << "a store that lacks the protocols lacks the row: a delta must carry it";

  m.artifacts[0].artifact.protocols = std::vector<std::string>{};
  back = BundleManifest::parse(m.serialize());
  ASSERT_TRUE(back.artifacts.at(0).artifact.protocols.has_value()) << "[] (upstream listed none) is known";
  EXPECT_TRUE(back.artifacts.at(0).artifact.protocols->empty());

  for (const char* hostile : {"\"protocols\":\"6.0\",", "\"protocols\":[6],", "\"protocols\":{\"6.0\":1},"}) {
    std::string bad = old_text;
    bad.insert(bad.find("\"provenance\""), hostile);
    EXPECT_THROW((void)BundleManifest::parse(bad), Error) << hostile;
  }
}

TEST(BundleManifestFormat, RefusesMalformedJson) {
  EXPECT_THROW(BundleManifest::parse("{"), Error);
  EXPECT_THROW(BundleManifest::parse("[]"), Error);
  EXPECT_THROW(BundleManifest::parse("{\"format\":\"podplane-bundle\"}"), Error);
  std::string text = sample_manifest().serialize();
  text.replace(text.find("\"size\":5"), 8, "\"size\":-5");
  EXPECT_THROW(BundleManifest::parse(text), Error);
}

TEST(BundleSignatureBlock, RoundTripsAndRefusesUnknownAlgorithms) {
  SignatureBlock none;
  EXPECT_EQ(SignatureBlock::parse(none.serialize()).algorithm, "none");
  SignatureBlock signed_block{"ed25519", std::string(64, '1'), "sha256:x", std::string(128, '2')};
  auto back = SignatureBlock::parse(signed_block.serialize());
  EXPECT_EQ(back.signature_hex, signed_block.signature_hex);
  EXPECT_THROW(SignatureBlock::parse("{\"algorithm\":\"rsa\"}"), Error);
}

TEST(BundleInventory, RoundTripsAndRefusesBadDigests) {
  Inventory inventory;
  inventory.tool_version = "0.1.0";
  inventory.store_id = "abc";
  inventory.generation = 3;
  inventory.objects = {std::string(64, '1'), std::string(64, '2')};
  inventory.rows = {std::string(64, '3')};
  auto back = Inventory::parse(inventory.serialize());
  EXPECT_EQ(back.objects, inventory.objects);
  EXPECT_EQ(back.rows, inventory.rows);
  EXPECT_EQ(back.serialize(), inventory.serialize());
  EXPECT_THROW(Inventory::parse("{\"format\":\"podplane-inventory\",\"format_version\":1,\"tool_version\":\"\",\"store_id\":\"\","
                                "\"generation\":0,\"objects\":[\"x\"],\"rows\":[]}"),
               Error);
  EXPECT_THROW(Inventory::parse(sample_manifest().serialize()), Error);
}

TEST(BundleRowIds, ChangeWithContentAndProvenance) {
  TravellingArtifact a = sample_manifest().artifacts[0];
  std::string id = row_id(a.artifact, a.provenance);
  EXPECT_EQ(id, row_id(a.artifact, a.provenance));
  auto other = a;
  other.artifact.digest = std::string(64, 'f');
  EXPECT_NE(row_id(other.artifact, other.provenance), id);
  EXPECT_NE(row_id(a.artifact, {}), id);
  EXPECT_EQ(objects_of(a), (std::vector<std::string>{std::string(64, 'c'), std::string(64, 'd')}));
}

TEST(BundleSizes, ParsesBinarySuffixesAndRefusesGarbage) {
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(parse_size("700M"), 700ULL << 20);
  EXPECT_EQ(parse_size("4G"), 4ULL << 30);
  EXPECT_EQ(parse_size("123"), 123u);
  for (const char* bad : {"", "M", "0", "12X", "-1K", "1.5G", "99999999999999999G"}) EXPECT_THROW(parse_size(bad), UsageError) << bad;
}

TEST(BundleSizes, VolumeNamesSayKOfN) {
  EXPECT_EQ(volume_file("/m/b.tar", 1, 1), "/m/b.tar");
  EXPECT_EQ(volume_file("/m/b.tar", 2, 3), "/m/b.tar.002-of-003");
}

}  // namespace
}  // namespace podplane::bundle
