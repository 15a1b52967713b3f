#pragma once
// `podplane tools install`: an engine's program put in place offline (docs/tools.md), out of a
// release zip that the local store holds or a site's `mirror serve` / `mirror export` serves
// at /tools/<engine>/<version>/. The zip's digest and its signed SHA256SUMS are checked before
// anything is written; the program is written whole (temp file, fsync, rename), mode 0755.
// Errors: podplane::Error naming the file.
#include <filesystem>
#include <ostream>
#include <string>

#include "cache/store.hpp"
#include "lockfile/platform.hpp"
#include "net/http_options.hpp"

namespace podplane::fetch {

struct ToolInstallOptions {
  lockfile::Engine engine = lockfile::Engine::terraform;
  std::string version;   // canonical
  std::string platform;  // os_arch
  std::filesystem::path to;  // the directory the program goes into (created when missing)
  std::string from_url;  // a site mirror's base URL; empty: the local store
  net::HttpOptions http;
};

// Installs into options.to and returns the program's path (DIR/terraform or DIR/tofu).
// `store` is read only when from_url is empty (it may be null otherwise).
std::filesystem::path install_tool(const cache::Store* store, const ToolInstallOptions& options, std::ostream& out);

}  // namespace podplane::fetch
