// The Proxmox VE node-init script is a bash program kept as generator/proxmox_node_init.sh and
// embedded at build time: bash and shellcheck read the template itself and the script the
// generator renders from it (the golden file, which GoldenStack.Proxmox keeps equal to the
// generator's output). Runs without a mirror or a Proxmox node.
#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

fs::path node_init_template() { return source_dir() / "generator" / "proxmox_node_init.sh"; }
fs::path rendered_node_init() {
  return test_data_dir() / "generator" / "proxmox" / "expected" / "podplane.cluster.proxmox.node-init.sh";
}

bool shellcheck_installed() { return run({"sh", "-c", "command -v shellcheck"}).exit_code == 0; }

TEST(NodeInitScript, TemplateAndRenderedScriptParse) {
  for (const auto& script : {node_init_template(), rendered_node_init()}) {
    auto result = run({"bash", "-n", script.string()});
    EXPECT_EQ(result.exit_code, 0) << script << "\n" << result.out << result.err;
  }
}

TEST(NodeInitScript, ShellcheckIsClean) {
  if (!shellcheck_installed()) GTEST_SKIP() << "shellcheck is not installed (scripts/setup installs it)";
  // The template has no per-arch case arm yet, only the one that stops the script, so
  // shellcheck rightly finds everything after it unreachable (SC2317): the rendered script,
  // checked in full below, has the arms.
  auto template_check = run({"shellcheck", "--severity=style", "--exclude=SC2317", node_init_template().string()});
  EXPECT_EQ(template_check.exit_code, 0) << template_check.out << template_check.err;
  auto rendered_check = run({"shellcheck", "--severity=style", rendered_node_init().string()});
  EXPECT_EQ(rendered_check.exit_code, 0) << rendered_check.out << rendered_check.err;
}

}  // namespace
}  // namespace podplane::test
