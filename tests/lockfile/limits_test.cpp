// Hostile input to the HCL subset reader and the files built on it: nesting far deeper than
// any real file and oversized files fail with file:line:column instead of exhausting the
// stack or memory, and nesting up to the limit still parses.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/hcl.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/tf_config.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::lockfile {
namespace {

using podplane::test::TempDir;
using podplane::test::write_file;

std::string repeat(std::string_view piece, std::size_t times) {
  std::string out;
  out.reserve(piece.size() * times);
  for (std::size_t i = 0; i < times; ++i) out += piece;
  return out;
}

std::string hcl_error(const std::string& text) {
  try {
    (void)hcl::parse(text, "deep.tf");
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

constexpr std::size_t kHostileDepth = 100000;  // crashed the reader before it had a limit

TEST(HclLimits, DeepTuplesFailWithTheirPosition) {
  std::string error = hcl_error("x = " + repeat("[", kHostileDepth) + repeat("]", kHostileDepth) + "\n");
  EXPECT_NE(error.find("deep.tf:1:"), std::string::npos) << error;
  EXPECT_NE(error.find("nested deeper than 128 levels"), std::string::npos) << error;
}

TEST(HclLimits, DeepObjectsFail) {
  std::string error = hcl_error("x = " + repeat("{a = ", kHostileDepth) + "1" + repeat("}", kHostileDepth) + "\n");
  EXPECT_NE(error.find("deep.tf:1:"), std::string::npos) << error;
  EXPECT_NE(error.find("nested deeper than 128 levels"), std::string::npos) << error;
}

TEST(HclLimits, DeepBlocksFailAtTheLineOfTheFirstBlockTooDeep) {
  std::string error = hcl_error(repeat("b {\n", kHostileDepth) + repeat("}\n", kHostileDepth));
  EXPECT_NE(error.find("deep.tf:129:1: "), std::string::npos) << error;
  EXPECT_NE(error.find("nested deeper than 128 levels"), std::string::npos) << error;
}

TEST(HclLimits, DeepExpressionsAndTemplatesFail) {
  // Not literals: skipped as raw expressions, whose brackets count too.
  std::string call = hcl_error("x = f" + repeat("(", kHostileDepth) + repeat(")", kHostileDepth) + "\n");
  EXPECT_NE(call.find("deep.tf:1:"), std::string::npos) << call;
  EXPECT_NE(call.find("nested deeper than 128 levels"), std::string::npos) << call;
  std::string templates = hcl_error("x = " + repeat("\"${", kHostileDepth) + repeat("}\"", kHostileDepth) + "\n");
  EXPECT_NE(templates.find("deep.tf:1:"), std::string::npos) << templates;
  EXPECT_NE(templates.find("nested deeper than 128 levels"), std::string::npos) << templates;
  std::string mixed = hcl_error("x = " + repeat("[{a = f(", kHostileDepth / 3) + "\n");
  EXPECT_NE(mixed.find("nested deeper than 128 levels"), std::string::npos) << mixed;
}

TEST(HclLimits, NestingUpToTheLimitParses) {
  auto body = hcl::parse("x = " + repeat("[", 128) + "1" + repeat("]", 128) + "\n", "ok.tf");
  ASSERT_NE(body.attribute("x"), nullptr);
  auto blocks = hcl::parse(repeat("b {\n", 128) + repeat("}\n", 128), "ok.tf");
  EXPECT_EQ(blocks.blocks.size(), 1u);
  EXPECT_NE(hcl_error("x = " + repeat("[", 129) + "1" + repeat("]", 129) + "\n"), "<no error>");
}

TEST(HclLimits, OversizedTextFails) {
  std::string big = "x = \"" + std::string(16u << 20, 'a') + "\"\n";
  std::string error = hcl_error(big);
  EXPECT_NE(error.find("deep.tf:1:1: "), std::string::npos) << error.substr(0, 200);
  EXPECT_NE(error.find("larger than the limit of 16 MiB"), std::string::npos) << error.substr(0, 200);
}

TEST(HclLimits, LockFilesAndCliConfigsUseTheLimits) {
  std::string deep = "provider \"registry.opentofu.org/hashicorp/aws\" {\n  hashes = " + repeat("[", kHostileDepth) + "\n";
  try {
    (void)parse_lock_file(deep, ".terraform.lock.hcl");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(".terraform.lock.hcl:2:"), std::string::npos) << error.what();
  }
  try {
    (void)parse_cli_config("host \"x\" " + repeat("{ a ", kHostileDepth), "podplane.tfrc");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("podplane.tfrc:1:"), std::string::npos) << error.what();
  }
}

TEST(HclLimits, OversizedFilesAreRefusedBeforeTheyAreRead) {
  TempDir dir;
  std::string big(17u << 20, '\n');
  write_file(dir / ".terraform.lock.hcl", big);
  try {
    (void)read_lock_file(dir / ".terraform.lock.hcl");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("larger than the limit of 16 MiB"), std::string::npos) << error.what();
  }
  write_file(dir / "stack" / "main.tf", big);
  try {
    (void)read_module_requirements(dir / "stack");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("main.tf"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("larger than the limit of 16 MiB"), std::string::npos) << error.what();
  }
}

TEST(JsonLimits, CredentialsJsonDeepOrOutOfRangeFailsWithItsPosition) {
  CliConfig config;
  try {
    merge_credentials_json(config, "{\"credentials\": " + repeat("[", kHostileDepth), "credentials.tfrc.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("credentials.tfrc.json:1:"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("nested deeper than"), std::string::npos) << error.what();
  }
  try {
    merge_credentials_json(config, "{\n \"x\": 1e400}", "credentials.tfrc.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("credentials.tfrc.json:2:7: number out of range: 1e400"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace podplane::lockfile
