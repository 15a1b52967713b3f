#pragma once
// The names the engines and the provider registry protocol give things: an engine's command
// name, and the file names of a provider release (its package zip, its signing keys). One
// spelling each, for the store's row rules, `deps tf` and both checks. Pure.
#include <string>
#include <string_view>

#include "lockfile/platform.hpp"

namespace podplane::lockfile {

// "tofu" or "terraform": the engine's command, as a user types it and as `--engine` takes it
// (parse_engine reads it back).
[[nodiscard]] std::string_view engine_name(Engine engine);

// terraform-provider-<type>_<version>_<os>_<arch>.zip: how a registry names a provider package
// and how a filesystem mirror (the store's views) must name it for `init` to find it.
[[nodiscard]] std::string provider_package_filename(std::string_view type, std::string_view version,
                                                    std::string_view platform);

// terraform-provider-<type>_<version>_signing_keys.json: the name the store gives the registry's
// signing keys of a release, beside its SHA256SUMS.
[[nodiscard]] std::string provider_signing_keys_filename(std::string_view type, std::string_view version);

}  // namespace podplane::lockfile
