#pragma once
// Running tofu/terraform on a generated stack, offline: TF_CLI_CONFIG_FILE is set to the
// store's podplane.tfrc (any inherited value removed), so providers come only from the store.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lockfile/platform.hpp"

namespace podplane::generator {

// $PODPLANE_TF_CMD (a name on PATH or a path; an Error when set but not found), else tofu,
// else terraform on PATH, else nullopt.
[[nodiscard]] std::optional<std::filesystem::path> find_engine();

// The engine a user has, for `deps tf` without --engine: tofu on PATH, else terraform on PATH,
// else tofu (the default). `binary` is the program found, if any; `reason` says why in words.
struct UserEngine {
  lockfile::Engine engine = lockfile::Engine::tofu;
  std::optional<std::filesystem::path> binary;
  std::string reason;
};
[[nodiscard]] UserEngine engine_on_path();

// The program of one engine: $PODPLANE_TF_CMD unless its file name names the other engine (an
// Error when set but not found), else `tofu` or `terraform` on PATH; nullopt when absent.
[[nodiscard]] std::optional<std::filesystem::path> find_engine(lockfile::Engine engine);

// Runs `engine args…` in `dir` with TF_CLI_CONFIG_FILE=tfrc, stdio inherited. Returns the exit
// code (128+signal when killed).
[[nodiscard]] int run_engine(const std::filesystem::path& engine, const std::vector<std::string>& args,
                             const std::filesystem::path& dir, const std::filesystem::path& tfrc);

// What a captured engine run said: exit code (128+signal when killed) and stdout+stderr.
struct EngineOutput {
  int exit_code = 0;
  std::string output;
};

// Runs `engine args…` in `dir` with exactly `env` as its environment (nothing inherited), both
// output streams captured. For runs whose every input must be known (`cluster check`).
[[nodiscard]] EngineOutput run_engine_captured(const std::filesystem::path& engine, const std::vector<std::string>& args,
                                               const std::filesystem::path& dir,
                                               const std::vector<std::string>& env);

// The shell commands a user runs by hand: "cd DIR && TF_CLI_CONFIG_FILE=… tofu init -lockfile=readonly", then apply.
std::vector<std::string> manual_engine_commands(const std::filesystem::path& dir, const std::filesystem::path& tfrc,
                                                const std::string& engine_name);

}  // namespace podplane::generator
