# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "mirror.example.com/acme/thing" {
  version     = "0.1.0-beta.2"
  constraints = "0.1.0-beta.2"
  hashes = [
    "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
  ]
}

provider "registry.opentofu.org/hashicorp/aws" {
  version     = "6.2.0"
  constraints = ">= 6.0.0, < 7.0.0"
  hashes = [
    "h1:mC2y7VgNBWb3wR/bC2X7ADvSGaJNwBCOxIEiDbCt16U=",
    "zh:0000000000000000000000000000000000000000000000000000000000000000",
    "zh:4fb39849f2e138eb16a18ba0c682635d781cb8c3b25901dd5a792ade9711f501",
  ]
}

provider "registry.opentofu.org/hashicorp/null" {
  version = "3.2.4"
}

provider "registry.opentofu.org/hashicorp/tls" {
  version = "4.0.6"
  hashes = [
    "h1:qjsREM4DqEWECD43FcPqddZ9oxCG+IaMTxvWPciS05g=",
    "zh:1111111111111111111111111111111111111111111111111111111111111111",
  ]
}
