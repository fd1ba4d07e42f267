#!/usr/bin/env bash
# Prints the path of the cached minimal Debian 11 root filesystem tarball (`mmdebstrap
# --variant=minbase bullseye`: glibc 2.31, no C++ runtime, no gRPC, no OpenBLAS), making it first
# if needed (about 2 minutes, from Debian's mirror). Kept in $ABLATE_ROOTFS_CACHE (default
# ~/.cache/ablate). Tests that run at once (the bundle's, the ssh pool's Debian 11 node) share one
# copy: the making is serialized by a lock on the cache folder.
# Exit 0: printed; 77: cannot make one here (not root, no mmdebstrap); anything else: failed.
set -euo pipefail
CACHE=${ABLATE_ROOTFS_CACHE:-$HOME/.cache/ablate}
ROOTFS_TAR=$CACHE/bullseye-minbase.tar
if [ "$(id -u)" -ne 0 ] || ! command -v mmdebstrap >/dev/null; then
  echo "debian11_rootfs.sh: SKIP: needs root and mmdebstrap" >&2
  exit 77
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if [ ! -f "$ROOTFS_TAR" ]; then
  echo "debian11_rootfs.sh: making the Debian 11 root filesystem in $ROOTFS_TAR" >&2
  mmdebstrap --quiet --variant=minbase bullseye "$ROOTFS_TAR.part.tar"
  mv "$ROOTFS_TAR.part.tar" "$ROOTFS_TAR"
fi
echo "$ROOTFS_TAR"
