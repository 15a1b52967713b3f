// The tarball's launcher (packaging/launcher) starts podplane through the carried loader, and
// no library of the host is loaded into podplane: not even what LD_PRELOAD names. The host
// programs podplane runs still get the host's LD_PRELOAD back.
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/child_process.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

// A library whose constructor writes the path of the program it was loaded into to $MARKER.
fs::path make_marker_library(const fs::path& dir) {
  write_file(dir / "marker.c",
             "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
             "__attribute__((constructor)) static void mark(void) {\n"
             "  const char* file = getenv(\"MARKER\");\n  if (!file) return;\n"
             "  char exe[4096] = {0};\n  if (readlink(\"/proc/self/exe\", exe, sizeof exe - 1) < 0) return;\n"
             "  FILE* f = fopen(file, \"a\");\n  if (f) { fprintf(f, \"%s\\n\", exe); fclose(f); }\n}\n");
  auto built = run({"cc", "-shared", "-fPIC", "-o", (dir / "libmarker.so").string(), (dir / "marker.c").string()});
  if (built.exit_code != 0) throw std::runtime_error("cc failed:\n" + built.err);
  return dir / "libmarker.so";
}

TEST(Launcher, NoHostLibraryIsPreloadedIntoPodplane) {
  const fs::path launcher = build_dir() / "packaging" / "launcher" / "podplane-launcher";
  const fs::path host_loader = "/lib64/ld-linux-x86-64.so.2";
  if (!fs::exists(launcher)) GTEST_SKIP() << launcher << " is not built (an arm64 host?)";
  if (!fs::exists(host_loader)) GTEST_SKIP() << "no " << host_loader << " to stand in for the carried loader";
  if (!have_program("cc")) GTEST_SKIP() << "no C compiler (build-essential) to build the preloaded library";
  TempDir dir;
  // A tarball tree: bin/podplane the launcher, lib/ the loader (the host's standing in for the
  // carried one) and the program.
  fs::create_directories(dir / "tree" / "bin");
  fs::create_directories(dir / "tree" / "lib");
  fs::copy_file(launcher, dir / "tree" / "bin" / "podplane");
  fs::copy_file(host_loader, dir / "tree" / "lib" / "ld-linux-x86-64.so.2");
  const fs::path marker_library = make_marker_library(dir.path());
  const fs::path marker = dir / "loaded-into";

  fs::copy_file(podplane_binary(), dir / "tree" / "lib" / "podplane");
  ProcessOptions options;
  options.env = {{"LD_PRELOAD", marker_library.string()}, {"MARKER", marker.string()}};
  auto version = run({(dir / "tree" / "bin" / "podplane").string(), "--version"}, options);
  ASSERT_EQ(version.exit_code, 0) << version.err;
  const std::string loaded = fs::exists(marker) ? read_file(marker) : "";
  EXPECT_EQ(loaded.find("ld-linux"), std::string::npos) << "the host's LD_PRELOAD was loaded into podplane:\n" << loaded;
  EXPECT_EQ(loaded.find("/lib/podplane"), std::string::npos) << loaded;
}

// podplane puts the launcher's moved LD_PRELOAD and LD_AUDIT back for the programs it runs.
TEST(Launcher, TheHostsPreloadIsBackForTheProgramsPodplaneRuns) {
  ::setenv("PODPLANE_HOST_LD_PRELOAD", "/opt/host/libagent.so", 1);
  ::unsetenv("LD_PRELOAD");
  restore_host_loader_environment();
  ASSERT_NE(std::getenv("LD_PRELOAD"), nullptr);
  EXPECT_STREQ(std::getenv("LD_PRELOAD"), "/opt/host/libagent.so");
  EXPECT_EQ(std::getenv("PODPLANE_HOST_LD_PRELOAD"), nullptr);
  ::unsetenv("LD_PRELOAD");
}

}  // namespace
}  // namespace podplane::test
