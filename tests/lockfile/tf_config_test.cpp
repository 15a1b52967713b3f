// required_version, required_providers (object and legacy string forms) and module calls,
// following local modules.
#include "lockfile/tf_config.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::lockfile {
namespace {

using test::TempDir;
using test::write_file;

TEST(TfConfig, ReadsRequirementsAndFollowsLocalModules) {
  TempDir dir;
  write_file(dir / "stack/versions.tf", R"(
terraform {
  required_version = ">= 1.6"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 6.0"
      configuration_aliases = [aws.west]
    }
    random = "~> 3.1"   # legacy form
  }
  backend "s3" {}
}
)");
  write_file(dir / "stack/main.tf", R"HCL(
locals {
  name = "${var.prefix}-x"   // an expression
  tags = { for k, v in var.tags : k => upper(v) }
}
/* a commented-out module
module "old" { source = "nope" }
*/
module "cluster" {
  source  = "./modules/cluster"
  name    = local.name
}
module "nstance" {
  source  = "nstance-dev/nstance/aws//modules/cluster"
  version = "~> 2.0"
}
resource "aws_instance" "x" {
  user_data = <<-EOT
    #!/bin/sh
    echo "module \"fake\" { source = \"x\" }"
  EOT
  count = var.enabled ? 1 : 0
}
)HCL");
  write_file(dir / "stack/notes.txt", "module \"ignored\" {}\n");
  write_file(dir / "stack/modules/cluster/main.tf", R"(
terraform {
  required_providers {
    tls = { source = "registry.opentofu.org/hashicorp/tls" }
  }
}
module "back" {
  source = "../cluster"   # a cycle back to itself
}
module "git" {
  source = "git::https://example.com/x.git?ref=v1"
}
)");
  ModuleRequirements requirements = read_module_requirements(dir / "stack");
  EXPECT_EQ(requirements.required_versions, std::vector<std::string>{">= 1.6"});
  ASSERT_EQ(requirements.providers.size(), 3u);
  EXPECT_EQ(requirements.providers[0].local_name, "tls");
  EXPECT_EQ(requirements.providers[0].source, "registry.opentofu.org/hashicorp/tls");
  EXPECT_NE(requirements.providers[0].declared_in.find("modules/cluster/main.tf"), std::string::npos);
  EXPECT_EQ(requirements.providers[1].local_name, "aws");
  EXPECT_EQ(requirements.providers[1].source, "hashicorp/aws");
  EXPECT_EQ(requirements.providers[1].constraints, ">= 6.0");
  EXPECT_EQ(requirements.providers[2].local_name, "random");
  EXPECT_EQ(requirements.providers[2].source, "");
  EXPECT_EQ(requirements.providers[2].constraints, "~> 3.1");
  ASSERT_EQ(requirements.remote_modules.size(), 2u);
  EXPECT_EQ(requirements.remote_modules[0].name, "git");
  EXPECT_EQ(requirements.remote_modules[1].name, "nstance");
  EXPECT_EQ(requirements.remote_modules[1].source, "nstance-dev/nstance/aws//modules/cluster");
  EXPECT_EQ(requirements.remote_modules[1].version, "~> 2.0");
}

TEST(TfConfig, ErrorsNameTheFile) {
  TempDir dir;
  write_file(dir / "a/main.tf", "module \"m\" {\n  source = \"./missing\"\n}\n");
  try {
    (void)read_module_requirements(dir / "a");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("main.tf:2:12: local module \"m\" not found"), std::string::npos) << error.what();
  }
  write_file(dir / "b/main.tf", "terraform {\n  required_providers {\n    aws = { version = var.v }\n  }\n}\n");
  try {
    (void)read_module_requirements(dir / "b");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("main.tf:3:23:"), std::string::npos) << error.what();
  }
  write_file(dir / "c/main.tf", "resource \"x\" \"y\" {\n  a = \"unterminated\n}\n");
  EXPECT_THROW((void)read_module_requirements(dir / "c"), Error);
  EXPECT_THROW((void)read_module_requirements(dir / "nonexistent"), Error);
}

}  // namespace
}  // namespace podplane::lockfile
