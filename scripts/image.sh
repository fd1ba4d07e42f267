#!/usr/bin/env bash
# The container image (issue 25): Debian 12's minimal root filesystem, made from Debian's packages
# by mmdebstrap (no base image is pulled from anywhere), with the bundle (scripts/dist.sh) in
# /opt/ablate, saved as an OCI archive: an OCI image layout in a tar, one layer. `docker load`
# (Docker 25+), `podman load`, `skopeo copy oci-archive:...` and `apptainer build x.sif
# oci-archive://...` import it; enroot through skopeo or a registry (README).
#   scripts/image.sh BUNDLE.tar.gz [OUT.tar]   (OUT default: ablate-VERSION-oci.tar beside BUNDLE)
# Needs root (or mmdebstrap's unshare mode) and mmdebstrap, python3.
set -euo pipefail
BUNDLE=$(readlink -f "${1:?usage: scripts/image.sh BUNDLE.tar.gz [OUT.tar]}")
NAME=$(basename "$BUNDLE" .tar.gz)               # ablate-0.1.0-linux-x86_64
VERSION=$(echo "$NAME" | sed 's/^ablate-\(.*\)-linux-x86_64$/\1/')
OUT=$(readlink -f "${2:-$(dirname "$BUNDLE")/ablate-$VERSION-oci.tar}")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The one layer: Debian 12 minbase, the bundle in /opt/NAME with /opt/ablate pointing at it.
mmdebstrap --quiet --variant=minbase \
  --customize-hook="tar -C \"\$1/opt\" -xzf '$BUNDLE' && ln -s $NAME \"\$1/opt/ablate\"" \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
  bookworm "$WORK/layer.tar"

mkdir -p "$WORK/oci/blobs/sha256"
python3 - "$WORK" "$VERSION" <<'EOF'
import gzip, hashlib, json, os, shutil, sys
work, version = sys.argv[1], sys.argv[2]
blobs = os.path.join(work, "oci", "blobs", "sha256")

def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

def blob(data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, d), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + d, "size": len(data)}

layer = os.path.join(work, "layer.tar")
diff_id = sha(layer)
gz = os.path.join(work, "layer.tar.gz")
with open(layer, "rb") as src, gzip.GzipFile(gz, "wb", mtime=0) as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
gz_digest = sha(gz)
shutil.move(gz, os.path.join(blobs, gz_digest))

config = {
    "architecture": "amd64", "os": "linux",
    "config": {
        "Env": ["PATH=/opt/ablate/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                # What the NVIDIA container runtime (docker --gpus, enroot/pyxis) reads: every
                # GPU, and the driver's compute libraries and nvidia-smi put into the container.
                "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"],
        "Cmd": ["ablate-worker", "--help"],
        "WorkingDir": "/",
        "Labels": {"org.opencontainers.image.title": "ablate",
                   "org.opencontainers.image.version": version},
    },
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff_id]},
    "history": [{"created_by": "mmdebstrap --variant=minbase bookworm + the ablate bundle "
                               "(scripts/image.sh)"}],
}
cfg = blob(json.dumps(config, sort_keys=True).encode())
manifest = {
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **cfg},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": "sha256:" + gz_digest,
                "size": os.path.getsize(os.path.join(blobs, gz_digest))}],
}
man = blob(json.dumps(manifest, sort_keys=True).encode())
index = {"schemaVersion": 2, "manifests": [{
    "mediaType": "application/vnd.oci.image.manifest.v1+json", **man,
    "annotations": {"org.opencontainers.image.ref.name": version,
                    "io.containerd.image.name": "ablate:" + version}}]}
with open(os.path.join(work, "oci", "index.json"), "w") as f:
    json.dump(index, f)
with open(os.path.join(work, "oci", "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
EOF
tar -C "$WORK/oci" --owner=0 --group=0 -cf "$OUT" oci-layout index.json blobs
echo "$OUT"
