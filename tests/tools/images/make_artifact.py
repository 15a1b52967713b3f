#!/usr/bin/env python3
"""Writes an OCI artifact that is not a runnable image as an OCI image layout, for tests.

    make_artifact.py OUT_DIR --tag TAG --kind helm|flux|generic [--subject DIGEST --subject-size N]

  helm     a Helm chart as `helm push` writes it: config application/vnd.cncf.helm.config.v1+json,
           one layer application/vnd.cncf.helm.chart.content.v1.tar+gzip (a gzipped chart tar)
  flux     a Flux OCI artifact as `flux push artifact` writes it: config
           application/vnd.cncf.flux.config.v1+json, layer application/vnd.cncf.flux.content.v1.tar+gzip
  generic  an OCI 1.1 artifact: `artifactType` application/vnd.example.sbom.v1+json, the empty
           config (application/vnd.oci.empty.v1+json, `{}`) and one JSON layer
With --subject, the manifest names that manifest as its `subject` (a referrer: an SBOM or an
attestation of an image).

OUT_DIR gets oci-layout, index.json (the manifest tagged TAG) and blobs/sha256/. Prints a JSON
summary on stdout: manifest digest, size and media type, its artifactType (else its config's
media type, as a referrers index lists it) and every blob digest. Python stdlib only: it is a
test fixture.
"""
import argparse
import gzip
import io
import json
import os
import tarfile

from oci_blobs import put

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"
SBOM = "application/vnd.example.sbom.v1+json"


def targz(files):
    """A gzipped tar of {name: text}, reproducible (mtime 0)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def contents(kind, tag):
    """(artifactType or None, config media type, config bytes, layer media type, layer bytes)."""
    if kind == "helm":
        chart = "apiVersion: v2\nname: webapp\nversion: %s\ntype: application\n" % tag
        config = json.dumps({"apiVersion": "v2", "name": "webapp", "version": tag, "type": "application"}).encode()
        return (None, "application/vnd.cncf.helm.config.v1+json", config,
                "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                targz({"webapp/Chart.yaml": chart, "webapp/values.yaml": "replicas: 2\n"}))
    if kind == "flux":
        config = b"{}"
        return (None, "application/vnd.cncf.flux.config.v1+json", config,
                "application/vnd.cncf.flux.content.v1.tar+gzip",
                targz({"deploy/kustomization.yaml": "resources: [app.yaml]\n", "deploy/app.yaml": "kind: ConfigMap\n"}))
    return (SBOM, EMPTY, b"{}", SBOM, json.dumps({"sbom": tag}).encode())


def make_artifact(out, tag, kind, subject=None, subject_size=0):
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    artifact_type, config_type, config, layer_type, layer = contents(kind, tag)
    config_digest = put(out, config)
    layer_digest = put(out, layer)
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST,
                "config": {"mediaType": config_type, "digest": config_digest, "size": len(config)},
                "layers": [{"mediaType": layer_type, "digest": layer_digest, "size": len(layer)}],
                "annotations": {"org.opencontainers.image.created": "2026-01-01T00:00:00Z"}}
    if artifact_type:
        manifest["artifactType"] = artifact_type
    if subject:
        manifest["subject"] = {"mediaType": MANIFEST, "digest": subject, "size": subject_size}
    manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
    manifest_digest = put(out, manifest_bytes)
    descriptor = {"mediaType": MANIFEST, "digest": manifest_digest, "size": len(manifest_bytes)}
    summary = {"digest": manifest_digest, "size": len(manifest_bytes), "media_type": MANIFEST,
               "artifact_type": artifact_type or config_type, "blobs": [config_digest, layer_digest]}
    refs = [dict(descriptor, annotations={"org.opencontainers.image.ref.name": tag})]
    with open(os.path.join(out, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "mediaType": INDEX, "manifests": refs}, f)
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--tag", required=True)
    parser.add_argument("--kind", choices=["helm", "flux", "generic"], required=True)
    parser.add_argument("--subject")
    parser.add_argument("--subject-size", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(make_artifact(args.out_dir, args.tag, args.kind, args.subject, args.subject_size)))


if __name__ == "__main__":
    main()
