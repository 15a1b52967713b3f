// The binary under careless or hostile input: mistyped commands name themselves and the
// closest match, numeric flags reject garbage and overflow naming the flag, and control bytes
// from outside strings never reach the terminal raw.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/support/background.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::e2e {
namespace {

namespace fs = std::filesystem;
using test::ProcessOptions;
using test::run_podplane;
using test::show;
using test::TempDir;
using test::write_file;

ProcessOptions in(const TempDir& dir) {
  ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = (dir / "deps").string();
  options.cwd = dir.path();
  return options;
}

// The first raw control byte a terminal would act on, or -1.
int raw_control_byte(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return c;
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f)
      return static_cast<unsigned char>(text[i + 1]);
  }
  return -1;
}

TEST(CliHardening, UnknownCommandNamesItselfAndTheClosestMatch) {
  TempDir dir;
  auto typo = run_podplane({"deps", "vrify"}, in(dir));
  EXPECT_EQ(typo.exit_code, 2) << show(typo);
  EXPECT_NE(typo.err.find("unknown command 'vrify'; did you mean 'verify'?"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("Try 'podplane deps --help'"), std::string::npos) << typo.err;

  auto group = run_podplane({"dep", "verify"}, in(dir));
  EXPECT_EQ(group.exit_code, 2) << show(group);
  EXPECT_NE(group.err.find("unknown command 'dep'; did you mean 'deps'?"), std::string::npos) << group.err;
  EXPECT_NE(group.err.find("Try 'podplane --help'"), std::string::npos) << group.err;

  auto far = run_podplane({"bundle", "frobnicate", "x"}, in(dir));
  EXPECT_EQ(far.exit_code, 2) << show(far);
  EXPECT_NE(far.err.find("unknown command 'frobnicate' (podplane bundle has: keygen, create, inventory, verify, import, show)"),
            std::string::npos)
      << far.err;
  EXPECT_FALSE(fs::exists(dir / "deps")) << "a usage error must not create a store";
}

TEST(CliHardening, SizeAndCountFlagsRejectOverflowAndGarbageNamingTheFlag) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string flag;
  };
  std::vector<Case> cases = {
      {{"bundle", "create", "out.bundle", "--volume-size", "17000000T"}, "--volume-size"},
      {{"bundle", "create", "out.bundle", "--volume-size", "4.5G"}, "--volume-size"},
      {{"bundle", "create", "out.bundle", "--volume-size", "-1"}, "--volume-size"},
      {{"bundle", "create", "out.bundle", "--expires-in", "99999999999999999999d"}, "--expires-in"},
      {{"deps", "download", "--jobs", "0x10"}, "--jobs"},
      {{"deps", "download", "--jobs", "99999999999999999999999"}, "--jobs"},
      {{"deps", "tf", "--jobs", "1e1"}, "--jobs"},
      // Should the flag be taken, the missing certificate still stops the server at start.
      {{"mirror", "serve", "--tls-cert", "missing.pem", "--tls-key", "missing.pem", "--threads", "0x40"}, "--threads"},
      {{"mirror", "serve", "--tls-cert", "missing.pem", "--tls-key", "missing.pem", "--header-timeout", "1e1"},
       "--header-timeout"},
      {{"mirror", "serve", "--tls-cert", "missing.pem", "--tls-key", "missing.pem", "--max-connections-per-client",
        "99999999999999999999"},
       "--max-connections-per-client"},
      {{"mirror", "push", "oci://127.0.0.1:1/x", "--chunk-size", "99999999999999999999999"}, "--chunk-size"},
      {{"mirror", "push", "oci://127.0.0.1:1/x", "--chunk-size", "1e5"}, "--chunk-size"},
  };
  auto options = in(dir);
  // Should a flag be taken, the command must still never leave the machine.
  options.env["PODPLANE_DEPS_URL"] = "http://127.0.0.1:1";
  for (const auto& c : cases) {
    auto result = run_podplane(c.args, options);
    EXPECT_EQ(result.exit_code, 2) << c.args.back() << "\n" << show(result);
    EXPECT_NE(result.err.find("podplane: error: " + c.flag + ": "), std::string::npos) << show(result);
    EXPECT_NE(result.err.find("Try 'podplane "), std::string::npos) << show(result);
  }
  EXPECT_FALSE(fs::exists(dir / "out.bundle"));
  EXPECT_FALSE(fs::exists(dir / "deps")) << "a usage error must not create a store";
}

TEST(CliHardening, ControlBytesFromOutsideAreEscapedOnTheTerminal) {
  TempDir dir;
  // A config key (decoded by the JSON reader) carrying ESC, CR, NUL, BEL, DEL and C1 CSI.
  std::string key = "\\u001b[2Jowned\\r\\u0000\\u0007\\u007f\\u009b31m";
  write_file(dir / "podplane.cluster.jsonc", "{\n  \"cluster\": {\n    \"" + key + "\": 1\n  }\n}\n");
  auto result = run_podplane({"deps", "tf", "-f", "podplane.cluster.jsonc"}, in(dir));
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_EQ(raw_control_byte(result.err), -1) << show(result);
  EXPECT_NE(result.err.find("\\x1b[2Jowned\\x0d\\x00\\x07\\x7f\\u009b31m"), std::string::npos) << show(result);
  EXPECT_NE(result.err.find("podplane.cluster.jsonc:3: "), std::string::npos) << show(result);

  // A file name in a message on stdout, and a multi-line message keeps its newlines.
  std::string name = "x\x1b]0;title\x07\r.jsonc";
  auto init = run_podplane({"cluster", "init", "-f", name}, in(dir));
  EXPECT_EQ(init.exit_code, 0) << show(init);
  EXPECT_TRUE(fs::exists(dir / name));
  EXPECT_EQ(raw_control_byte(init.out), -1) << show(init);
  EXPECT_NE(init.out.find("x\\x1b]0;title\\x07\\x0d.jsonc"), std::string::npos) << show(init);
  EXPECT_NE(init.out.find("\nEdit it"), std::string::npos) << show(init);
}

std::string listing(const fs::path& dir) {
  std::string out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) out += entry.path().string() + "\n";
  return out;
}

// A signal in the middle of `deps tf` (a slow upstream keeps it busy) leaves no scratch dir
// under $TMPDIR, for SIGTERM and SIGINT alike, and the process still dies of the signal.
TEST(CliHardening, SignalsRemoveTheTempDirectoriesOfARunningDepsTf) {
  test::ServeOptions slow;
  slow.delay_ms = 300;
  test::FixtureUpstream upstream({}, slow);
  for (int signal_number : {SIGTERM, SIGINT}) {
    TempDir dir;
    fs::create_directories(dir / "tmp");
    auto env = upstream.env(dir / "deps", upstream.write_cli_config(dir / "cli.tfrc"));
    env["TMPDIR"] = (dir / "tmp").string();
    std::size_t answered_before = upstream.access_log().size();
    test::Background deps({test::podplane_binary().string(), "--quiet", "deps", "tf", "--platform", "linux_amd64",
                           "--platform", "linux_arm64"},
                          env, dir / "stderr.txt");
    // Mid-run: the upstream has answered a few of its requests (a bounded wait for a state,
    // not a guess at a duration).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (upstream.access_log().size() < answered_before + 4 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_GE(upstream.access_log().size(), answered_before + 4) << test::read_file(dir / "stderr.txt");
    ASSERT_FALSE(fs::is_empty(dir / "tmp")) << "deps tf made no scratch dir under $TMPDIR";
    std::string before = listing(dir / "tmp");
    int status = deps.stop(signal_number);
    EXPECT_EQ(status, -signal_number) << test::read_file(dir / "stderr.txt");
    EXPECT_TRUE(fs::is_empty(dir / "tmp")) << "before the signal:\n" << before << "after:\n" << listing(dir / "tmp");
  }
}

}  // namespace
}  // namespace podplane::e2e
