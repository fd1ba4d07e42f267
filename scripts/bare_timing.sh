#!/usr/bin/env bash
# How long the README's first command takes on a bare Debian 12 (issue 25): makes a Debian 12
# root filesystem with mmdebstrap (variant apt: Debian's required packages and apt, no compiler,
# nothing of ablate's), copies a clean clone of the repository's HEAD (committed files only)
# into it, and there (chroot, in private mount and pid namespaces, with the host's network)
# runs `./dev.sh demo` or `./dev.sh test`, stamping every line of its output with the seconds
# since the start. Then it prints when each phase ended: packages and npm (the build's first
# line), the build (its last line), the demo's first run starting, the sweep finishing.
#   scripts/bare_timing.sh [demo|test]      ./dev.sh demo (the default) or ./dev.sh test
#   scripts/bare_timing.sh -- COMMAND...    any other command (no single quotes) in the clone,
#                                           e.g. a quick check of this script: -- ./dev.sh help
# Needs root, mmdebstrap, unshare and git, and Debian's mirror and npm's registry. The root
# filesystem is made once (not timed) and kept in $ABLATE_ROOTFS_CACHE (default ~/.cache/ablate);
# each timing starts from a fresh copy of it. The machine's load changes the figures: the script
# prints the load average before and after, and the number of CPUs, so that a figure is quoted
# with the load it was measured under. The full log stays in $ABLATE_TIMING_LOG (default
# /tmp/ablate-bare-timing.log).
set -euo pipefail
MODE=${1:-demo}
case "$MODE" in
  demo | test) STEP="./dev.sh $MODE" ;;
  --) shift; STEP="$*" ;;
  *) echo "usage: scripts/bare_timing.sh [demo|test] | -- COMMAND..." >&2; exit 2 ;;
esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${ABLATE_ROOTFS_CACHE:-$HOME/.cache/ablate}
ROOTFS_TAR=$CACHE/bookworm-apt.tar
LOG=${ABLATE_TIMING_LOG:-/tmp/ablate-bare-timing.log}

if [ "$(id -u)" -ne 0 ] || ! command -v mmdebstrap >/dev/null || ! command -v unshare >/dev/null; then
  echo "bare_timing.sh: needs root, mmdebstrap and unshare" >&2
  exit 77
fi
if [ ! -f "$ROOTFS_TAR" ]; then
  mkdir -p "$CACHE"
  echo "bare_timing.sh: making the Debian 12 root filesystem in $ROOTFS_TAR" >&2
  mmdebstrap --quiet --variant=apt bookworm "$ROOTFS_TAR.part.tar"
  mv "$ROOTFS_TAR.part.tar" "$ROOTFS_TAR"
fi

WORK=$(mktemp -d /var/tmp/ablate-bare.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
R=$WORK/root
mkdir -p "$R"
tar -C "$R" -xf "$ROOTFS_TAR"
cp /etc/resolv.conf "$R/etc/resolv.conf"
# As Debian's installer writes it: the machine's own name resolves (Slurm's daemons need that).
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(hostname)" > "$R/etc/hosts"
# This machine's own CA certificates (a site behind a TLS-inspecting proxy has them on every
# machine): ca-certificates adds them when dev.sh installs it.
mkdir -p "$R/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$R/usr/local/share/ca-certificates/" 2>/dev/null || true
# As in any chroot: packages do not start their services (there is no init here).
printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d"
chmod 755 "$R/usr/sbin/policy-rc.d"
# A clean clone of HEAD: what a user gets from `git clone`, nothing built, no node_modules.
COMMIT=$(git -C "$SRC" rev-parse HEAD)
git clone --quiet --no-checkout "$SRC" "$R/root/ablate"
git -C "$R/root/ablate" checkout --quiet --detach "$COMMIT"

echo "bare_timing.sh: $STEP on a fresh Debian 12 root filesystem, commit ${COMMIT:0:12}," \
  "$(nproc) CPUs, load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$LOG"

# Every line of output with the whole seconds since the start in front.
stamp() {
  local start=$SECONDS line
  while IFS= read -r line; do printf '%5d %s\n' $((SECONDS - start)) "$line"; done
}
set +e
unshare --mount --pid --fork sh -c "
  mount --make-rprivate / &&
  mount -t proc proc '$R/proc' &&
  mount --rbind /dev '$R/dev' &&
  mount --rbind /sys '$R/sys' &&
  exec chroot '$R' /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
    LANG=C.UTF-8 bash -c 'cd /root/ablate && $STEP'" 2>&1 | stamp >> "$LOG"
status=${PIPESTATUS[0]}
set -e

# The stamp of the first line matching a pattern (extended regex), or "-".
at() {
  local t
  t=$(grep -m1 -E "^ *[0-9]+ .*($1)" "$LOG" | awk '{print $1}' || true)
  echo "${t:--}"
}
last_ninja=$(grep -E '^ *[0-9]+ \[[0-9]+/[0-9]+\]' "$LOG" | tail -1 | awk '{print $1}' || true)
echo "bare_timing.sh: exit status $status; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  first compile (packages, npm, configure done): $(at '\[1/[0-9]+\]') s"
echo "  build ends:                                   ${last_ninja:--} s"
if [ "$MODE" = demo ]; then
  echo "  demo sweep submitted:                         $(at 'submitted sweep') s"
  echo "  first run starts:                             $(at ' [1-9][0-9]* running') s"
  echo "  sweep finished:                               $(at '([0-9]+)/\2 done') s"
fi
echo "  end:                                          $(tail -1 "$LOG" | awk '{print $1}') s"
echo "  (log: $LOG)"
exit "$status"
