terraform {
  required_version = ">= 1.6"
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 6.0" }
  }
}
locals {
  a = "${var.x}-%{ if true }y%{ endif }"
  b = [for k, v in var.m : "${k}=${v}" if v != null]
  c = { for s in var.l : s => upper(s) }
  d = <<-EOT
    heredoc ${var.x}
    EOT
  e = "\u00e9\U0001F600 $${literal} %%{literal}"
  f = var.a == null ? [] : [1, 2.5e3, -7]
  /* block
     comment */ g = true # hash
}
provider "aws" { region = "us-east-1" }
