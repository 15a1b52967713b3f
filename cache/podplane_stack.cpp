#include "cache/podplane_stack.hpp"

namespace podplane::cache {

PodplaneStack podplane_stack(ProviderKind kind) {
  if (kind == ProviderKind::proxmox) {
    // Proxmox VE nodes are set up by the generated node-init script; the OpenTofu pieces a
    // site may add use bpg/proxmox. Nstance publishes no module package for Proxmox.
    PodplaneStack stack;
    stack.providers = {{"proxmox", "bpg/proxmox", ">= 0.60"}};
    stack.required_engine_version = ">= 1.6.0";
    return stack;
  }
  const bool aws = kind == ProviderKind::aws;
  PodplaneStack stack;
  stack.providers = {aws ? PodplaneStack::Provider{"aws", "hashicorp/aws", ">= 6.0"}
                         : PodplaneStack::Provider{"google", "hashicorp/google", ">= 6.0"},
                     {"podplane", "podplane/podplane", ">= 1.2.0"}};
  stack.module_package = aws ? "nstance-dev/nstance/aws" : "nstance-dev/nstance/google";
  stack.module_constraints = "~> 2.0";
  stack.required_engine_version = ">= 1.6.0";
  return stack;
}

}  // namespace podplane::cache
