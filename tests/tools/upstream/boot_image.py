#!/usr/bin/env python3
"""Makes a small, real os image as the Debian cloud images are laid out: a GPT disk whose
partition 1 is an ext4 file system holding the files given, converted to qcow2.

    boot_image.py OUT.qcow2 --file /boot/vmlinuz-x=KERNEL_FILE [--file PATH=FILE]... [--partition-fs ext4|swap]
                  [--partition-mib N] [--fs-mib N] [--filler-mib N] [--fill-after-fs] [--compress]
                  [--mkfs-features LIST]

The last options make the images of a decompression bomb: a large partition (--partition-mib),
a file system smaller than it (--fs-mib), a /filler file of N MiB of one repeated byte in the
file system (--filler-mib), the partition past the file system filled with that byte
(--fill-after-fs), and compressed qcow2 clusters (--compress), so that a file of a few hundred
KiB expands to the whole partition. --mkfs-features passes mkfs.ext4 its -O (for a layout such
as meta_bg).

Only standard tools, none of them needing root: sfdisk (fdisk) on a plain file, mkfs.ext4 -d
(e2fsprogs) or mkswap (util-linux) for the partition, qemu-img convert (qemu-utils). The
output is deterministic for equal input (fixed UUIDs, hash seed and clock, sorted files).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SECTOR = 512
PART_START = 2048          # sectors: 1 MiB, as every partitioning tool aligns
DISK_BYTES = 8 << 20
PART_BYTES = 6 << 20
DISK_GUID = "94F1CC68-0000-4000-8000-000000000000"
PART_GUID = "94F1CC68-0000-4000-8000-000000000001"  # the fixture manifests' root=PARTUUID=…
FS_UUID = "94f1cc68-0000-4000-8000-0000000000aa"
HASH_SEED = "94f1cc68-0000-4000-8000-0000000000bb"
EPOCH = 1735689600  # 2025-01-01T00:00:00Z


def run(argv, env=None):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if result.returncode != 0:
        sys.stderr.write(result.stderr.decode(errors="replace"))
        raise SystemExit("%s failed (exit %d)" % (argv[0], result.returncode))
    return result.stdout


def make_boot_image(out, files, partition_fs="ext4", part_bytes=PART_BYTES, fs_bytes=None, filler_bytes=0,
                    fill_after_fs=False, compress=False, mkfs_features=None):
    """files: {absolute path in the file system: bytes}. Writes OUT (qcow2)."""
    fs_bytes = fs_bytes or part_bytes
    disk_bytes = part_bytes + DISK_BYTES - PART_BYTES
    work = tempfile.mkdtemp(prefix="boot-image-")
    try:
        root = os.path.join(work, "root")
        os.makedirs(root)
        for path, data in sorted(files.items()):
            target = os.path.join(root, path.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(data)
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                os.utime(os.path.join(dirpath, name), (EPOCH, EPOCH))
        if filler_bytes:
            with open(os.path.join(root, "filler"), "wb") as f:
                for _ in range(filler_bytes >> 20):
                    f.write(b"A" * (1 << 20))
            os.utime(os.path.join(root, "filler"), (EPOCH, EPOCH))
        os.utime(root, (EPOCH, EPOCH))
        part = os.path.join(work, "part.raw")
        with open(part, "wb") as f:
            f.truncate(fs_bytes)
        env = dict(os.environ, E2FSPROGS_FAKE_TIME=str(EPOCH))
        if partition_fs == "ext4":
            features = ["-O", mkfs_features] if mkfs_features else []
            run(["mkfs.ext4", "-q", "-F", "-U", FS_UUID, "-E", "hash_seed=%s,root_owner=0:0" % HASH_SEED] + features +
                ["-d", root, part], env=env)
        elif partition_fs == "swap":
            run(["mkswap", "-U", FS_UUID, part])
        else:
            raise SystemExit("unknown --partition-fs " + partition_fs)
        if os.path.exists(os.path.join(root, "filler")):
            os.remove(os.path.join(root, "filler"))
        if fill_after_fs:
            with open(part, "r+b") as f:
                f.seek(fs_bytes)
                for _ in range((part_bytes - fs_bytes) >> 20):
                    f.write(b"A" * (1 << 20))
        disk = os.path.join(work, "disk.raw")
        with open(disk, "wb") as f:
            f.truncate(disk_bytes)
        table = ("label: gpt\nlabel-id: %s\nfirst-lba: %d\n"
                 "start=%d, size=%d, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, uuid=%s\n"
                 % (DISK_GUID, PART_START, PART_START, part_bytes // SECTOR, PART_GUID))
        result = subprocess.run(["sfdisk", "-q", disk], input=table.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if result.returncode != 0:
            sys.stderr.write(result.stderr.decode(errors="replace"))
            raise SystemExit("sfdisk failed (exit %d)" % result.returncode)
        with open(part, "rb") as src, open(disk, "r+b") as dst:
            dst.seek(PART_START * SECTOR)
            shutil.copyfileobj(src, dst)
        tmp = out + ".tmp"
        run(["qemu-img", "convert", "-q", "-f", "raw", "-O", "qcow2"] + (["-c"] if compress else []) + [disk, tmp])
        os.replace(tmp, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--file", action="append", default=[], metavar="PATH=FILE")
    parser.add_argument("--partition-fs", default="ext4", choices=["ext4", "swap"])
    parser.add_argument("--partition-mib", type=int, default=PART_BYTES >> 20)
    parser.add_argument("--fs-mib", type=int, default=0)
    parser.add_argument("--filler-mib", type=int, default=0)
    parser.add_argument("--fill-after-fs", action="store_true")
    parser.add_argument("--compress", action="store_true")
    parser.add_argument("--mkfs-features", metavar="LIST")
    args = parser.parse_args()
    files = {}
    for spec in args.file:
        path, _, source = spec.partition("=")
        with open(source, "rb") as f:
            files[path] = f.read()
    make_boot_image(args.out, files, args.partition_fs, args.partition_mib << 20, args.fs_mib << 20, args.filler_mib << 20,
                    args.fill_after_fs, args.compress, args.mkfs_features)


if __name__ == "__main__":
    main()
