// The stack the generator writes and the stack `deps tf` fetches when no --stack is given must
// ask for the same things, or a generated cluster would need providers or modules the store
// never received. Both are read here with the reader `deps tf --stack` uses (the engines'
// reading of required_providers and module calls), for every cloud the generator writes.
#include <gtest/gtest.h>

#include "cache/podplane_stack.hpp"
#include "generator/config.hpp"
#include "generator/render.hpp"
#include "base/error.hpp"
#include "fetch/deps_tf.hpp"
#include "fetch/tf_requirements.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

using fetch::ModulePackages;
using fetch::RootRequirements;

const std::string kHost = "registry.opentofu.org";

// One fixture package of the stack's modules, each submodule asking for a provider of its
// own, so a submodule that one side calls and the other does not shows up as a difference.
void write_module_package(const fs::path& root) {
  const std::map<std::string, std::string> wants = {
      {"cluster", "hashicorp/null"}, {"account", "hashicorp/random"}, {"network", "hashicorp/tls"}, {"shard", "hashicorp/time"}};
  for (const char* name : cache::kStackSubmodules) {
    write_file(root / "modules" / name / "main.tf",
               "terraform {\n  required_providers {\n    p = { source = \"" + wants.at(name) +
                   "\", version = \">= 1.0\" }\n  }\n}\n");
  }
}

// Answers the call of Podplane's stack with the fixture package; the generated stack calls
// its modules by a local path and must not reach here.
class OnePackage : public ModulePackages {
 public:
  explicit OnePackage(fs::path root) : root_(std::move(root)) {}
  std::vector<std::string> calls;

  Called call(const fetch::RemoteModuleCall& call) override {
    calls.push_back(call.source.text + " " + call.constraints);
    return {{call.source.registry.str(), "2.0.1"}, call.source.subdir.empty() ? root_ : root_ / call.source.subdir, root_};
  }

 private:
  fs::path root_;
};

// "address constraints…" per provider, in address order.
std::vector<std::string> provider_lines(const RootRequirements& root) {
  std::vector<std::string> lines;
  for (const auto& [address, want] : root.providers) {
    std::string line = address;
    for (const auto& constraint : want.constraints) line += " " + constraint.canonical();
    lines.push_back(line);
  }
  return lines;
}

TEST(DefaultStack, GeneratedStackRequiresExactlyWhatDepsTfFetches) {
  // `deps tf` with no -f fetches AWS's stack; `-f CONFIG` the stack of the config's kind.
  EXPECT_EQ(fetch::DepsTfOptions{}.default_stack, cache::ProviderKind::aws);

  for (auto kind : {cache::ProviderKind::aws, cache::ProviderKind::google}) {
    SCOPED_TRACE(std::string(generator::to_string(kind)));
    TempDir dir;
    // The stack and the package it calls by path sit in one repository: a root's local module
    // that leaves its repository is refused (docs/deps.md), and this test is about providers.
    fs::create_directories(dir / ".git");
    write_module_package(dir / "pkg");

    generator::InitOptions init;
    init.provider = kind;
    auto config = generator::parse_cluster_config(generator::starter_config(init), "starter.jsonc");
    generator::RenderInputs inputs;
    inputs.config = &config;
    inputs.module_package_path = "../pkg";
    inputs.deps_mirror_url = "https://deps.example.com";
    for (const auto& [name, content] : generator::render_stack_tf(inputs)) write_file(dir / "stack" / name, content);

    OnePackage packages(dir / "pkg");
    auto generated = fetch::read_root(dir / "stack", kHost, packages);
    EXPECT_TRUE(packages.calls.empty()) << "the generated stack calls its modules from the store by path";

    auto fetched = fetch::read_podplane_stack(cache::podplane_stack(kind), kHost, packages);
    EXPECT_EQ(provider_lines(generated), provider_lines(fetched));
    const std::string cloud = kind == cache::ProviderKind::aws ? "aws" : "google";
    ASSERT_TRUE(fetched.stack_module.has_value());
    EXPECT_EQ(fetched.stack_module->address, kHost + "/nstance-dev/nstance/" + cloud);
    // The cloud's provider and every submodule's provider are in both.
    EXPECT_EQ(generated.providers.count(kHost + "/hashicorp/" + cloud), 1u);
    for (const char* type : {"null", "random", "tls", "time"}) {
      EXPECT_EQ(generated.providers.count(kHost + "/hashicorp/" + type), 1u) << type;
    }
  }
}

}  // namespace
}  // namespace podplane::test
