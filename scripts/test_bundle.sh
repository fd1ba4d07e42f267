#!/usr/bin/env bash
# The bundle's test (issue 25): unpacks an ablate-VERSION-linux-x86_64.tar.gz (scripts/dist.sh)
# into a minimal Debian 11 root filesystem (`mmdebstrap --variant=minbase bullseye`: glibc 2.31,
# no C++ runtime, no gRPC, no OpenBLAS), and inside it (chroot, in private mount and pid
# namespaces) checks that every program starts, starts a coordinator (with its dashboard) and a
# worker, runs a tiny sweep on the CPU trainer and reads it back with `ablate runs` and
# `ablate compare`. Run before each release of the bundle; ctest runs it too (label bundle).
# Needs root and mmdebstrap; the root filesystem is made once (about 2 minutes, from Debian's
# mirror) and kept in $ABLATE_ROOTFS_CACHE (default ~/.cache/ablate).
#   scripts/test_bundle.sh BUNDLE.tar.gz
# Exit 0: passed; 77: cannot run here (not root, no mmdebstrap); anything else: failed.
set -euo pipefail
BUNDLE=$(readlink -f "${1:?usage: scripts/test_bundle.sh BUNDLE.tar.gz}")
if [ "$(id -u)" -ne 0 ] || ! command -v mmdebstrap >/dev/null || ! command -v unshare >/dev/null; then
  echo "test_bundle.sh: SKIP: needs root, mmdebstrap and unshare" >&2
  exit 77
fi
ROOTFS_TAR=$("$(dirname "$0")/debian11_rootfs.sh")

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
R=$WORK/root
mkdir -p "$R"
tar -C "$R" -xf "$ROOTFS_TAR"
mkdir -p "$R/opt"
tar -C "$R/opt" -xzf "$BUNDLE"
ln -s "$(basename "$BUNDLE" .tar.gz)" "$R/opt/ablate"

install -m 0755 "$(dirname "$0")/bundle_check.sh" "$R/bundle_check.sh"

# Private mounts (proc for /proc/self/exe, /dev for /dev/null) vanish with the namespace; the
# pid namespace ends every process the test started when its shell exits.
unshare --mount --pid --fork sh -c "
  mount --make-rprivate / &&
  mount -t proc proc '$R/proc' &&
  mount --rbind /dev '$R/dev' &&
  exec chroot '$R' /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root /bundle_check.sh /opt/ablate"
