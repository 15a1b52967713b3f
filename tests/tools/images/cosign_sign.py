#!/usr/bin/env python3
"""Writes a cosign key-based signature of an image as an OCI image layout, for tests.

    cosign_sign.py OUT_DIR --key KEY.pem --digest sha256:<image> --reference HOST/REPO
                   [--claim sha256:<other>]
    cosign_sign.py OUT_DIR --attach att|sbom --digest sha256:<image> --reference HOST/REPO

KEY.pem is an ECDSA P-256 private key (`openssl ecparam -genkey -name prime256v1`). OUT_DIR gets
an OCI layout holding one manifest tagged sha256-<hex>.sig as cosign writes it: a config, and
one layer of type application/vnd.dev.cosign.simplesigning.v1+json whose bytes are the
simple-signing payload naming the image digest (or --claim, to forge a payload naming another
image), with the annotation dev.cosignproject.cosign/signature holding the base64 DER
ECDSA-SHA256 signature over those bytes, made by `openssl dgst -sha256 -sign`. Push it with
`skopeo copy --preserve-digests oci:OUT_DIR:TAG docker://HOST/REPO:TAG`. Prints a JSON summary:
tag, manifest digest, payload digest. Python stdlib and the openssl CLI only: a test fixture.

With --attach (no key), the manifest is what cosign writes beside the signature instead:
`att` an attestation at sha256-<hex>.att (`cosign attest`: one layer of type
application/vnd.dsse.envelope.v1+json, a DSSE envelope of an in-toto statement naming the image,
its signature left empty since nothing here verifies it), `sbom` an SBOM at sha256-<hex>.sbom
(`cosign attach sbom`: one layer of type text/spdx+json). The summary adds the layer's
media_type.
"""
import argparse
import base64
import json
import os
import subprocess
import tempfile

from oci_blobs import put

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE = "dev.cosignproject.cosign/signature"


def sign(key, payload):
    with tempfile.NamedTemporaryFile() as file:
        file.write(payload)
        file.flush()
        return subprocess.run(["openssl", "dgst", "-sha256", "-sign", key, file.name], check=True,
                              capture_output=True).stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--key")
    parser.add_argument("--attach", choices=["att", "sbom"], help="write an attestation or SBOM, not a signature")
    parser.add_argument("--digest", required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--claim", help="the digest the payload names (default: --digest)")
    args = parser.parse_args()
    out = args.out_dir
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    if args.attach:
        return attach(args, out)
    if not args.key:
        parser.error("--key is needed to sign")

    # cosign's payload: compact JSON, these keys in this order.
    payload = json.dumps({"critical": {"identity": {"docker-reference": args.reference},
                                       "image": {"docker-manifest-digest": args.claim or args.digest},
                                       "type": "cosign container image signature"},
                          "optional": None}, separators=(",", ":")).encode()
    payload_digest = put(out, payload)
    manifest_digest, manifest = put_manifest(out, {"mediaType": SIMPLE_SIGNING, "size": len(payload), "digest": payload_digest,
                                                   "annotations": {SIGNATURE: base64.b64encode(sign(args.key, payload)).decode()}})
    tag = "sha256-" + args.digest[len("sha256:"):] + ".sig"
    write_layout(out, tag, manifest_digest, manifest)
    print(json.dumps({"tag": tag, "manifest": manifest_digest, "payload": payload_digest}))


def put_manifest(out, layer):
    """The image manifest cosign writes around one layer (a payload): a config naming the layer
    as its only diff_id, in compact JSON. Returns the manifest's digest and bytes."""
    config = json.dumps({"architecture": "", "created": "0001-01-01T00:00:00Z",
                         "history": [{"created": "0001-01-01T00:00:00Z"}], "os": "",
                         "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}, "config": {}},
                        separators=(",", ":")).encode()
    config_digest = put(out, config)
    manifest = json.dumps({"schemaVersion": 2, "mediaType": MANIFEST,
                           "config": {"mediaType": CONFIG, "size": len(config), "digest": config_digest},
                           "layers": [layer]}, separators=(",", ":")).encode()
    return put(out, manifest), manifest


def write_layout(out, tag, manifest_digest, manifest):
    with open(os.path.join(out, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{"mediaType": MANIFEST, "digest": manifest_digest, "size": len(manifest),
                                                      "annotations": {"org.opencontainers.image.ref.name": tag}}]}, f)


def attach(args, out):
    subject = {"name": args.reference, "digest": {"sha256": args.digest[len("sha256:"):]}}
    if args.attach == "att":
        statement = json.dumps({"_type": "https://in-toto.io/Statement/v0.1", "predicateType": "https://slsa.dev/provenance/v0.2",
                                "subject": [subject], "predicate": {"builder": {"id": "https://ci.example/fixture"}}},
                               separators=(",", ":")).encode()
        payload = json.dumps({"payloadType": "application/vnd.in-toto+json",
                              "payload": base64.b64encode(statement).decode(), "signatures": [{"keyid": "", "sig": ""}]},
                             separators=(",", ":")).encode()
        media_type = "application/vnd.dsse.envelope.v1+json"
        annotations = {"predicateType": "https://slsa.dev/provenance/v0.2"}
    else:
        payload = json.dumps({"spdxVersion": "SPDX-2.3", "SPDXID": "SPDXRef-DOCUMENT", "name": args.reference,
                              "dataLicense": "CC0-1.0", "packages": [{"name": "fixture", "SPDXID": "SPDXRef-fixture"}]},
                             separators=(",", ":")).encode()
        media_type = "text/spdx+json"
        annotations = {}
    payload_digest = put(out, payload)
    layer = {"mediaType": media_type, "size": len(payload), "digest": payload_digest}
    if annotations:
        layer["annotations"] = annotations
    manifest_digest, manifest = put_manifest(out, layer)
    tag = "sha256-" + args.digest[len("sha256:"):] + "." + args.attach
    write_layout(out, tag, manifest_digest, manifest)
    print(json.dumps({"tag": tag, "manifest": manifest_digest, "payload": payload_digest, "media_type": media_type}))


if __name__ == "__main__":
    main()
