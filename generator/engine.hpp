#pragma once
// Running tofu/terraform on a generated stack, offline: TF_CLI_CONFIG_FILE is set to the
// store's podplane.tfrc (any inherited value removed), so providers come only from the store.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace podplane::generator {

// $PODPLANE_TF_CMD (a name on PATH or a path; an Error when set but not found), else tofu,
// else terraform on PATH, else nullopt.
[[nodiscard]] std::optional<std::filesystem::path> find_engine();

// Runs `engine args…` in `dir` with TF_CLI_CONFIG_FILE=tfrc, stdio inherited. Returns the exit
// code (128+signal when killed).
[[nodiscard]] int run_engine(const std::filesystem::path& engine, const std::vector<std::string>& args,
                             const std::filesystem::path& dir, const std::filesystem::path& tfrc);

// The shell commands a user runs by hand: "cd DIR && TF_CLI_CONFIG_FILE=… tofu init -lockfile=readonly", then apply.
std::vector<std::string> manual_engine_commands(const std::filesystem::path& dir, const std::filesystem::path& tfrc,
                                                const std::string& engine_name);

}  // namespace podplane::generator
