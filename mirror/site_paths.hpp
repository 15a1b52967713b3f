#pragma once
// The site's URL layout (docs/mirror.md "URL layout"): where each protocol lives. Shared by
// the site that serves these paths (mirror/serve_site.hpp) and the catalogue that links to
// them (mirror/catalogue.hpp), below both.
#include <string_view>

namespace podplane::mirror {

namespace site_paths {
inline constexpr std::string_view well_known = "/.well-known/terraform.json";
inline constexpr std::string_view providers = "/v1/providers/";  // + host/ : provider registry protocol
inline constexpr std::string_view network_mirror = "/v1/mirror/";  // the network_mirror url
inline constexpr std::string_view modules = "/v1/modules/";      // + host/ : module registry protocol
inline constexpr std::string_view vmconfig = "/vmconfig/";       // deps_mirror_url = the server root
inline constexpr std::string_view vmconfig_arch_bases = "/arch/";  // + <arch>/vmconfig/… : one arch's deps_mirror_url
inline constexpr std::string_view deps_manifests = "/manifests/";  // PODPLANE_DEPS_URL = the server root
inline constexpr std::string_view healthz = "/healthz";
inline constexpr std::string_view metrics = "/metrics";  // Prometheus exposition of mirror serve (not exported)
inline constexpr std::string_view seeds = "/seeds/";
inline constexpr std::string_view tools = "/tools";               // + /<engine>/<version>/<file>: engine releases
inline constexpr std::string_view catalogue = "/catalogue/";          // + <section>/ : one table alone
inline constexpr std::string_view catalogue_json = "/catalogue.json";
inline constexpr std::string_view registry_api = "/v2/";          // OCI distribution read API (docs/images.md)
inline constexpr std::string_view git = "/git/";                  // + <host[:port]>/<path>: git's smart HTTP (docs/ci.md)
inline constexpr std::string_view module_package_name = "package.tar.gz";
}  // namespace site_paths

}  // namespace podplane::mirror
