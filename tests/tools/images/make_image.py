#!/usr/bin/env python3
"""Writes a small multi-arch container image as an OCI image layout, for tests and benchmarks.

    make_image.py OUT_DIR --tag TAG [--platform linux/amd64]... [--shared-size BYTES]
                  [--own-size BYTES] [--seed TEXT] [--shared-seed TEXT]

OUT_DIR gets oci-layout, index.json (one image index tagged TAG) and blobs/sha256/. Each platform's
manifest has two layers: a layer made from --shared-seed (byte-identical in every platform, and
in every image made with the same --shared-seed and --shared-size: a shared layer) and one of
its own. Layers are plain tars (application/vnd.oci.image.layer.v1.tar) so that large images
are quick to make. Prints a JSON summary on stdout: index digest, per-platform manifest digest
and size, and every blob digest. Python stdlib only: it is a test fixture.
"""
import argparse
import io
import json
import os
import random
import tarfile

from oci_blobs import put

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"


def layer(name, seed, size):
    payload = random.Random(seed).randbytes(size)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size = len(payload)
        info.mtime = 0
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


def make_image(out, tag, platforms, shared_size=4096, own_size=2048, seed="image", shared_seed="shared"):
    """Writes the layout into `out`; returns the summary (see the module doc)."""
    args = argparse.Namespace(tag=tag, shared_size=shared_size, own_size=own_size, seed=seed, shared_seed=shared_seed)
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)

    shared = layer("shared.bin", args.shared_seed, args.shared_size)
    shared_digest = put(out, shared)
    summary = {"manifests": {}, "blobs": [shared_digest], "media_types": {}}
    descriptors = []
    for platform in platforms:
        parts = platform.split("/")
        own = layer("own.bin", args.seed + "/" + platform, args.own_size)
        own_digest = put(out, own)
        config = {"architecture": parts[1], "os": parts[0], "rootfs": {"type": "layers", "diff_ids": [shared_digest, own_digest]},
                  "config": {"Cmd": ["/own.bin"]}}
        if len(parts) > 2:
            config["variant"] = parts[2]
        config_bytes = json.dumps(config, sort_keys=True).encode()
        config_digest = put(out, config_bytes)
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST,
                    "config": {"mediaType": CONFIG, "digest": config_digest, "size": len(config_bytes)},
                    "layers": [{"mediaType": LAYER, "digest": shared_digest, "size": len(shared)},
                               {"mediaType": LAYER, "digest": own_digest, "size": len(own)}]}
        manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
        manifest_digest = put(out, manifest_bytes)
        descriptor_platform = {"os": parts[0], "architecture": parts[1]}
        if len(parts) > 2:
            descriptor_platform["variant"] = parts[2]
        descriptors.append({"mediaType": MANIFEST, "digest": manifest_digest, "size": len(manifest_bytes),
                            "platform": descriptor_platform})
        summary["manifests"][platform] = {"digest": manifest_digest, "size": len(manifest_bytes)}
        summary["media_types"][manifest_digest] = MANIFEST
        summary["blobs"] += [own_digest, config_digest]
    index_bytes = json.dumps({"schemaVersion": 2, "mediaType": INDEX, "manifests": descriptors}, sort_keys=True).encode()
    index_digest = put(out, index_bytes)
    summary["index"] = index_digest
    summary["index_size"] = len(index_bytes)
    summary["media_types"][index_digest] = INDEX
    with open(os.path.join(out, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "mediaType": INDEX,
                   "manifests": [{"mediaType": INDEX, "digest": index_digest, "size": len(index_bytes),
                                  "annotations": {"org.opencontainers.image.ref.name": args.tag}}]}, f)
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--tag", required=True)
    parser.add_argument("--platform", action="append", default=[])
    parser.add_argument("--shared-size", type=int, default=4096)
    parser.add_argument("--own-size", type=int, default=2048)
    parser.add_argument("--seed", default="image")
    parser.add_argument("--shared-seed", default="shared")
    args = parser.parse_args()
    summary = make_image(args.out_dir, args.tag, args.platform or ["linux/amd64", "linux/arm64"], args.shared_size,
                         args.own_size, args.seed, args.shared_seed)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
