#include "checks/engine_init.hpp"

#include <fstream>
#include <regex>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "base/scratch_dir.hpp"
#include "cache/layout.hpp"
#include "generator/engine.hpp"
#include "lockfile/provider_names.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;

namespace {

// Local module sources ("./…", "../…") of a stack file made absolute, so a copy elsewhere
// calls the same module trees: `source = "…"` in .tf files, `"source": "…"` in .tf.json files.
std::string with_absolute_module_sources(const std::string& text, const fs::path& stack_dir) {
  static const std::regex source(R"re(((?:\bsource\s*=\s*|"source"\s*:\s*)")(\.\.?/[^"]*)")re");
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), source);
  std::size_t at = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& match = *it;
    out += text.substr(at, static_cast<std::size_t>(match.position(0)) - at);
    out += match[1].str() + (stack_dir / match[2].str()).lexically_normal().generic_string() + "\"";
    at = static_cast<std::size_t>(match.position(0) + match.length(0));
  }
  return out + text.substr(at);
}

}  // namespace

void check_engine_init(const cache::Store& store, const fs::path& stack_dir, lockfile::Engine engine, CheckReporter& out,
                       const std::string& recheck) {
  const std::string name(lockfile::engine_name(engine));
  std::string item = name + " init -lockfile=readonly (offline)";
  std::optional<fs::path> binary;
  try {
    binary = generator::find_engine(engine);
  } catch (const Error&) {
  }
  if (!binary) {
    out.ok("-", item, "not run: " + name + " is not on PATH (the checks above are podplane's own reading)");
    return;
  }
  ScratchDir scratch("podplane-check-");
  const fs::path copy = scratch.path() / "stack";
  fs::create_directories(copy);
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(stack_dir, error)) {
    if (!entry.is_regular_file()) continue;  // .terraform/ and the like stay behind
    std::string file = entry.path().filename().string();
    // Only what `init` reads, and the files podplane generated: a root's terraform.tfvars, .env
    // and the like may hold secrets, and are never opened.
    const bool configuration = file.ends_with(".tf") || file.ends_with(".tf.json");
    if (!configuration && file != ".terraform.lock.hcl" && !file.starts_with("podplane.cluster.")) continue;
    auto text = read_file_if_present_within_limits(entry.path(), "stack file");
    if (!text) continue;
    std::ofstream(copy / file, std::ios::binary) << (configuration ? with_absolute_module_sources(*text, stack_dir) : *text);
  }
  const fs::path tfrc = fs::absolute(cache::layout::tfrc_file(store.root()));
  const std::vector<std::string> env = {
      "TF_CLI_CONFIG_FILE=" + tfrc.string(), "HOME=" + scratch.path().string(), "CHECKPOINT_DISABLE=1",
      "TF_IN_AUTOMATION=1", "PATH=/usr/bin:/bin", "TMPDIR=" + scratch.path().string()};
  auto run = generator::run_engine_captured(*binary, {"init", "-backend=false", "-lockfile=readonly", "-input=false", "-no-color"},
                                 copy, env);
  std::string lock_after;
  if (auto text = read_file_if_present_within_limits(copy / ".terraform.lock.hcl", "stack file")) lock_after = *text;
  auto lock_before = read_file_if_present_within_limits(stack_dir / ".terraform.lock.hcl", "stack file").value_or("");
  if (run.exit_code != 0) {
    std::string tail = run.output;
    if (tail.size() > 600) tail = "…" + tail.substr(tail.size() - 600);
    out.fail("-", item, "FAILED (exit " + std::to_string(run.exit_code) + ", " + binary->string() + "):\n" + tail,
             "`" + name + " init` refuses the stack offline: fix what it reports above, then rerun `" + recheck + "`");
    return;
  }
  if (lock_after != lock_before) {
    out.fail("-", item, "CHANGED: " + name + " init rewrote the stack's lock",
             "the stack's lock is not what " + name + " writes: run `podplane cluster upgrade` (it rewrites the lock "
             "from the store)");
    return;
  }
  out.ok("-", item, "ok (" + binary->string() + ", from the store's tfrc alone)");
}

}  // namespace podplane::checks
