"""Blobs of an OCI image layout, shared by the fixture image writers in this folder."""
import hashlib
import os


def put(out, data):
    """Stores `data` under out/blobs/sha256/<hex> (once) and returns its digest "sha256:<hex>"."""
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(out, "blobs", "sha256", digest)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
    return "sha256:" + digest
