#!/usr/bin/env bash
# Rehearses the first GPU call, `scripts/gpu_session.sh all`, here and without a GPU, in a root
# file system that has none of Debian's -dev packages and none of the libraries the pack carries
# (a `mmdebstrap --variant=minbase bookworm` system plus python3, xz-utils and procps, the runtime
# the device is assumed to have besides CUDA and PyTorch). It checks, in this order:
#   1. the pack (`gpu_session.sh check`): every NEEDED library of the carried binaries and
#      libraries is carried or in the device's base system, and no symbol version is newer than
#      Ubuntu 24.04's (glibc 2.39, GLIBCXX_3.4.33);
#   2. the caps (`gpu_session.sh caps`): each phase's runs fit its cap, the phases the budget;
#   3. the size of what travels: the working tree as the device tool sends it plus .gpu-deps,
#      under the tool's 64 MiB;
#   4. `all` itself in the root file system (chroot in a private mount namespace, empty
#      environment): the carried binaries start there with only the carried lib/, every phase's
#      command line runs (the GPU parts end "no CUDA device", PyTorch's half says it has no
#      PyTorch; the product phase runs the bundle's `ablate up` and its built-in sweep on the
#      CPU, and skips the script sweep for want of torch), each phase leaves its log, the whole run stays inside the budget, and what $OUT
#      holds would come back (at most 8 files, 16 MiB each, plain names).
# The device's Ubuntu is newer than this Debian, so step 1, not step 4, is the glibc check.
#
# Usage (as root, after `scripts/gpu_session.sh prepare`):
#   scripts/gpu_session_rehearse.sh              # root file system cached in
#                                                # /var/tmp/ablate-gpu-rootfs (ABLATE_REHEARSE_ROOTFS)
#   OUT=/tmp/rh scripts/gpu_session_rehearse.sh  # where the logs of `all` land (default
#                                                # gpu-logs/rehearse-all)
# apt-get install mmdebstrap first; building the root file system needs Debian's mirror (once).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOTFS=${ABLATE_REHEARSE_ROOTFS:-/var/tmp/ablate-gpu-rootfs}
OUT=${OUT:-$ROOT/gpu-logs/rehearse-all}
LIMIT_MIB=64

die() { echo "gpu_session_rehearse: $*" >&2; exit 1; }
step() { echo; echo "==== $*"; }

[ "$(id -u)" = 0 ] || die "run as root (chroot and mounts)"
cd "$ROOT" || exit 1

step "1. the pack against the device's libraries"
bash scripts/gpu_session.sh check || die "check failed"

step "2. the caps"
bash scripts/gpu_session.sh caps || die "the caps do not fit"

step "3. what travels (the device tool's limit: $LIMIT_MIB MiB)"
tree_bytes=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null |
             tail -1 | cut -f1)
carry_bytes=$(du -sb .gpu-deps | cut -f1)
total=$((tree_bytes + carry_bytes))
awk -v t="$tree_bytes" -v c="$carry_bytes" 'BEGIN { m = 1048576;
  printf "  working tree %.1f MiB + .gpu-deps %.1f MiB = %.1f MiB\n", t / m, c / m, (t + c) / m }'
[ "$total" -lt $((LIMIT_MIB * 1048576)) ] || die "over the $LIMIT_MIB MiB the tool sends"

step "4. 'all' in a root file system without the -dev packages ($ROOTFS)"
if [ ! -x "$ROOTFS/usr/bin/python3" ]; then
  command -v mmdebstrap >/dev/null || die "apt-get install mmdebstrap"
  rm -rf "$ROOTFS.tmp"
  mmdebstrap --variant=minbase --include=python3,xz-utils,procps bookworm "$ROOTFS.tmp" ||
    die "mmdebstrap failed"
  mv "$ROOTFS.tmp" "$ROOTFS"
fi
# Nothing the pack carries may be there already, or the rehearsal would prove nothing.
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libgomp.so.1; do
  found=$(find "$ROOTFS/usr/lib" "$ROOTFS/lib" -name "$lib" 2>/dev/null | head -1)
  [ -z "$found" ] || die "$found is in the root file system: remove it"
done
for d in usr/include/nlohmann usr/include/gtest usr/include/CLI; do
  [ ! -e "$ROOTFS/$d" ] || die "$ROOTFS/$d exists: a -dev package is installed there"
done
# The working tree as the device tool sends it (tracked and untracked-not-ignored files, and the
# carried .gpu-deps), at a path unlike this one.
rm -rf "$ROOTFS/work" "$ROOTFS/out" && mkdir -p "$ROOTFS/work/repo" "$ROOTFS/out"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$ROOTFS/work/repo" ||
  die "cannot copy the working tree"
cp -r .gpu-deps "$ROOTFS/work/repo/" || die "cannot copy .gpu-deps"
started=$SECONDS
unshare -m --propagation private bash -c "
  mount -t proc proc '$ROOTFS/proc' && mount --rbind /dev '$ROOTFS/dev' &&
  mount -t tmpfs none '$ROOTFS/tmp' &&
  chroot '$ROOTFS' env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 OUT=/out bash -c 'cd /work/repo && bash scripts/gpu_session.sh all'"
rc=$?
wall=$((SECONDS - started))
rm -rf "$OUT" && mkdir -p "$OUT" && cp -r "$ROOTFS/out/." "$OUT/"

step "the rehearsal's checks"
bad=0
budget=$(bash scripts/gpu_session.sh caps | sed -n 's/.*budget \([0-9]*\) s).*/\1/p')
echo "  'all' exit $rc in $wall s (budget $budget s)"
[ "$rc" = 0 ] || bad=1
[ "$wall" -le "$budget" ] || { echo "  over the budget"; bad=1; }
for log in env.txt summary.txt test.log product.log torch.log e2e.log ops.log; do
  [ -s "$OUT/$log" ] || { echo "  $log is missing or empty"; bad=1; }
done
grep -q 'binaries in /tmp/ablate-gpu-deps/bin' "$OUT/summary.txt" ||
  { echo "  the carried binaries did not start (see summary.txt, build.log)"; bad=1; }
grep -q '"event":"end"' "$OUT/e2e.log" ||
  { echo "  the CPU half of e2e did not end (cut at its cap? see e2e.log)"; bad=1; }
grep -q '^ok: 4 runs, every run succeeded' "$OUT/product.log" ||
  { echo "  the product phase's built-in sweep did not pass (see product.log)"; bad=1; }
files=$(find "$OUT" -type f | wc -l)
echo "  \$OUT holds $files files"
[ "$files" -le 8 ] || { echo "  more than the 8 files the tool returns"; bad=1; }
if find "$OUT" -type f -size +16M | grep -q .; then echo "  a file over 16 MiB"; bad=1; fi
if find "$OUT" -mindepth 1 | sed "s|^$OUT/||" | grep -q '[^A-Za-z0-9._/-]'; then
  echo "  a name the tool would not return"; bad=1
fi
echo
cat "$OUT/summary.txt"
[ "$bad" = 0 ] || die "the rehearsal found the problems above (logs in $OUT)"
echo "gpu_session_rehearse: ok (logs in $OUT)"
