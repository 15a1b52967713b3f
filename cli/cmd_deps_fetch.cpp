#include "cli/commands.hpp"

namespace podplane::cli {

void register_deps_fetch_commands(CLI::App& /*group*/, const GlobalOptions& /*global*/) {}

}  // namespace podplane::cli
