#pragma once
// Podplane's own stack, per cloud: the providers its generated root module requires and the
// module package whose modules it calls (docs/podplane-layout.md §4.2). The one definition
// that both `deps tf` (what to fetch when no --stack is given) and the generator (what the
// stack's main.tf requires and calls) read, so the store always holds what a generated stack
// asks for. Pure data; it lives beside the store's Podplane layout (tf/modules/nstance/).
#include <string>
#include <vector>

namespace podplane::cache {

// The cloud a cluster runs on: the cluster config's provider.kind.
enum class ProviderKind { aws, google, proxmox };

struct PodplaneStack {
  struct Provider {
    std::string local_name;   // aws
    std::string source;       // hashicorp/aws
    std::string constraints;  // >= 6.0
  };
  std::vector<Provider> providers;          // the root module's required_providers
  std::string module_package;               // nstance-dev/nstance/aws; empty: none (proxmox)
  std::string module_constraints;           // ~> 2.0
  std::string required_engine_version;      // the root module's required_version
};

// The modules of that package the stack calls, as <module package>/modules/<name>: the same
// for every cloud.
inline constexpr const char* kStackSubmodules[] = {"cluster", "account", "network", "shard"};

[[nodiscard]] PodplaneStack podplane_stack(ProviderKind kind);

}  // namespace podplane::cache
