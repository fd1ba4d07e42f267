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
CACHE=${ABLATE_ROOTFS_CACHE:-$HOME/.cache/ablate}
ROOTFS_TAR=$CACHE/bullseye-minbase.tar

if [ "$(id -u)" -ne 0 ] || ! command -v mmdebstrap >/dev/null || ! command -v unshare >/dev/null; then
  echo "test_bundle.sh: SKIP: needs root, mmdebstrap and unshare" >&2
  exit 77
fi
if [ ! -f "$ROOTFS_TAR" ]; then
  mkdir -p "$CACHE"
  echo "test_bundle.sh: making the Debian 11 root filesystem in $ROOTFS_TAR" >&2
  mmdebstrap --quiet --variant=minbase bullseye "$ROOTFS_TAR.part.tar"
  mv "$ROOTFS_TAR.part.tar" "$ROOTFS_TAR"
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
R=$WORK/root
mkdir -p "$R"
tar -C "$R" -xf "$ROOTFS_TAR"
mkdir -p "$R/opt"
tar -C "$R/opt" -xzf "$BUNDLE"
ln -s "$(basename "$BUNDLE" .tar.gz)" "$R/opt/ablate"

cat > "$R/run-test.sh" <<'EOF'
#!/bin/bash
# Inside Debian 11: nothing of ablate's but /opt/ablate.
set -euo pipefail
A=/opt/ablate/bin
echo "inside: $(ldd --version | head -1); no libstdc++: $([ ! -e /usr/lib/x86_64-linux-gnu/libstdc++.so.6 ] && echo yes || echo NO)"
for p in ablate ablate-coordinator ablate-worker ablate-train ablate-data; do
  "$A/$p" --help >/dev/null || { echo "FAIL: $p --help"; exit 1; }
done
"$A/ablate-train" --version
"$A/ablate-train" --libraries

# A dataset from the text this root filesystem has (licences and copyright files).
mkdir -p /srv/data /srv/coord /srv/work
"$A/ablate-data" encode /usr/share/common-licenses/* /usr/share/doc/*/copyright \
  --out /srv/data/text --val-fraction 0.1 >/srv/encode.log 2>&1 || { cat /srv/encode.log; exit 1; }

"$A/ablate-coordinator" --listen 127.0.0.1:0 --data-dir /srv/coord --port-file /srv/port \
  --http 127.0.0.1:0 --http-port-file /srv/http-port >/srv/coordinator.log 2>&1 &
for _ in $(seq 100); do [ -s /srv/port ] && [ -s /srv/http-port ] && break; sleep 0.1; done
[ -s /srv/port ] || { echo "FAIL: the coordinator did not start"; cat /srv/coordinator.log; exit 1; }
export ABLATE_SERVER=127.0.0.1:$(cat /srv/port)
"$A/ablate-worker" --coordinator "$ABLATE_SERVER" --work-dir /srv/work --data-dir /srv/data \
  --gpus none --cpu-slots 2 --name bundle >/srv/worker.log 2>&1 &

# The dashboard: its page and uPlot, from share/ablate/web (bash's /dev/tcp; no curl here).
get() {
  exec 3<>"/dev/tcp/127.0.0.1/$(cat /srv/http-port)"
  printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$1" >&3
  head -1 <&3
  exec 3<&-
}
for path in / /vendor/uplot/uPlot.esm.js; do
  status=$(get "$path")
  case "$status" in *" 200 "*) echo "dashboard $path: $status" ;;
    *) echo "FAIL: dashboard $path: $status"; exit 1 ;; esac
done

cat > /srv/tiny.yaml <<'SPEC'
name: bundle-check
baseline: {preset: r20-sub3min, scale: tiny, set: {num_iterations: 20, val_every: 10}}
target_val_loss: 5.0
seeds: 2
gpus_per_run: 0
dataset: text
ablations:
  - {name: no-unet, set: {unet_skips: false}}
SPEC
"$A/ablate" submit /srv/tiny.yaml
timeout 300 "$A/ablate" watch 1 >/srv/watch.log 2>&1 || { echo "FAIL: the sweep did not succeed";
  tail -20 /srv/watch.log; tail -20 /srv/worker.log; exit 1; }
"$A/ablate" runs --sweep 1
succeeded=$("$A/ablate" runs --sweep 1 --json | grep -o '"succeeded"' | wc -l)
[ "$succeeded" -eq 4 ] || { echo "FAIL: $succeeded of 4 runs succeeded"; exit 1; }
"$A/ablate" compare 1 | head -4
"$A/ablate-worker" --check --gpus none --work-dir /srv/work --data-dir /srv/data
echo "bundle test passed"
EOF
chmod +x "$R/run-test.sh"

# Private mounts (proc for /proc/self/exe, /dev for /dev/null) vanish with the namespace; the
# pid namespace ends every process the test started when its shell exits.
unshare --mount --pid --fork sh -c "
  mount --make-rprivate / &&
  mount -t proc proc '$R/proc' &&
  mount --rbind /dev '$R/dev' &&
  exec chroot '$R' /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root /run-test.sh"
