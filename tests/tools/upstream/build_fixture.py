#!/usr/bin/env python3
"""Builds the fixture upstream: a complete, local copy of everything `podplane deps` fetches.

    build_fixture.py OUT_DIR [--corrupt-zip NAME] [--wrong-key PROVIDER] [--shasums-mismatch NAME]
                             [--zip-size BYTES] [--zip-size-range MIN:MAX] [--zip-compressible-half]
                             [--os-image-mib N]
                             [--add-provider NS/TYPE=V1,V2]... [--add-version WHAT=VERSION]...
                             [--boot-fault kernel-digest|missing-partition|missing-path|not-ext4|corrupt-qcow2]

OUT_DIR gets:
  tls/ca.pem, tls/server.pem, tls/server.key   test CA and a server cert for 127.0.0.1/localhost (openssl CLI)
  keys/<name>.asc, keys/<name>.secret.asc       OpenPGP keys made by real gpg (rsa: RSA 3072, ed25519, wrong)
  www/                                           what serve.py serves:
    .well-known/terraform.json                   providers.v1 and modules.v1
    v1/providers/<ns>/<type>/versions            provider registry protocol
    v1/providers/<ns>/<type>/<ver>/download/<os>/<arch>     (relative download/shasums urls)
    releases/<type>/<ver>/…zip, …_SHA256SUMS, …_SHA256SUMS.sig
    v1/modules/nstance-dev/nstance/aws/versions and /<ver>/download (+ .headers sidecar: 204 + X-Terraform-Get)
    v1/modules/nstance-dev/wrapper/aws/…         a module whose package calls nstance-dev/nstance/aws//modules/network
                                                 at 2.0.1 (a nested registry call), served as an archive
    git/terraform-aws-nstance.git                bare repo, one tag per module version (git http-backend)
    archives/terraform-aws-nstance-<ver>.tar.gz  flat archive; …-<ver>-topdir.tar.gz with one top dir
    archives/terraform-aws-wrapper-<ver>.tar.gz  the wrapper module's package
    mirror/<host>/<ns>/<type>/{index.json,<ver>.json,*.zip}   provider network mirror
    manifests/vmconfig_<kind>_debian-13_<arch>.json.tmpl      vmconfig manifests ({{BASE}} filled at serve time)
    artifacts/<name>/<ver>/<file>                the files the manifests list; the os image is a real
                                                 qcow2 (boot_image.py): GPT, ext4 partition 1 holding the
                                                 /boot/vmlinuz-… and /boot/initrd.img-… that os.boot names
    v2/podplane-fixture/pause/{manifests,blobs}/…  a static OCI registry (read side) holding one
                                                 multi-arch image (linux/amd64, linux/arm64, linux/arm/v7)
                                                 that the manifests' `images` pin as {{HOST}}/podplane-fixture/pause:3.10.2
                                                 (--images FILE: that JSON list instead, {{HOST}} allowed)
    manifests/seeds.json.tmpl, seeds/<name>/<ver>/<name>.netsy   Netsy seed snapshots (sha512-pinned)
  os-images/<arch>-<fault>.qcow2                 the os images as made once (reused while their inputs hold)
  fixture.json                                   what was made (see docs/download.md)

Zips, archives and git commits are deterministic; keys are made once and reused when OUT_DIR is
built again (e.g. with --add-version), and signatures use a frozen clock so they are
deterministic too. Building again never changes a file whose content is unchanged.
Python stdlib only (plus the gpg, openssl and git programs): it is a test fixture.
"""
import argparse
import base64
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "images"))
import make_image  # noqa: E402  (tests/tools/images: the same image maker the image tests use)
import boot_image  # noqa: E402  (beside this file: a real GPT + ext4 qcow2 os image)

ZIP_TIME = (2025, 1, 1, 0, 0, 0)
EPOCH = 1735689600  # 2025-01-01T00:00:00Z
GPG_KEYGEN_TIME = "20250101T000000!"
GPG_SIGN_TIME = "20250102T000000!"
ALL_PLATFORMS = ["linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"]
MIRROR_HOSTS = ["registry.opentofu.org", "registry.terraform.io"]
# Platforms a release publishes (zip and SHA256SUMS line) that the registry does not list, as
# HashiCorp releases carry more builds than anyone fetches; with the _manifest.json line they
# make a lock built only from fetched packages differ from the engines' (docs/protocols.md §1.4).
RELEASE_ONLY_PLATFORMS = ["windows_amd64", "freebsd_arm"]

# Podplane's default provider set (docs/podplane-layout.md §4.3). cloudinit deliberately lacks darwin_arm64.
DEFAULT_PROVIDERS = [
    {"namespace": "hashicorp", "type": "aws", "key": "rsa", "protocols": ["5.0"], "versions": ["6.0.0", "6.2.0"]},
    # The registry's plugin protocols vary as they do upstream: two listed for random, none at
    # all (the key left out) for null; mirrors must answer with exactly what was listed.
    {"namespace": "hashicorp", "type": "random", "key": "rsa", "protocols": ["5.0", "6.0"], "versions": ["3.6.0", "3.7.2"]},
    {"namespace": "hashicorp", "type": "null", "key": "rsa", "protocols": None, "versions": ["3.2.3", "3.2.4"]},
    {"namespace": "hashicorp", "type": "tls", "key": "rsa", "protocols": ["5.0"], "versions": ["4.0.6", "4.1.0"]},
    {"namespace": "hashicorp", "type": "cloudinit", "key": "rsa", "protocols": ["5.0"], "versions": ["2.3.6", "2.3.7"],
     "platforms": ["linux_amd64", "linux_arm64", "darwin_amd64"]},
    {"namespace": "podplane", "type": "podplane", "key": "ed25519", "protocols": ["6.0"], "versions": ["1.2.0", "1.3.0"]},
    # The Google stack's cloud provider (podplane_stack: hashicorp/google >= 6.0).
    {"namespace": "hashicorp", "type": "google", "key": "rsa", "protocols": ["5.0"], "versions": ["6.0.0", "6.1.0"]},
]
# Module versions and how the registry points at their package.
DEFAULT_MODULE_VERSIONS = [{"version": "2.0.1", "source": "git"}, {"version": "2.1.0", "source": "archive"}]
# The Nstance module packages, one per cloud, published in the same versions (so that their
# views must coexist: tf/modules/nstance/<ver> cannot hold both).
MODULES = [{"namespace": "nstance-dev", "name": "nstance", "system": system, "repo": "terraform-%s-nstance" % system}
           for system in ("aws", "google")]
# A module whose package calls another registry module at a pinned version, as real wrappers
# (landing zones, platform modules) do: what a root needs is followed through its calls.
WRAPPER = {"namespace": "nstance-dev", "name": "wrapper", "system": "aws", "repo": "terraform-aws-wrapper",
           "versions": [{"version": "1.0.0", "calls": {"source": "nstance-dev/nstance/aws//modules/network",
                                                      "version": "2.0.1"}}]}
DEFAULT_VMCONFIG_VERSION = "0.9.0"

KEYS = {
    "rsa": {"uid": "Fixture HashiCorp Signing <rsa@fixture.test>", "algo": "rsa3072", "source": "HashiCorp"},
    "ed25519": {"uid": "Fixture Podplane Signing <ed25519@fixture.test>", "algo": "ed25519", "source": "Podplane"},
    "wrong": {"uid": "Fixture Wrong Key <wrong@fixture.test>", "algo": "ed25519", "source": "Nobody"},
}


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def write_if_changed(path, data, mode=None):
    """Writes bytes only when they differ, so rebuilding keeps files (and links) untouched."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


def link_file(source, link):
    """Hard-links `link` to `source` (the mirror serves the release files without copies)."""
    os.makedirs(os.path.dirname(link), exist_ok=True)
    try:
        if os.path.samefile(source, link):
            return
        os.unlink(link)
    except FileNotFoundError:
        pass
    os.link(source, link)


def write_json(path, value):
    write_if_changed(path, json.dumps(value, indent=2, sort_keys=True) + "\n")


def run(argv, **kwargs):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
    if result.returncode != 0:
        sys.stderr.write("command failed: %s\n%s%s" % (" ".join(argv), result.stdout.decode(errors="replace"),
                                                       result.stderr.decode(errors="replace")))
        raise SystemExit(1)
    return result.stdout


def pseudo_random(seed, size):
    return random.Random(seed).randbytes(size)


# ---------------------------------------------------------------------------------------------
# TLS


def make_tls(out):
    tls = os.path.join(out, "tls")
    if os.path.exists(os.path.join(tls, "server.pem")):
        return
    os.makedirs(tls, exist_ok=True)
    ca_key, ca_pem = os.path.join(tls, "ca.key"), os.path.join(tls, "ca.pem")
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", ca_key, "-out", ca_pem, "-days", "3650", "-subj", "/CN=podplane fixture CA",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    key, csr, pem = (os.path.join(tls, n) for n in ("server.key", "server.csr", "server.pem"))
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"])
    ext = os.path.join(tls, "server.ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial",
         "-out", pem, "-days", "825", "-extfile", ext])


# ---------------------------------------------------------------------------------------------
# OpenPGP


class Gpg:
    """A private GNUPGHOME (short path: the agent socket lives in it) holding the fixture keys."""

    def __init__(self, out):
        self.out = out
        self.home = tempfile.mkdtemp(prefix="ppgpg")
        os.chmod(self.home, 0o700)
        self.keys = {}

    def gpg(self, *args, time=GPG_SIGN_TIME):
        return run(["gpg", "--homedir", self.home, "--batch", "--yes", "--quiet", "--no-tty",
                    "--pinentry-mode", "loopback", "--passphrase", "", "--faked-system-time", time] + list(args))

    def fingerprint(self, uid):
        for line in self.gpg("--with-colons", "--list-keys", uid).decode().splitlines():
            if line.startswith("fpr:"):
                return line.split(":")[9]
        raise SystemExit("no fingerprint for " + uid)

    def load_or_make(self):
        keys_dir = os.path.join(self.out, "keys")
        os.makedirs(keys_dir, exist_ok=True)
        for name, spec in KEYS.items():
            secret = os.path.join(keys_dir, name + ".secret.asc")
            if os.path.exists(secret):
                self.gpg("--import", secret)
            else:
                self.gpg("--quick-gen-key", spec["uid"], spec["algo"], "sign", "never", time=GPG_KEYGEN_TIME)
            fpr = self.fingerprint(spec["uid"])
            if not os.path.exists(secret):
                write_if_changed(secret, self.gpg("--armor", "--export-secret-keys", fpr))
            armor = self.gpg("--armor", "--export", fpr).decode()
            write_if_changed(os.path.join(keys_dir, name + ".asc"), armor)
            self.keys[name] = {"fingerprint": fpr, "key_id": fpr[-16:], "algo": spec["algo"], "uid": spec["uid"],
                               "armor": armor, "armor_file": os.path.join(keys_dir, name + ".asc"),
                               "source": spec["source"]}

    def detach_sign(self, key, path):
        sig = path + ".sig"
        tmp = sig + ".new"
        self.gpg("--local-user", self.keys[key]["fingerprint"], "--detach-sign", "--output", tmp, path)
        with open(tmp, "rb") as f:
            data = f.read()
        os.unlink(tmp)
        write_if_changed(sig, data)

    def close(self):
        subprocess.run(["gpgconf", "--homedir", self.home, "--kill", "gpg-agent"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.home, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Providers


# The provider types the runnable fixture plugin (tests/tools/tfplugin) plays: Podplane's, and
# those the Nstance fixture modules require without declaring a resource of them.
RUNNABLE_TYPES = ["podplane", "random", "null", "tls", "cloudinit"]


# A compressible stand-in for machine code: each pseudo-random byte becomes one of a few common
# opcode-like bytes, skewed towards 0x00 (about 2.3 bits of entropy a byte). zlib level 1 makes
# it about 0.42 of its size, so a half-random, half-this executable deflates to about 0.71.
OPCODE_LIKE = bytes([0x00] * 128 + [0x48] * 32 + [0x89] * 32 + [0x8b] * 16 + [0xe8] * 16 + [0xc3] * 8 + [0xff] * 8
                    + [0x0f] * 8 + [0x24] * 8)
HALF_COMPRESSIBLE_ZIP_RATIO = 0.71


def zip_size_of(ptype, version, platform, config):
    """The size the zip of one package should come out at: --zip-size, or with --zip-size-range
    a size spread over the range by a hash of the package's name (deterministic, and about even
    over the fill's packages whatever their order)."""
    if "zip_size_range" not in config:
        return config["zip_size"]
    low, high = config["zip_size_range"]
    spread = int.from_bytes(hashlib.sha256(("%s/%s/%s" % (ptype, version, platform)).encode()).digest()[:8], "big") / 2.0 ** 64
    return low + int((high - low) * spread)


def provider_zip(ptype, version, platform, size, runnable=None, compressible_half=False):
    """A flat zip with one executable, deterministic bytes (fixed times, stored payload).

    runnable: (platform, bytes) of a real plugin executable; zips of that platform for the
    RUNNABLE_TYPES carry it instead of the fixture script, so the engine can start them.
    compressible_half: like a real Go binary, the executable is half incompressible and half
    compressible and the entry is DEFLATED, sized so that the zip comes out near `size`; a
    reader then pays for inflating it, as it does for real provider zips (20 to 150 MB)."""
    exe = "terraform-provider-%s_v%s" % (ptype, version)
    header = ("#!/bin/sh\n# fixture provider %s %s %s\necho terraform-provider-%s %s\nexit 0\n"
              % (ptype, version, platform, ptype, version)).encode()
    seed = "%s/%s/%s" % (ptype, version, platform)
    if compressible_half:
        body = max(0, int(size / HALF_COMPRESSIBLE_ZIP_RATIO) - len(header))
        payload = (header + pseudo_random(seed, body // 2)
                   + pseudo_random(seed + "/compressible", body - body // 2).translate(OPCODE_LIKE))
    else:
        payload = header + pseudo_random(seed, max(0, size - len(header)))
    if runnable and runnable[0] == platform and ptype in RUNNABLE_TYPES:
        payload = runnable[1]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        info = zipfile.ZipInfo(exe, date_time=ZIP_TIME)
        info.create_system = 3
        info.external_attr = (0o100755 << 16)
        info.compress_type = zipfile.ZIP_STORED
        if compressible_half:
            # Level 1: inflating costs a reader the same at any level, and building is faster.
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, payload, compresslevel=1)
        else:
            z.writestr(info, payload)
    return buf.getvalue()


def h1_of_zip(data):
    lines = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in sorted(z.namelist()):
            lines.append("%s  %s\n" % (sha256_hex(z.read(name)), name))
    return "h1:" + base64.b64encode(hashlib.sha256("".join(lines).encode()).digest()).decode()


def provider_matches(spec, provider):
    return spec in (provider["type"], provider["namespace"] + "/" + provider["type"])


def runnable_plugin(spec):
    """--runnable-plugin PLATFORM=PATH -> (platform, bytes), or None."""
    if not spec:
        return None
    platform, _, path = spec.partition("=")
    if platform not in ALL_PLATFORMS or not path:
        raise SystemExit("--runnable-plugin wants PLATFORM=PATH with a platform of %s, got %s" % (ALL_PLATFORMS, spec))
    with open(path, "rb") as f:
        return platform, f.read()


def build_providers(out, www, gpg, config, args, fixture):
    runnable = runnable_plugin(args.runnable_plugin)
    for provider in config["providers"]:
        ns, ptype = provider["namespace"], provider["type"]
        platforms = ALL_PLATFORMS if args.complete_platforms else provider.get("platforms", ALL_PLATFORMS)
        key = provider["key"]
        signer = "wrong" if any(provider_matches(w, provider) for w in args.wrong_key) else key
        entry = {"namespace": ns, "type": ptype, "key": key, "key_fingerprint": gpg.keys[key]["fingerprint"],
                 "signed_by": gpg.keys[signer]["fingerprint"], "protocols": provider["protocols"],
                 "platforms": platforms, "versions": []}
        # A dot-relative download_url for podplane/podplane, an absolute-path one for the others:
        # both are relative references the client must resolve against the JSON's URL.
        dot_relative = ns == "podplane"
        versions_doc = {"versions": []}
        for version in provider["versions"]:
            release = "/releases/%s/%s/" % (ptype, version)
            rel_dir = os.path.join(www, "releases", ptype, version)
            sums_name = "terraform-provider-%s_%s_SHA256SUMS" % (ptype, version)
            packages, sums_lines, served = {}, [], {}
            for platform in platforms:
                name = "terraform-provider-%s_%s_%s.zip" % (ptype, version, platform)
                data = provider_zip(ptype, version, platform, zip_size_of(ptype, version, platform, config), runnable,
                                    config.get("zip_compressible_half", False))
                digest, h1 = sha256_hex(data), h1_of_zip(data)
                sums_digest = digest
                if name in args.shasums_mismatch:
                    sums_digest = sha256_hex(b"not the zip " + data[:64])
                sums_lines.append("%s  %s\n" % (sums_digest, name))
                if name in args.corrupt_zip:
                    data = bytearray(data)
                    data[len(data) // 2] ^= 0xFF
                    data = bytes(data)
                write_if_changed(os.path.join(rel_dir, name), data)
                served[platform] = os.path.join(rel_dir, name)
                # sha256/h1/zh describe the genuine package; served_sha256 what the server sends.
                packages[platform] = {"filename": name, "sha256": digest, "served_sha256": sha256_hex(data),
                                      "size": len(data), "h1": h1, "zh": "zh:" + digest, "url": release + name}
            for platform in RELEASE_ONLY_PLATFORMS:
                name = "terraform-provider-%s_%s_%s.zip" % (ptype, version, platform)
                data = provider_zip(ptype, version, platform, 256)
                write_if_changed(os.path.join(rel_dir, name), data)
                sums_lines.append("%s  %s\n" % (sha256_hex(data), name))
            manifest_name = "terraform-provider-%s_%s_manifest.json" % (ptype, version)
            manifest = json.dumps({"version": 1, "metadata": {"protocol_versions": provider["protocols"] or ["5.0"]}},
                                  indent=2) + "\n"
            write_if_changed(os.path.join(rel_dir, manifest_name), manifest)
            sums_lines.append("%s  %s\n" % (sha256_hex(manifest.encode()), manifest_name))
            sums_lines.sort(key=lambda line: line.split("  ", 1)[1])
            sums_path = os.path.join(rel_dir, sums_name)
            write_if_changed(sums_path, "".join(sums_lines))
            gpg.detach_sign(signer, sums_path)
            with open(sums_path + ".sig", "rb") as f:
                sig_digest = sha256_hex(f.read())
            keys_doc = {"gpg_public_keys": [{"key_id": gpg.keys[key]["key_id"], "ascii_armor": gpg.keys[key]["armor"],
                                             "trust_signature": "", "source": gpg.keys[key]["source"],
                                             "source_url": "https://fixture.test/security"}]}
            for platform in platforms:
                os_, arch = platform.split("_")
                pkg = packages[platform]
                if dot_relative:
                    up = "../" * 7  # from /v1/providers/<ns>/<type>/<ver>/download/<os>/ to /
                    urls = {k: up + v.lstrip("/") for k, v in
                            (("download_url", pkg["url"]), ("shasums_url", release + sums_name),
                             ("shasums_signature_url", release + sums_name + ".sig"))}
                else:
                    urls = {"download_url": pkg["url"], "shasums_url": release + sums_name,
                            "shasums_signature_url": release + sums_name + ".sig"}
                doc = dict(urls)
                doc.update({"os": os_, "arch": arch, "filename": pkg["filename"], "shasum": pkg["sha256"],
                            "signing_keys": keys_doc})
                if provider["protocols"] is not None:
                    doc["protocols"] = provider["protocols"]
                write_json(os.path.join(www, "v1", "providers", ns, ptype, version, "download", os_, arch), doc)
            listed = {"version": version,
                      "platforms": [{"os": p.split("_")[0], "arch": p.split("_")[1]} for p in platforms]}
            if provider["protocols"] is not None:
                listed["protocols"] = provider["protocols"]
            versions_doc["versions"].append(listed)
            entry["versions"].append({"version": version, "shasums_url": release + sums_name,
                                      "shasums_signature_url": release + sums_name + ".sig",
                                      "shasums_sha256": sha256_hex("".join(sums_lines).encode()),
                                      "signature_sha256": sig_digest,
                                      "release_zh": sorted("zh:" + line[:64] for line in sums_lines),
                                      "download_json": "/v1/providers/%s/%s/%s/download/{os}/{arch}" % (ns, ptype, version),
                                      "packages": packages})
            # Network mirror (docs/protocols.md §2): <ver>.json next to the zips, for both origin hosts.
            for host in MIRROR_HOSTS:
                mdir = os.path.join(www, "mirror", host, ns, ptype)
                archives = {}
                for platform in platforms:
                    pkg = packages[platform]
                    link_file(served[platform], os.path.join(mdir, pkg["filename"]))
                    archives[platform] = {"url": pkg["filename"], "hashes": [pkg["h1"], pkg["zh"]]}
                write_json(os.path.join(mdir, version + ".json"), {"archives": archives})
        write_json(os.path.join(www, "v1", "providers", ns, ptype, "versions"), versions_doc)
        for host in MIRROR_HOSTS:
            write_json(os.path.join(www, "mirror", host, ns, ptype, "index.json"),
                       {"versions": {v: {} for v in provider["versions"]}})
        fixture["providers"].append(entry)


# ---------------------------------------------------------------------------------------------
# Modules

def versions_tf(system):
    """What each submodule of the <system> package requires (the cloud's provider first)."""
    return {
        "cluster": [(system, ">= 5.0"), ("random", ">= 3.0"), ("null", ">= 3.0")],
        "account": [(system, ">= 5.0")],
        "network": [(system, ">= 5.0")],
        "shard": [(system, ">= 5.0"), ("random", ">= 3.0"), ("null", ">= 3.0"), ("tls", ">= 4.0"), ("cloudinit", ">= 2.0")],
    }


# The inputs of each submodule: what the generated stack passes (generator/render.cpp), the
# first one required (no default), the others optional, as the real modules declare them.
MODULE_VARIABLES = {
    "cluster": ["cluster_id", "name_prefix"],
    "account": ["cluster", "enable_ssm", "project", "region", "node_role"],
    "network": ["cluster", "account", "vpc_id", "vpc_cidr_ipv4", "enable_ipv6", "subnets", "load_balancers"],
    "shard": ["cluster", "account", "network", "zone", "pools"],
}


# The outputs of each submodule that a generated stack reads (podplane.cluster.dns.tf and
# outputs.tf read the network's), so `terraform validate` of a stack can pass.
MODULE_OUTPUTS = {
    "network": {"kubernetes_api_dns_name": '"nlb.example.invalid"', "load_balancers": "var.load_balancers"},
}


def module_outputs(sub):
    return "".join('output "%s" {\n  value = %s\n}\n\n' % (name, value)
                   for name, value in MODULE_OUTPUTS.get(sub, {}).items())


def module_variables(sub):
    names = MODULE_VARIABLES[sub]
    text = 'variable "%s" {\n  type = any\n}\n\n' % names[0]
    for name in names[1:]:
        text += 'variable "%s" {\n  type    = any\n  default = null\n}\n\n' % name
    return text


def module_files(version, system="aws"):
    """path -> (bytes, mode) of the nstance-dev/nstance/<system> package at `version`."""
    files = {
        "README.md": ("# terraform-%s-nstance %s (podplane fixture)\n\nModules: cluster, account, network, shard.\n"
                      % (system, version), 0o644),
        "versions.tf": ('terraform {\n  required_version = ">= 1.6.0"\n  required_providers {\n'
                        '    %s = {\n      source  = "hashicorp/%s"\n      version = ">= 5.0"\n    }\n  }\n}\n'
                        % (system, system), 0o644),
    }
    for sub, providers in versions_tf(system).items():
        body = "".join('    %s = {\n      source  = "hashicorp/%s"\n      version = "%s"\n    }\n' % (p, p, c)
                       for p, c in providers)
        files["modules/%s/versions.tf" % sub] = ('terraform {\n  required_version = ">= 1.6.0"\n'
                                                 '  required_providers {\n%s  }\n}\n' % body, 0o644)
        files["modules/%s/main.tf" % sub] = ('# nstance %s module, version %s\n\n%s%s'
                                             'output "module_version" {\n  value = "%s"\n}\n'
                                             % (sub, version, module_variables(sub), module_outputs(sub), version),
                                             0o644)
    files["modules/shard/scripts/bootstrap.sh"] = ("#!/bin/sh\necho nstance shard bootstrap %s\n" % version, 0o755)
    return {k: (v.encode(), m) for k, (v, m) in files.items()}


def tar_gz(files, topdir=None):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            data, mode = files[path]
            info = tarfile.TarInfo((topdir + "/" if topdir else "") + path)
            info.size, info.mode, info.mtime = len(data), mode, EPOCH
            info.uname = info.gname = "fixture"
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def build_git_repo(www, module, versions):
    """A bare repo with one commit and tag per version; fixed dates make the commits deterministic."""
    git_dir = os.path.join(www, "git")
    final = os.path.join(git_dir, module["repo"] + ".git")
    work = tempfile.mkdtemp(prefix="ppgit")
    env = dict(os.environ, GIT_AUTHOR_NAME="Fixture", GIT_AUTHOR_EMAIL="fixture@fixture.test",
               GIT_COMMITTER_NAME="Fixture", GIT_COMMITTER_EMAIL="fixture@fixture.test",
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    try:
        tree = os.path.join(work, "tree")
        run(["git", "init", "-q", "-b", "main", tree], env=env)
        for i, v in enumerate(versions):
            for entry in os.listdir(tree):
                if entry != ".git":
                    shutil.rmtree(os.path.join(tree, entry)) if os.path.isdir(os.path.join(tree, entry)) \
                        else os.unlink(os.path.join(tree, entry))
            for path, (data, mode) in module_files(v, module["system"]).items():
                p = os.path.join(tree, path)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "wb") as f:
                    f.write(data)
                os.chmod(p, mode)
            date = "%d +0000" % (EPOCH + 86400 * (i + 1))
            env_c = dict(env, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
            run(["git", "-C", tree, "add", "-A"], env=env_c)
            run(["git", "-C", tree, "commit", "-q", "--no-gpg-sign", "-m", "Release v" + v], env=env_c)
            run(["git", "-C", tree, "tag", "v" + v], env=env_c)
        bare = os.path.join(work, "bare.git")
        run(["git", "clone", "-q", "--bare", tree, bare], env=env)
        refs = run(["git", "-C", bare, "show-ref"], env=env).decode()
        old_refs = None
        if os.path.isdir(final):
            old_refs = subprocess.run(["git", "-C", final, "show-ref"], stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, env=env).stdout.decode()
        if refs != old_refs:
            os.makedirs(git_dir, exist_ok=True)
            if os.path.isdir(final):
                shutil.rmtree(final)
            shutil.move(bare, final)
        tags = {}
        for line in refs.splitlines():
            sha, ref = line.split()
            if ref.startswith("refs/tags/"):
                tags[ref[len("refs/tags/"):]] = sha
        return tags
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_modules(www, config, fixture):
    for module in MODULES:
        build_module(www, module, config, fixture)
    build_wrapper(www, fixture)


def wrapper_files(version, calls):
    """path -> (bytes, mode) of the wrapper package at `version`: one call of `calls`."""
    main = ('# wrapper module, version %s: the nstance network behind a fixed version\n\n'
            'variable "cluster" {\n  type    = any\n  default = "fixture"\n}\n\n'
            'module "network" {\n  source  = "%s"\n  version = "%s"\n  cluster = var.cluster\n}\n\n'
            'output "module_version" {\n  value = "%s"\n}\n' % (version, calls["source"], calls["version"], version))
    return {"README.md": (b"# terraform-aws-wrapper %s (podplane fixture)\n" % version.encode(), 0o644),
            "main.tf": (main.encode(), 0o644)}


def build_wrapper(www, fixture):
    ns, name, system = WRAPPER["namespace"], WRAPPER["name"], WRAPPER["system"]
    base = os.path.join(www, "v1", "modules", ns, name, system)
    entry = {"namespace": ns, "name": name, "system": system, "address": "%s/%s/%s" % (ns, name, system), "versions": []}
    for m in WRAPPER["versions"]:
        v = m["version"]
        files = wrapper_files(v, m["calls"])
        flat = "/archives/%s-%s.tar.gz" % (WRAPPER["repo"], v)
        write_if_changed(os.path.join(www, flat.lstrip("/")), tar_gz(files))
        location = "{{BASE}}" + flat
        download = os.path.join(base, v, "download")
        write_if_changed(download, b"")
        write_if_changed(download + ".headers", "Status: 204\nX-Terraform-Get: %s\n" % location)
        entry["versions"].append({
            "version": v, "source": "archive", "location": location, "archive_path": flat, "calls": m["calls"],
            "files": {p: {"sha256": sha256_hex(d), "mode": "%o" % mode, "size": len(d)} for p, (d, mode) in files.items()}})
    write_json(os.path.join(base, "versions"),
               {"modules": [{"versions": [{"version": m["version"]} for m in WRAPPER["versions"]]}]})
    fixture["modules"].append(entry)


def build_module(www, MODULE, config, fixture):
    ns, name, system = MODULE["namespace"], MODULE["name"], MODULE["system"]
    base = os.path.join(www, "v1", "modules", ns, name, system)
    versions = [m["version"] for m in config["module_versions"]]
    tags = build_git_repo(www, MODULE, versions)
    entry = {"namespace": ns, "name": name, "system": system, "address": "%s/%s/%s" % (ns, name, system),
             "git_path": "/git/%s.git" % MODULE["repo"], "versions": []}
    for m in config["module_versions"]:
        v = m["version"]
        files = module_files(v, system)
        flat = "/archives/%s-%s.tar.gz" % (MODULE["repo"], v)
        topdir = "/archives/%s-%s-topdir.tar.gz" % (MODULE["repo"], v)
        write_if_changed(os.path.join(www, flat.lstrip("/")), tar_gz(files))
        write_if_changed(os.path.join(www, topdir.lstrip("/")), tar_gz(files, "%s-%s" % (MODULE["repo"], v)))
        if m["source"] == "git":
            location = "git::{{BASE}}/git/%s.git?ref=v%s" % (MODULE["repo"], v)
        else:
            location = "{{BASE}}" + flat
        download = os.path.join(base, v, "download")
        write_if_changed(download, b"")
        write_if_changed(download + ".headers", "Status: 204\nX-Terraform-Get: %s\n" % location)
        entry["versions"].append({
            "version": v, "source": m["source"], "location": location, "git_tag": "v" + v,
            "git_commit": tags.get("v" + v), "archive_path": flat, "archive_topdir_path": topdir,
            "files": {p: {"sha256": sha256_hex(d), "mode": "%o" % mode, "size": len(d)} for p, (d, mode) in files.items()}})
    write_json(os.path.join(base, "versions"), {"modules": [{"versions": [{"version": v} for v in versions]}]})
    fixture["modules"].append(entry)


# ---------------------------------------------------------------------------------------------
# vmconfig (docs/podplane-layout.md §2.2)


def vmconfig_items(kind, arch, vm_version):
    """(manifest key, name, version, path under /artifacts, type, digest algo, size, providers)."""
    deb_arch = arch
    items = [
        ("os-image", "os-image", "20260512-2476", "debian/20260512-2476/debian-13-genericcloud-%s-20260512-2476.qcow2" % arch,
         "qcow2", "sha512", 96 * 1024, None),
        ("containerd", "containerd", "2.3.1", "containerd/2.3.1/containerd-2.3.1-linux-%s.tar.gz" % arch, "tar.gz", "sha256", 24 * 1024, None),
        ("kubelet", "kubelet", "1.36.1", "kubernetes/1.36.1/%s/kubelet" % arch, "binary", "sha256", 20 * 1024, None),
        ("fluent-bit", "fluent-bit", "5.0.5", "fluent-bit/5.0.5/fluent-bit_5.0.5_%s.deb" % deb_arch, "deb", "sha256", 12 * 1024, None),
        ("nstance-agent", "nstance-agent", "1.2.3", "nstance-agent/1.2.3/nstance-agent_linux_%s" % arch, "binary", "sha256", 8 * 1024, ["aws"]),
        ("google-guest-agent", "google-guest-agent", "20260101.00",
         "google-guest-agent/20260101.00/google-guest-agent_20260101.00_%s.deb" % arch, "deb", "sha256", 8 * 1024, ["google"]),
        ("openbao", "openbao", "2.4.0", "openbao/2.4.0/bao_2.4.0_linux_%s" % arch, "binary", "sha512", 8 * 1024, ["proxmox"]),
        # What every Proxmox VE node runs (generator/proxmox_stack.cpp): a stand-in binary.
        ("nstance-server", "nstance-server", "1.2.3", "nstance-server/1.2.3/nstance-server_linux_%s" % arch, "binary", "sha256",
         8 * 1024, ["proxmox"]),
        ("vmconfig", "vmconfig", vm_version, "vmconfig/%s/vmconfig_%s_%s_debian-13_%s.tar.gz" % (vm_version, vm_version, kind, arch),
         "tar.gz", "sha256", 4 * 1024, None),
    ]
    if kind == "knc":
        items.append(("netsy", "netsy", "1.1.0", "netsy/1.1.0/netsy_1.1.0_linux_%s.tar.gz" % arch, "tar.gz", "sha512", 16 * 1024, None))
    else:
        items.append(("zot", "zot", "2.1.17", "zot/2.1.17/zot-linux-%s" % arch, "binary", "sha512", 16 * 1024, None))
    return items


FIXTURE_IMAGE = "podplane-fixture/pause"
FIXTURE_IMAGE_TAG = "3.10.2"


def build_registry(www, fixture):
    """A static registry under www/v2/: one multi-arch image, each file with its OCI headers."""
    layout = tempfile.mkdtemp()
    try:
        summary = make_image.make_image(layout, FIXTURE_IMAGE_TAG, ["linux/amd64", "linux/arm64", "linux/arm/v7"],
                                        seed="fixture-pause", shared_seed="fixture-shared")
        repo = os.path.join(www, "v2", FIXTURE_IMAGE)
        blobs = os.path.join(layout, "blobs", "sha256")
        for hex_digest in sorted(os.listdir(blobs)):
            with open(os.path.join(blobs, hex_digest), "rb") as f:
                data = f.read()
            digest = "sha256:" + hex_digest
            media_type = summary["media_types"].get(digest)
            names = [os.path.join(repo, "blobs", digest)]
            if media_type:
                names = [os.path.join(repo, "manifests", digest)]
                if digest == summary["index"]:
                    names.append(os.path.join(repo, "manifests", FIXTURE_IMAGE_TAG))
            for name in names:
                write_if_changed(name, data)
                write_if_changed(name + ".headers", ("Content-Type: %s\nDocker-Content-Digest: %s\n" % (
                    media_type or "application/octet-stream", digest)).encode())
    finally:
        shutil.rmtree(layout, ignore_errors=True)
    fixture["image"] = {"name": FIXTURE_IMAGE, "tag": FIXTURE_IMAGE_TAG, "index": summary["index"],
                        "manifests": summary["manifests"], "blobs": sorted(set(summary["blobs"]))}
    return [{"image": "{{HOST}}/%s:%s" % (FIXTURE_IMAGE, FIXTURE_IMAGE_TAG), "digest": m["digest"], "size": m["size"],
             "platform": platform, "index": summary["index"]}
            for platform, m in summary["manifests"].items() if platform in ("linux/amd64", "linux/arm64")]


SEEDS_VERSION = "2026.11.1"


def build_seeds(www, fixture):
    """seeds.json (served with {{BASE}} filled) and the Netsy snapshots it pins by sha512."""
    snapshots, listed = {}, {}
    for name, size in (("recommended", 24 * 1024), ("minimal", 8 * 1024)):
        data = pseudo_random("seeds/" + name, size)
        path = "seeds/%s/%s/%s.netsy" % (name, SEEDS_VERSION, name)
        write_if_changed(os.path.join(www, path), data)
        digest = "sha512:" + hashlib.sha512(data).hexdigest()
        snapshots[name] = {"url": "{{BASE}}/" + path, "digest": digest, "size": size}
        listed[name] = {"path": "/" + path, "digest": digest, "size": size, "sha256": sha256_hex(data)}
    write_json(os.path.join(www, "manifests", "seeds.json.tmpl"), {"seeds": {"version": SEEDS_VERSION, "snapshots": snapshots}})
    fixture["seeds"] = {"version": SEEDS_VERSION, "snapshots": listed}


BOOT_FAULTS = ["kernel-digest", "missing-partition", "missing-path", "not-ext4", "corrupt-qcow2"]


def boot_files(arch):
    """What os.boot names in each arch's image: (part, path, bytes)."""
    return [("kernel", "/boot/vmlinuz-6.12.86+deb13-cloud-%s" % arch, pseudo_random("boot/kernel/" + arch, 48 * 1024)),
            ("initrd", "/boot/initrd.img-6.12.86+deb13-cloud-%s" % arch, pseudo_random("boot/initrd/" + arch, 32 * 1024))]


def os_image_bytes(out, arch, fault, filler_mib=0):
    """The qcow2 image of one arch: GPT, ext4 partition 1 with the boot files (and, with
    --os-image-mib, a file of that many MiB beside them, so that the image weighs what a real
    one does). mkfs.ext4 -d stamps each inode with the real clock, so an image once made is kept
    in OUT_DIR/os-images/ and reused while its inputs are the same: building again never
    changes it."""
    kept = os.path.join(out, "os-images", "%s-%s%s.qcow2" % (arch, fault or "good", "-%dmib" % filler_mib if filler_mib else ""))
    inputs = hashlib.sha256(repr([(part, path, sha256_hex(data)) for part, path, data in boot_files(arch)]).encode()).hexdigest()
    if os.path.exists(kept) and os.path.exists(kept + ".inputs"):
        with open(kept + ".inputs") as f:
            if f.read() == inputs:
                with open(kept, "rb") as image:
                    return image.read()
    data = make_os_image(arch, fault, filler_mib)
    write_if_changed(kept, data)
    write_if_changed(kept + ".inputs", inputs)
    return data


def make_os_image(arch, fault, filler_mib=0):
    if fault == "corrupt-qcow2":
        return pseudo_random("vmconfig/os-image/" + arch, 96 * 1024)  # digest-pinned, but no qcow2
    files = {path: data for _, path, data in boot_files(arch)}
    work = tempfile.mkdtemp(prefix="os-image-")
    try:
        out = os.path.join(work, "image.qcow2")
        # ext4's own tables and journal take up to a fifth of a small file system
        part_bytes = max(boot_image.PART_BYTES, (filler_mib + filler_mib // 4 + 16) << 20)
        boot_image.make_boot_image(out, files, "swap" if fault == "not-ext4" else "ext4", part_bytes=part_bytes,
                                   filler_bytes=filler_mib << 20)
        with open(out, "rb") as f:
            return f.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def os_boot(arch, fault):
    boot = {"cmdline": "root=PARTUUID=%s ro console=ttyS0,115200" % boot_image.PART_GUID.lower()}
    for part, path, data in boot_files(arch):
        digest = "sha256:" + sha256_hex(data)
        if fault == "kernel-digest" and part == "kernel":
            digest = "sha256:" + sha256_hex(data + b"tampered")
        if fault == "missing-path" and part == "kernel":
            path = path.replace("vmlinuz-", "vmlinuz-missing-")
        boot[part] = {"partition": 2 if fault == "missing-partition" else 1, "path": path, "digest": digest}
    return boot


def build_vmconfig(www, config, fixture, images, boot_fault=None):
    vm_version = config["vmconfig_version"]
    fixture["vmconfig"] = {"version": vm_version, "manifests": []}
    for kind in ("knc", "knd"):
        for arch in ("amd64", "arm64"):
            name = "vmconfig_%s_debian-13_%s" % (kind, arch)
            deps, image, listed = {}, None, []
            for key, art_name, version, path, typ, algo, size, providers in vmconfig_items(kind, arch, vm_version):
                data = (os_image_bytes(os.path.dirname(www), arch, boot_fault, config.get("os_image_mib", 0)) if key == "os-image"
                        else pseudo_random("vmconfig/" + path, size))
                size = len(data)
                write_if_changed(os.path.join(www, "artifacts", path), data)
                digest = algo + ":" + hashlib.new(algo, data).hexdigest()
                dep = {"version": version, "url": "{{BASE}}/artifacts/" + path, "type": typ, "digest": digest, "size": size}
                if providers:
                    dep["providers"] = providers
                if key == "os-image":
                    image = dep
                else:
                    deps[key] = dep
                listed.append({"name": art_name, "version": version, "path": "/artifacts/" + path,
                               "filename": os.path.basename(path), "digest": digest, "sha256": sha256_hex(data),
                               "size": size, "providers": providers or []})
            boot = os_boot(arch, boot_fault)
            manifest = {"vmconfig": {
                "version": vm_version, "kind": kind,
                "os": {"name": "debian-13", "arch": arch, "image": image, "boot": boot},
                "dependencies": deps,
                "images": [i for i in images if i["platform"] == "linux/" + arch]}}
            path = "/manifests/%s.json" % name
            # serve.py fills {{BASE}} in *.tmpl files, so artifact urls are absolute like the real ones.
            write_json(os.path.join(www, path.lstrip("/") + ".tmpl"), manifest)
            fixture["vmconfig"]["manifests"].append({
                "name": name, "kind": kind, "arch": arch, "path": path, "items": listed,
                "boot": [{"part": part, "path": p, "file_name": os.path.basename(p), "sha256": sha256_hex(data)}
                         for part, p, data in boot_files(arch)]})


# ---------------------------------------------------------------------------------------------


def load_config(out, args):
    """The provider/module/vmconfig versions: the defaults, or what OUT_DIR was built with, plus --add-version."""
    saved = os.path.join(out, "fixture.json")
    if os.path.exists(saved):
        with open(saved) as f:
            config = json.load(f)["config"]
    else:
        config = {"providers": json.loads(json.dumps(DEFAULT_PROVIDERS)), "module_versions": list(DEFAULT_MODULE_VERSIONS),
                  "vmconfig_version": DEFAULT_VMCONFIG_VERSION, "zip_size": 16 * 1024}
    if args.zip_size is not None:
        config["zip_size"] = args.zip_size
        config.pop("zip_size_range", None)
    # Kept out of `config` unless asked for, so that the default fixture.json stays as it was.
    if args.zip_size_range is not None:
        low, _, high = args.zip_size_range.partition(":")
        if not low.isdigit() or not high.isdigit() or int(low) > int(high):
            raise SystemExit("--zip-size-range wants MIN:MAX in bytes with MIN <= MAX, got " + args.zip_size_range)
        config["zip_size_range"] = [int(low), int(high)]
    if args.zip_compressible_half:
        config["zip_compressible_half"] = True
    if args.os_image_mib:
        config["os_image_mib"] = args.os_image_mib
    if args.only:
        config["providers"] = [p for p in config["providers"] if any(provider_matches(o, p) for o in args.only)]
        if not config["providers"]:
            raise SystemExit("--only matched no provider")
    for spec in args.add_provider:
        name, _, versions = spec.partition("=")
        ns, _, ptype = name.partition("/")
        if not versions or not ptype:
            raise SystemExit("--add-provider wants NAMESPACE/TYPE=V1,V2, got " + spec)
        if not any(p["namespace"] == ns and p["type"] == ptype for p in config["providers"]):
            config["providers"].append({"namespace": ns, "type": ptype, "key": "rsa", "protocols": ["5.0"],
                                        "versions": versions.split(",")})
    for spec in args.add_version:
        what, _, version = spec.partition("=")
        if not version:
            raise SystemExit("--add-version wants WHAT=VERSION, got " + spec)
        if what == "module":
            if version not in [m["version"] for m in config["module_versions"]]:
                config["module_versions"].append({"version": version, "source": "git"})
        elif what == "vmconfig":
            config["vmconfig_version"] = version
        else:
            matches = [p for p in config["providers"] if provider_matches(what, p)]
            if not matches:
                raise SystemExit("--add-version: unknown provider " + what)
            if version not in matches[0]["versions"]:
                matches[0]["versions"].append(version)
    return config


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--corrupt-zip", action="append", default=[], metavar="NAME",
                        help="change the bytes of this zip after SHA256SUMS and shasum were made")
    parser.add_argument("--wrong-key", action="append", default=[], metavar="PROVIDER",
                        help="sign this provider's SHA256SUMS with a key the registry does not list (aws or hashicorp/aws)")
    parser.add_argument("--shasums-mismatch", action="append", default=[], metavar="NAME",
                        help="give this zip a wrong line in SHA256SUMS (signed; shasum and zip agree)")
    parser.add_argument("--zip-size", type=int, default=None, metavar="BYTES", help="size of each provider zip (default 16 KiB)")
    parser.add_argument("--zip-size-range", metavar="MIN:MAX",
                        help="spread the provider zips' sizes (bytes) over MIN..MAX, by a hash of each package's name")
    parser.add_argument("--os-image-mib", type=int, default=0, metavar="N",
                        help="each vmconfig os image (qcow2) carries N MiB more in its ext4 partition, as real ones weigh hundreds")
    parser.add_argument("--zip-compressible-half", action="store_true",
                        help="make each executable half incompressible, half compressible, DEFLATED (like real Go binaries)")
    parser.add_argument("--complete-platforms", action="store_true",
                        help="give every provider all four platforms (cloudinit normally lacks darwin_arm64)")
    parser.add_argument("--only", action="append", default=[], metavar="PROVIDER",
                        help="build only these providers (e.g. for large --zip-size benchmarks)")
    parser.add_argument("--add-provider", action="append", default=[], metavar="NS/TYPE=V1,V2",
                        help="add a provider of any namespace (bpg/proxmox=0.66.0,0.70.0), signed by the rsa key")
    parser.add_argument("--add-version", action="append", default=[], metavar="WHAT=VERSION",
                        help="add a provider (aws=6.3.0), module (module=2.2.0) or vmconfig (vmconfig=1.0.0) version")
    parser.add_argument("--runnable-plugin", metavar="PLATFORM=PATH",
                        help="put this real plugin executable (tests/tools/tfplugin) into the PLATFORM zips of %s"
                        % ", ".join(RUNNABLE_TYPES))
    parser.add_argument("--boot-fault", choices=BOOT_FAULTS,
                        help="make the os image or its os.boot entries wrong in this way (the image's own digest stays right)")
    parser.add_argument("--images", metavar="FILE",
                        help="JSON list of vmconfig image entries ({{HOST}} allowed) for the manifests, instead of the fixture image")
    args = parser.parse_args()
    out = os.path.abspath(args.out_dir)
    os.makedirs(out, exist_ok=True)
    config = load_config(out, args)
    www = os.path.join(out, "www")
    make_tls(out)
    fixture = {"config": config, "root": out, "www": www, "ca_file": os.path.join(out, "tls", "ca.pem"),
               "faults": {"corrupt_zip": args.corrupt_zip, "wrong_key": args.wrong_key,
                          "shasums_mismatch": args.shasums_mismatch},
               "providers": [], "modules": [], "mirror": {"path": "/mirror/", "hosts": MIRROR_HOSTS}}
    gpg = Gpg(out)
    try:
        gpg.load_or_make()
        fixture["keys"] = {k: {f: v[f] for f in ("fingerprint", "key_id", "algo", "uid", "armor_file")} for k, v in gpg.keys.items()}
        write_json(os.path.join(www, ".well-known", "terraform.json"), {"providers.v1": "/v1/providers/", "modules.v1": "/v1/modules/"})
        build_providers(out, www, gpg, config, args, fixture)
    finally:
        gpg.close()
    build_modules(www, config, fixture)
    images = build_registry(www, fixture)
    if args.images:
        with open(args.images) as f:
            images = json.load(f)
    build_vmconfig(www, config, fixture, images, args.boot_fault)
    build_seeds(www, fixture)
    write_json(os.path.join(out, "fixture.json"), fixture)


if __name__ == "__main__":
    main()
