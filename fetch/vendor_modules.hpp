#pragma once
// `podplane stack vendor ROOT`: the way out for module calls by archive URL
// (`https://host/x.zip//dir`, `x.tar.gz`, a plain http source). No setting of the engines
// sends such a fetch anywhere but its own host, so on a site without that host `init` cannot
// get it from any mirror. Vendoring writes the package the store holds into the root's
// repository, `<root>/vendor/modules/<address>/`, and points each call at it with a local path;
// the root then needs nothing of that host. Offline: reads the store, writes only the vendored
// files and the `.tf` files whose `source` it changes. Errors are podplane::Error.
#include <filesystem>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "fetch/module_source.hpp"
#include "fetch/root_needs.hpp"

namespace podplane::fetch {

struct VendoredCall {
  std::filesystem::path file;  // the file whose call it changed
  std::string context;         // `<file>: module "name"`
  std::string old_source, new_source;
  std::filesystem::path dir;   // where the package's files are
};

struct VendorResult {
  std::vector<VendoredCall> vendored;
  // Archive calls it could not change (their package is not in the store, or they are inside
  // a package that is not vendored), each a sentence.
  std::vector<std::string> left;
};

// Whether the engines fetch a call of this source from its own host whatever they are told:
// an archive or plain http source (git and registry sources can be sent to a mirror).
[[nodiscard]] bool fetched_only_from_its_host(const ModuleSource& source);

// Whether `stack vendor` can point this call at a local copy: the call is written in a file of
// the repository (within `boundary`), not inside a module package the engine fetches, whose
// files no command here changes.
[[nodiscard]] bool vendor_can_change(const ModuleSelection& selection, const std::filesystem::path& boundary);

// Vendors every archive call of the root at `root` (local calls may lead within `boundary`,
// as for stack check), the calls inside the packages it vendors too. A vendored directory that
// exists with other files is an Error naming it; a second run changes nothing.
[[nodiscard]] VendorResult vendor_archive_modules(const cache::Store& store, const std::filesystem::path& root,
                                                  const std::filesystem::path& boundary);

}  // namespace podplane::fetch
