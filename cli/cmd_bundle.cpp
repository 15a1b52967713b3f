#include "cli/commands.hpp"

namespace podplane::cli {

void register_bundle_commands(CLI::App& /*group*/, const GlobalOptions& /*global*/) {}

}  // namespace podplane::cli
