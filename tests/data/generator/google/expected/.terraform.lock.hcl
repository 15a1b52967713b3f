# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/hashicorp/cloudinit" {
  version     = "2.3.5"
  constraints = ">= 2.0.0"
  hashes = [
    "registry.opentofu.org/hashicorp/cloudinit 2.3.5 darwin_arm64 h1",
    "registry.opentofu.org/hashicorp/cloudinit 2.3.5 darwin_arm64 zh",
    "registry.opentofu.org/hashicorp/cloudinit 2.3.5 linux_amd64 h1",
    "registry.opentofu.org/hashicorp/cloudinit 2.3.5 linux_amd64 zh",
    "registry.opentofu.org/hashicorp/cloudinit 2.3.5 linux_arm64 h1",
    "registry.opentofu.org/hashicorp/cloudinit 2.3.5 linux_arm64 zh",
  ]
}

provider "registry.opentofu.org/hashicorp/google" {
  version     = "6.10.0"
  constraints = ">= 5.0.0, >= 6.0.0"
  hashes = [
    "registry.opentofu.org/hashicorp/google 6.10.0 darwin_arm64 h1",
    "registry.opentofu.org/hashicorp/google 6.10.0 darwin_arm64 zh",
    "registry.opentofu.org/hashicorp/google 6.10.0 linux_amd64 h1",
    "registry.opentofu.org/hashicorp/google 6.10.0 linux_amd64 zh",
    "registry.opentofu.org/hashicorp/google 6.10.0 linux_arm64 h1",
    "registry.opentofu.org/hashicorp/google 6.10.0 linux_arm64 zh",
  ]
}

provider "registry.opentofu.org/hashicorp/random" {
  version     = "3.6.3"
  constraints = ">= 3.0.0"
  hashes = [
    "registry.opentofu.org/hashicorp/random 3.6.3 darwin_arm64 h1",
    "registry.opentofu.org/hashicorp/random 3.6.3 darwin_arm64 zh",
    "registry.opentofu.org/hashicorp/random 3.6.3 linux_amd64 h1",
    "registry.opentofu.org/hashicorp/random 3.6.3 linux_amd64 zh",
    "registry.opentofu.org/hashicorp/random 3.6.3 linux_arm64 h1",
    "registry.opentofu.org/hashicorp/random 3.6.3 linux_arm64 zh",
  ]
}

provider "registry.opentofu.org/hashicorp/tls" {
  version     = "4.0.6"
  constraints = ">= 4.0.0"
  hashes = [
    "registry.opentofu.org/hashicorp/tls 4.0.6 darwin_arm64 h1",
    "registry.opentofu.org/hashicorp/tls 4.0.6 darwin_arm64 zh",
    "registry.opentofu.org/hashicorp/tls 4.0.6 linux_amd64 h1",
    "registry.opentofu.org/hashicorp/tls 4.0.6 linux_amd64 zh",
    "registry.opentofu.org/hashicorp/tls 4.0.6 linux_arm64 h1",
    "registry.opentofu.org/hashicorp/tls 4.0.6 linux_arm64 zh",
  ]
}

provider "registry.opentofu.org/podplane/podplane" {
  version     = "1.2.2"
  constraints = ">= 1.2.0"
  hashes = [
    "registry.opentofu.org/podplane/podplane 1.2.2 darwin_arm64 h1",
    "registry.opentofu.org/podplane/podplane 1.2.2 darwin_arm64 zh",
    "registry.opentofu.org/podplane/podplane 1.2.2 linux_amd64 h1",
    "registry.opentofu.org/podplane/podplane 1.2.2 linux_amd64 zh",
    "registry.opentofu.org/podplane/podplane 1.2.2 linux_arm64 h1",
    "registry.opentofu.org/podplane/podplane 1.2.2 linux_arm64 zh",
  ]
}
