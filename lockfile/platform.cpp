#include "lockfile/platform.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "base/ascii.hpp"
#include "base/error.hpp"
#include "base/split.hpp"

namespace podplane::lockfile {
namespace {

bool is_lower_alnum(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

// terraform-registry-address: ^[0-9A-Za-z](?:[0-9A-Za-z-_]{0,62}[0-9A-Za-z])?$
bool is_valid_name_part(std::string_view part) {
  auto alnum = [](unsigned char c) { return std::isalnum(c) != 0; };
  if (part.empty() || part.size() > 64) return false;
  if (!alnum(part.front()) || !alnum(part.back())) return false;
  return std::all_of(part.begin(), part.end(),
                     [&](unsigned char c) { return alnum(c) || c == '-' || c == '_'; });
}

// A registry hostname as written in addresses: letters, digits, '-', '.', an optional ":port".
// Unicode hostnames are not normalised (no IDNA here); they are rejected rather than guessed.
bool is_valid_host(std::string_view host) {
  if (host.empty()) return false;
  auto colon = host.find(':');
  std::string_view name = host.substr(0, colon);
  if (name.empty() || name.front() == '.' || name.back() == '.' || name.front() == '-') return false;
  for (unsigned char c : name) {
    if (!(std::isalnum(c) || c == '-' || c == '.')) return false;
  }
  if (colon != std::string_view::npos) {
    std::string_view port = host.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    if (!std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return false;
  }
  return true;
}

}  // namespace

Platform Platform::parse(std::string_view text) {
  auto underscore = text.find('_');
  if (underscore != std::string_view::npos) {
    std::string_view os = text.substr(0, underscore);
    std::string_view arch = text.substr(underscore + 1);
    if (is_lower_alnum(os) && is_lower_alnum(arch)) return Platform{std::string(os), std::string(arch)};
  }
  throw Error("invalid platform \"" + std::string(text) + "\": expected OS_ARCH, e.g. linux_amd64");
}

std::string_view default_registry_host(Engine engine) {
  return engine == Engine::terraform ? "registry.terraform.io" : "registry.opentofu.org";
}

Engine parse_engine(std::string_view text) {
  if (text == "tofu") return Engine::tofu;
  if (text == "terraform") return Engine::terraform;
  throw Error("invalid engine \"" + std::string(text) + "\": expected tofu or terraform");
}

ProviderAddress ProviderAddress::parse(std::string_view text, std::string_view default_host) {
  auto fail = [&](const std::string& why) -> ProviderAddress {
    throw Error("invalid provider address \"" + std::string(text) + "\": " + why +
                " (expected NAMESPACE/TYPE or HOST/NAMESPACE/TYPE, e.g. hashicorp/aws)");
  };
  auto parts = split(text, '/');
  if (parts.size() == 1) return fail("a namespace is required");
  if (parts.size() > 3) return fail("too many parts");
  ProviderAddress address;
  std::size_t first = 0;
  if (parts.size() == 3) {
    if (!is_valid_host(parts[0])) return fail("invalid hostname \"" + std::string(parts[0]) + "\"");
    address.host = ascii_lower(parts[0]);
    first = 1;
  } else {
    address.host = ascii_lower(default_host);
  }
  if (!is_valid_name_part(parts[first])) return fail("invalid namespace \"" + std::string(parts[first]) + "\"");
  if (!is_valid_name_part(parts[first + 1])) return fail("invalid type \"" + std::string(parts[first + 1]) + "\"");
  address.ns = ascii_lower(parts[first]);
  address.type = ascii_lower(parts[first + 1]);
  return address;
}

Platform platform_of_machine(std::string_view sysname, std::string_view machine) {
  auto go_name = [](std::string_view text) {
    std::string out;
    for (char c : ascii_lower(text))
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out += c;
    return out;
  };
  std::string arch = ascii_lower(machine);
  if (arch == "x86_64" || arch == "amd64") {
    arch = "amd64";
  } else if (arch == "aarch64" || arch == "arm64") {
    arch = "arm64";
  } else if (arch.size() == 4 && arch[0] == 'i' && arch[1] >= '3' && arch[1] <= '6' && arch.substr(2) == "86") {
    arch = "386";
  } else if (arch.starts_with("armv") && !arch.starts_with("armv8")) {
    arch = "arm";
  } else {
    arch = go_name(arch);
  }
  std::string os = go_name(sysname);
  return Platform{os.empty() ? "linux" : os, arch.empty() ? "amd64" : arch};
}

Platform host_platform() {
  struct utsname name {};
  if (::uname(&name) != 0) return Platform{"linux", "amd64"};
  return platform_of_machine(name.sysname, name.machine);
}

}  // namespace podplane::lockfile
