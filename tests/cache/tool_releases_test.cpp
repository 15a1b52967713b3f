// Engine releases in the store (docs/tools.md): the pinned release keys are the keys their
// projects publish (their fingerprints, read by librnp), the file names follow the upstream
// layouts, and the row rules hold a release row to those names.
#include <gtest/gtest.h>

#include <ctime>
#include <sstream>

#include "base/error.hpp"
#include "cache/openpgp.hpp"
#include "cache/kinds.hpp"
#include "cache/row_rules.hpp"
#include "cache/tool_releases.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

using lockfile::Engine;

TEST(ToolReleases, PinnedKeysAreTheKeysEachProjectPublishes) {
  EXPECT_EQ(pinned_tool_key_fingerprint(Engine::terraform), "C874011F0AB405110D02105534365D9472D7468F");
  EXPECT_EQ(pinned_tool_key_fingerprint(Engine::tofu), "E3E6E43D84CB852EADB0051D0C0AF313E5FD9F80");
  for (auto engine : {Engine::terraform, Engine::tofu}) {
    SCOPED_TRACE(std::string(tool_binary_name(engine)));
    auto fingerprints = cache::key_fingerprints(pinned_tool_key(engine));
    ASSERT_EQ(fingerprints.size(), 1u) << "one primary key per project";
    EXPECT_EQ(fingerprints.front(), pinned_tool_key_fingerprint(engine));
  }
}

// A pinned key whose self-signature has lapsed makes every release signed since refuse to
// verify (HashiCorp's copy of 2021 lapsed on 2026-04-18 and broke the clients that pinned it).
// gpg reads each pinned key: the primary key, and a key that signs (the primary itself or a
// subkey), must stay valid for 90 days more, so this fails well before a real release would.
TEST(ToolReleases, PinnedKeysStayValidForNinetyDaysMore) {
  const std::time_t horizon = std::time(nullptr) + 90L * 24 * 3600;
  for (auto engine : {Engine::terraform, Engine::tofu}) {
    SCOPED_TRACE(std::string(tool_binary_name(engine)));
    test::TempDir dir;
    test::write_file(dir / "key.asc", std::string(pinned_tool_key(engine)));
    test::ProcessOptions options;
    options.env["GNUPGHOME"] = dir.path().string();
    auto shown = test::run({"gpg", "--show-keys", "--with-colons", (dir / "key.asc").string()}, options);
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    // Colon records: field 2 validity ("e" expired), 7 expiry (seconds, empty: never), 12 capabilities.
    bool primary_valid = false, signer_valid = false;
    std::istringstream lines(shown.out);
    for (std::string line; std::getline(lines, line);) {
      std::vector<std::string> fields;
      std::istringstream parts(line);
      for (std::string field; std::getline(parts, field, ':');) fields.push_back(field);
      if (fields.size() < 12 || (fields[0] != "pub" && fields[0] != "sub")) continue;
      const bool valid = fields[1] != "e" && fields[1] != "r" &&
                         (fields[6].empty() || std::stoll(fields[6]) > static_cast<long long>(horizon));
      if (fields[0] == "pub") primary_valid = valid;
      if (valid && fields[11].find('s') != std::string::npos) signer_valid = true;  // lower case: its own capability
    }
    EXPECT_TRUE(primary_valid) << "the pinned primary key expires within 90 days:\n" << shown.out;
    EXPECT_TRUE(signer_valid) << "no signing key valid for 90 days more:\n" << shown.out;
  }
}

TEST(ToolReleases, FileNamesFollowTheUpstreamLayouts) {
  EXPECT_EQ(tool_archive_name(Engine::terraform, "1.9.8", "linux_amd64"), "terraform_1.9.8_linux_amd64.zip");
  EXPECT_EQ(tool_shasums_name(Engine::terraform, "1.9.8"), "terraform_1.9.8_SHA256SUMS");
  EXPECT_EQ(tool_signature_name(Engine::terraform, "1.9.8"), "terraform_1.9.8_SHA256SUMS.sig");
  EXPECT_EQ(tool_archive_name(Engine::tofu, "1.8.5", "darwin_arm64"), "tofu_1.8.5_darwin_arm64.zip");
  EXPECT_EQ(tool_signature_name(Engine::tofu, "1.8.5"), "tofu_1.8.5_SHA256SUMS.gpgsig");
}

TEST(ToolReleases, ListedDigestNamesTheDocumentWhenTheFileIsMissing) {
  const std::string digest(64, 'a');
  const std::string sums = digest + "  terraform_1.9.8_linux_amd64.zip\n";
  EXPECT_EQ(tool_listed_digest(sums, "terraform_1.9.8_linux_amd64.zip", "terraform_1.9.8_SHA256SUMS"), digest);
  try {
    (void)tool_listed_digest(sums, "terraform_1.9.8_linux_arm64.zip", "terraform_1.9.8_SHA256SUMS");
    FAIL() << "a file the document does not list";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "terraform_1.9.8_SHA256SUMS lists no terraform_1.9.8_linux_arm64.zip");
  }
}

Artifact archive_row() {
  Artifact row = test::engine_release_row(ArtifactKind::tool_archive, std::string(64, 'b'));
  row.size = 10;
  return row;
}

TEST(ToolReleases, RowRulesHoldAReleaseRowToItsUpstreamNames) {
  EXPECT_NO_THROW(check_artifact_layout(archive_row()));
  auto other_engine = archive_row();
  other_engine.address = "packer";
  EXPECT_THROW(check_artifact_layout(other_engine), Error);
  auto renamed = archive_row();
  renamed.filename = "../terraform";
  EXPECT_THROW(check_artifact_layout(renamed), Error);
  auto no_platform = archive_row();
  no_platform.platform = "";
  EXPECT_THROW(check_artifact_layout(no_platform), Error);
  auto loose_version = archive_row();
  loose_version.version = "v1.9.8";
  loose_version.filename = "terraform_v1.9.8_linux_amd64.zip";
  EXPECT_THROW(check_artifact_layout(loose_version), Error);
  Artifact sums = test::engine_release_row(ArtifactKind::tool_shasums, std::string(64, 'b'));
  EXPECT_EQ(sums.filename, "terraform_1.9.8_SHA256SUMS");
  EXPECT_NO_THROW(check_artifact_layout(sums));
  Artifact signature = test::engine_release_row(ArtifactKind::tool_signature, std::string(64, 'b'));
  EXPECT_EQ(signature.filename, "terraform_1.9.8_SHA256SUMS.sig");
  EXPECT_NO_THROW(check_artifact_layout(signature));
  signature.filename = "terraform_1.9.8_SHA256SUMS.gpgsig";
  EXPECT_THROW(check_artifact_layout(signature), Error);
}

}  // namespace
}  // namespace podplane::cache
