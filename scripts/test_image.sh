#!/usr/bin/env bash
# The container image's test (issue 25): unpacks the OCI archive of scripts/image.sh the way a
# container runtime does (index -> manifest -> layers, in order) into a root filesystem and runs
# scripts/bundle_check.sh there in a chroot, in private mount and pid namespaces (on these
# machines `podman run` fails on cgroups, while chroot and unshare work): every program starts,
# a coordinator and a worker run a 4-run CPU sweep and read it back, the preflight passes.
#   scripts/test_image.sh IMAGE.tar
# Exit 0: passed; 77: cannot run here (not root); anything else: failed.
set -euo pipefail
IMAGE=$(readlink -f "${1:?usage: scripts/test_image.sh IMAGE.tar}")
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
  echo "test_image.sh: SKIP: needs root and unshare" >&2
  exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/oci" "$WORK/root"
tar -C "$WORK/oci" -xf "$IMAGE"
layers=$(python3 - "$WORK/oci" <<'PY'
import json, os, sys
oci = sys.argv[1]
def blob(d): return os.path.join(oci, "blobs", *d["digest"].split(":"))
index = json.load(open(os.path.join(oci, "index.json")))
manifest = json.load(open(blob(index["manifests"][0])))
config = json.load(open(blob(manifest["config"])))
assert config["os"] == "linux" and config["architecture"] == "amd64", config
env = config["config"]["Env"]
assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in env, env
for layer in manifest["layers"]:
    assert layer["mediaType"].endswith("tar+gzip"), layer
    assert os.path.getsize(blob(layer)) == layer["size"], layer
    print(blob(layer))
PY
)
for layer in $layers; do tar -C "$WORK/root" -xzf "$layer"; done
R=$WORK/root
install -m 0755 "$(dirname "$0")/bundle_check.sh" "$R/bundle_check.sh"
unshare --mount --pid --fork sh -c "
  mount --make-rprivate / &&
  mount -t proc proc '$R/proc' &&
  mount --rbind /dev '$R/dev' &&
  exec chroot '$R' /usr/bin/env -i PATH=/opt/ablate/bin:/usr/bin:/bin HOME=/root /bundle_check.sh /opt/ablate"
