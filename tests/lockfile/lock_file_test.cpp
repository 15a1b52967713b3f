// .terraform.lock.hcl: the writer against the bytes of docs/protocols.md §4.1 (golden files),
// and the reader's strictness.
#include "lockfile/lock_file.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::lockfile {
namespace {

// docs/protocols.md §4.1, byte for byte (locks_file_test.go's expected bytes).
constexpr const char* kReferenceExample = R"(# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.terraform.io/test/bar" {
  version     = "1.2.0"
  constraints = "~> 1.0"
}

provider "registry.terraform.io/test/foo" {
  version     = "1.0.0"
  constraints = ">= 1.0.0"
  hashes = [
    "test:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "test:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
  ]
}
)";

LockFile reference_lock() {
  LockFile lock;
  // Out of order, duplicated and unnormalised on purpose: the writer sorts and canonicalises.
  lock.providers.push_back({"registry.terraform.io/test/foo", "1.0.0", ">= 1",
                            {"test:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                             "test:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                             "test:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}});
  lock.providers.push_back({"registry.terraform.io/test/bar", "1.2.0", "~> 1", {}});
  return lock;
}

LockFile realistic_lock() {
  LockFile lock;
  lock.providers.push_back({"registry.opentofu.org/hashicorp/tls", "4.0.6", "",
                            {"zh:1111111111111111111111111111111111111111111111111111111111111111",
                             "h1:qjsREM4DqEWECD43FcPqddZ9oxCG+IaMTxvWPciS05g="}});
  lock.providers.push_back({"registry.opentofu.org/hashicorp/aws", "6.2.0", "< 7.0, >= 6.0",
                            {"zh:4fb39849f2e138eb16a18ba0c682635d781cb8c3b25901dd5a792ade9711f501",
                             "h1:mC2y7VgNBWb3wR/bC2X7ADvSGaJNwBCOxIEiDbCt16U=",
                             "zh:0000000000000000000000000000000000000000000000000000000000000000"}});
  lock.providers.push_back({"registry.opentofu.org/hashicorp/null", "3.2.4", "", {}});
  lock.providers.push_back({"mirror.example.com/acme/thing", "0.1.0-beta.2", "0.1.0-beta.2",
                            {"h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}});
  return lock;
}

std::string error_of(std::string_view text) {
  try {
    (void)parse_lock_file(text, "x.lock.hcl");
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

TEST(LockFileWriter, ReproducesTheReferenceExampleByteForByte) {
  EXPECT_EQ(render_lock_file(reference_lock(), Engine::terraform), kReferenceExample);
}

TEST(LockFileWriter, GoldenFilesForBothEngines) {
  test::expect_golden("lockfile/example.terraform.lock.hcl", render_lock_file(reference_lock(), Engine::terraform));
  test::expect_golden("lockfile/example.tofu.lock.hcl", render_lock_file(reference_lock(), Engine::tofu));
  test::expect_golden("lockfile/realistic.tofu.lock.hcl", render_lock_file(realistic_lock(), Engine::tofu));
}

TEST(LockFileWriter, TofuHeaderDiffersOnlyInTheEngineName) {
  std::string tofu = render_lock_file(reference_lock(), Engine::tofu);
  std::string expected = kReferenceExample;
  expected.replace(expected.find("\"terraform init\""), 16, "\"tofu init\"");
  EXPECT_EQ(tofu, expected);
}

TEST(LockFileWriter, SortsByHostThenNamespaceThenType) {
  LockFile lock;
  lock.providers.push_back({"a.b.c/x/y", "1.0.0", "", {}});
  lock.providers.push_back({"a.b/x/y", "1.0.0", "", {}});
  std::string text = render_lock_file(lock, Engine::tofu);
  // As strings "a.b.c/x/y" < "a.b/x/y"; by hostname "a.b" comes first.
  EXPECT_LT(text.find("\"a.b/x/y\""), text.find("\"a.b.c/x/y\""));
}

TEST(LockFileWriter, EmptyLockIsJustTheHeader) {
  EXPECT_EQ(render_lock_file({}, Engine::tofu),
            "# This file is maintained automatically by \"tofu init\".\n# Manual edits may be lost in future updates.\n");
}

TEST(LockFileWriter, RefusesWhatTheEnginesWouldReject) {
  LockFile short_address;
  short_address.providers.push_back({"hashicorp/aws", "1.0.0", "", {}});
  EXPECT_THROW((void)render_lock_file(short_address, Engine::tofu), Error);
  LockFile upper;
  upper.providers.push_back({"registry.opentofu.org/HashiCorp/aws", "1.0.0", "", {}});
  EXPECT_THROW((void)render_lock_file(upper, Engine::tofu), Error);
  LockFile twice;
  twice.providers.push_back({"registry.opentofu.org/hashicorp/aws", "1.0.0", "", {}});
  twice.providers.push_back({"registry.opentofu.org/hashicorp/aws", "1.0.0", "", {}});
  EXPECT_THROW((void)render_lock_file(twice, Engine::tofu), Error);
  LockFile bad_hash;
  bad_hash.providers.push_back({"registry.opentofu.org/hashicorp/aws", "1.0.0", "", {"nocolon"}});
  EXPECT_THROW((void)render_lock_file(bad_hash, Engine::tofu), Error);
}

TEST(LockFileReader, RoundTripsWhatTheWriterWrites) {
  for (Engine engine : {Engine::tofu, Engine::terraform}) {
    std::string text = render_lock_file(realistic_lock(), engine);
    LockFile parsed = parse_lock_file(text, "golden");
    ASSERT_EQ(parsed.providers.size(), 4u);
    const ProviderLock* aws = parsed.find("registry.opentofu.org/hashicorp/aws");
    ASSERT_NE(aws, nullptr);
    EXPECT_EQ(aws->version, "6.2.0");
    EXPECT_EQ(aws->constraints, ">= 6.0.0, < 7.0.0");
    EXPECT_EQ(aws->hashes.size(), 3u);
    EXPECT_EQ(aws->hashes.front().substr(0, 3), "h1:");
    EXPECT_EQ(parsed.find("registry.opentofu.org/hashicorp/null")->hashes.size(), 0u);
    EXPECT_EQ(render_lock_file(parsed, engine), text);
  }
}

TEST(LockFileReader, ReadsTheReferenceExampleAndTheGoldenFiles) {
  LockFile parsed = parse_lock_file(kReferenceExample, "example");
  ASSERT_EQ(parsed.providers.size(), 2u);
  EXPECT_EQ(parsed.providers[0].constraints, "~> 1.0");
  auto data = test::test_data_dir() / "lockfile";
  for (const char* name : {"example.terraform.lock.hcl", "example.tofu.lock.hcl", "realistic.tofu.lock.hcl"}) {
    LockFile golden = read_lock_file(data / name);
    EXPECT_FALSE(golden.providers.empty()) << name;
  }
}

TEST(LockFileReader, IsStrictLikeTheEngines) {
  auto block = [](const std::string& label, const std::string& body) {
    return "provider \"" + label + "\" {\n" + body + "}\n";
  };
  EXPECT_NE(error_of(block("hashicorp/aws", "  version = \"1.0.0\"\n")).find("x.lock.hcl:1:1: non-normalized provider source address"),
            std::string::npos);
  EXPECT_NE(error_of(block("registry.opentofu.org/HashiCorp/aws", "  version = \"1.0.0\"\n")).find("non-normalized"),
            std::string::npos);
  const std::string aws = "registry.opentofu.org/hashicorp/aws";
  EXPECT_NE(error_of(block(aws, "  version = \"1.0\"\n")).find("x.lock.hcl:2:13: provider version is not in canonical form\n  expected: 1.0.0\n  got:      1.0"),
            std::string::npos);
  EXPECT_NE(error_of(block(aws, "  version = \"1.0.0\"\n  constraints = \">= 1.0\"\n")).find("x.lock.hcl:3:17: version constraints are not in canonical form"),
            std::string::npos);
  EXPECT_NE(error_of(block(aws, "  version = \"1.0.0\"\n  hashes = []\n")).find("x.lock.hcl:3:12: \"hashes\" must either be omitted"),
            std::string::npos);
  EXPECT_NE(error_of(block(aws, "  version = \"1.0.0\"\n  hashes = [\"nocolon\"]\n")).find("invalid provider hash string"),
            std::string::npos);
  EXPECT_NE(error_of(block(aws, "  version = \"1.0.0\"\n  hashes = [var.x]\n")).find("literal string"), std::string::npos);
  EXPECT_NE(error_of(block(aws, "  version = var.v\n")).find("x.lock.hcl:2:13: \"version\" must be a literal string"),
            std::string::npos);
  EXPECT_NE(error_of(block(aws, "  constraints = \"1.0.0\"\n")).find("has no version"), std::string::npos);
  EXPECT_NE(error_of(block(aws, "  version = \"1.0.0\"\n  extra = 1\n")).find("x.lock.hcl:3:3: unsupported argument \"extra\""),
            std::string::npos);
  EXPECT_NE(error_of(block(aws, "  version = \"1.0.0\"\n") + block(aws, "  version = \"1.0.0\"\n")).find("x.lock.hcl:4:1: duplicate provider lock"),
            std::string::npos);
  EXPECT_NE(error_of("terraform {\n}\n").find("unsupported block type \"terraform\""), std::string::npos);
  EXPECT_NE(error_of("foo = 1\n").find("unsupported argument"), std::string::npos);
  // A module block is only a warning for the engines; unknown hash schemes are kept.
  LockFile lock = parse_lock_file("module \"x\" {\n}\n" + block(aws, "  version = \"1.0.0\"\n  hashes = [\"future:abc\"]\n"), "x");
  ASSERT_EQ(lock.providers.size(), 1u);
  EXPECT_EQ(lock.providers[0].hashes, std::vector<std::string>{"future:abc"});
}

TEST(LockFileReader, MissingFileIsAnError) {
  test::TempDir dir;
  EXPECT_THROW((void)read_lock_file(dir / "none.hcl"), Error);
}

}  // namespace
}  // namespace podplane::lockfile
