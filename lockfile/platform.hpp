#pragma once
// Provider platforms ("linux_amd64") and fully-qualified provider addresses
// ("registry.opentofu.org/hashicorp/aws"). Pure values; parse functions throw podplane::Error.
#include <compare>
#include <string>
#include <string_view>

namespace podplane::lockfile {

struct Platform {
  std::string os;
  std::string arch;

  // Accepts ^[a-z0-9]+_[a-z0-9]+$; anything else is an Error quoting the input and an example.
  static Platform parse(std::string_view text);
  std::string str() const { return os + "_" + arch; }
  auto operator<=>(const Platform&) const = default;
};

// The platform the engines report for a machine (`terraform version` prints "on linux_amd64"):
// Go's GOOS_GOARCH for a uname() sysname and machine. x86_64 is amd64, aarch64 and arm64 are
// arm64, i386..i686 are 386, armv6l/armv7l are arm; any other machine name is kept, lower-cased
// with every character outside [a-z0-9] dropped (ppc64le, s390x, riscv64 match Go's names).
// Pure.
[[nodiscard]] Platform platform_of_machine(std::string_view sysname, std::string_view machine);
// platform_of_machine() of this machine (uname(2)); linux_amd64 if uname() fails.
[[nodiscard]] Platform host_platform();

enum class Engine { tofu, terraform };

// registry.opentofu.org for tofu, registry.terraform.io for terraform.
std::string_view default_registry_host(Engine engine);
Engine parse_engine(std::string_view text);  // "tofu" | "terraform"

struct ProviderAddress {
  std::string host;       // lower-cased, e.g. registry.opentofu.org
  std::string ns;         // hashicorp
  std::string type;       // aws

  // "aws" is not accepted; "hashicorp/aws" takes default_host; "host/ns/type" is taken as is.
  static ProviderAddress parse(std::string_view text, std::string_view default_host);
  std::string str() const { return host + "/" + ns + "/" + type; }
  auto operator<=>(const ProviderAddress&) const = default;
};

}  // namespace podplane::lockfile
