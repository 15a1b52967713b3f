// Every generated .tf file is exactly what `tofu fmt` would leave: checked with hclwrite.Format
// itself (tests/data/generator/hclfmt, built here from Debian's golang-github-hashicorp-hcl-v2-dev).
#include <gtest/gtest.h>

#include "tests/generator/cluster_env.hpp"

namespace podplane::test {
namespace {

// Builds the Go checker once per build dir (GOPATH mode: Debian's packaged sources, no network).
fs::path hclfmt_binary() {
  static fs::path built;
  if (!built.empty()) return built;
  fs::path source = test_data_dir() / "generator" / "hclfmt";
  fs::path binary = build_dir() / "tests" / "generator-hclfmt";
  std::error_code error;
  bool fresh = fs::exists(binary, error) &&
               fs::last_write_time(binary, error) >= fs::last_write_time(source / "main.go", error);
  if (!fresh) {
    ProcessOptions options;
    options.cwd = source;
    options.env = {{"GO111MODULE", "off"}, {"GOPATH", "/usr/share/gocode"}, {"GOFLAGS", ""}, {"GOPROXY", "off"}};
    auto result = run({"go", "build", "-o", binary.string(), "."}, options);
    if (result.exit_code != 0)
      throw std::runtime_error("building hclfmt failed (needs golang-go and golang-github-hashicorp-hcl-v2-dev): " +
                               result.err);
  }
  built = binary;
  return built;
}

TEST(TofuFmt, GeneratedTfFilesAreFormatted) {
  for (const std::string sample : {"aws", "google"}) {
    ClusterEnv env(sample);
    auto result = env.cluster({"create", "--no-apply"});
    ASSERT_EQ(result.exit_code, 0) << show(result);
    std::vector<std::string> argv{hclfmt_binary().string()};
    for (const auto& entry : fs::directory_iterator(env.stack))
      if (entry.path().extension() == ".tf") argv.push_back(entry.path().string());
    ASSERT_EQ(argv.size(), 9u);
    argv.push_back((env.stack / ".terraform.lock.hcl").string());
    auto fmt = run(argv);
    EXPECT_EQ(fmt.exit_code, 0) << sample << ":\n" << fmt.out << fmt.err;
  }
}

}  // namespace
}  // namespace podplane::test
