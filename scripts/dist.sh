#!/usr/bin/env bash
# The self-contained bundle (DESIGN §10, issue 25): ablate-VERSION-linux-x86_64.tar.gz with the five
# programs and every shared library they need but the NVIDIA driver's, the dashboard's files and
# the examples. It runs on x86-64 Linux whatever its C library (glibc 2.17 and newer, kernel 3.2+):
# the bundle carries the build machine's glibc and its loader, and each program is started
# through that loader (bin/NAME is a two-line sh script), so nothing has to be rebuilt for old
# systems. The NVIDIA driver (libcuda), cuBLASLt and NCCL are the node's own, found as a normal
# program finds them (LD_LIBRARY_PATH, ldconfig's cache); see `ablate-worker --check`.
#   scripts/dist.sh BUILD_DIR [OUT_DIR]     (OUT_DIR default: BUILD_DIR/dist)
# Layout:
#   bin/ablate, bin/ablate-coordinator, ...   start scripts; bin/ld-linux-x86-64.so.2 the loader
#   libexec/ablate*                          the programs (RPATH $ORIGIN/../lib)
#   lib/                                     glibc, libstdc++, gRPC, protobuf, abseil, OpenSSL, OpenBLAS, ...
#   share/ablate/web, share/ablate/examples  the dashboard (with uPlot) and the sweep examples
#   share/ablate/README.md, share/ablate/docs  the README and its guide
set -euo pipefail
ROOT=$(cd -P "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: scripts/dist.sh BUILD_DIR [OUT_DIR]}" && pwd)
OUT=${2:-$BUILD/dist}
VERSION=$(sed -n 's/^set(ABLATE_VERSION \([0-9.]*\))/\1/p' "$ROOT/cmake/AblateCommon.cmake")
NAME=ablate-$VERSION-linux-x86_64
PROGRAMS=(ablate:cli ablate-coordinator:server ablate-worker:worker ablate-train:trainer
          ablate-data:trainer)
LOADER=ld-linux-x86-64.so.2

command -v patchelf >/dev/null || { echo "dist.sh: needs patchelf (apt-get install patchelf)" >&2; exit 1; }
[ -f "$ROOT/web/node_modules/uplot/dist/uPlot.esm.js" ] ||
  { echo "dist.sh: web/node_modules has no uPlot; run ./dev.sh deps first" >&2; exit 1; }

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/$NAME
mkdir -p "$B/bin" "$B/libexec" "$B/lib" "$B/share/ablate/examples"

# The shared libraries a file needs, as ldd resolves them on this machine (path per line).
needed() { ldd "$1" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}'; }

for entry in "${PROGRAMS[@]}"; do
  prog=${entry%%:*}
  src=$BUILD/${entry#*:}/$prog
  [ -x "$src" ] || { echo "dist.sh: $src is not built" >&2; exit 1; }
  install -m 0755 "$src" "$B/libexec/$prog"
  strip --strip-unneeded "$B/libexec/$prog"
  # DT_RPATH (not RUNPATH): it also covers the libraries' own dependencies and what they dlopen.
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$B/libexec/$prog"
  for lib in $(needed "$src"); do
    [ -e "$B/lib/$(basename "$lib")" ] || cp -L "$lib" "$B/lib/$(basename "$lib")"
  done
  cat > "$B/bin/$prog" <<EOF
#!/bin/sh
# Runs libexec/$prog with this bundle's own loader and libraries (scripts/dist.sh).
here=\$(dirname "\$(readlink -f "\$0")")
exec "\$here/$LOADER" --library-path "\$here/../lib" "\$here/../libexec/$prog" "\$@"
EOF
  chmod 0755 "$B/bin/$prog"
done
# All of glibc, not only what ldd named: a library the node's driver or a plugin loads later
# (libdl, librt, libresolv, NSS modules) must come from the same glibc as the loader.
for lib in $(dpkg -L libc6 | grep -E '^/lib/x86_64-linux-gnu/[^/]+\.so[.0-9]*$'); do
  [ -e "$B/lib/$(basename "$lib")" ] || cp -L "$lib" "$B/lib/"
done
mv "$B/lib/$LOADER" "$B/bin/$LOADER"
chmod 0755 "$B/bin/$LOADER"
chmod 0644 "$B"/lib/*

# The dashboard: its pages and uPlot alone from node_modules (not the test tools).
mkdir -p "$B/share/ablate/web/node_modules/uplot"
cp -r "$ROOT/web/static" "$B/share/ablate/web/static"
cp -r "$ROOT/web/node_modules/uplot/dist" "$B/share/ablate/web/node_modules/uplot/dist"
[ ! -f "$ROOT/web/node_modules/uplot/LICENSE" ] ||
  cp "$ROOT/web/node_modules/uplot/LICENSE" "$B/share/ablate/web/node_modules/uplot/"
cp "$ROOT"/examples/*.yaml "$B/share/ablate/examples/"
mkdir -p "$B/share/ablate/docs"
cp "$ROOT"/README.md "$B/share/ablate/"
cp -r "$ROOT"/docs/. "$B/share/ablate/docs/"
# For which processors the trainer's CPU kernels were compiled: a bundle for other machines must
# not say "native" (scripts/gpu_session.sh prepare refuses to carry such a bundle to a GPU node).
march=$(sed -n 's/^ABLATE_TRAINER_MARCH:STRING=//p' "$BUILD/CMakeCache.txt")
grep -q '^ABLATE_TRAINER_NATIVE:BOOL=OFF' "$BUILD/CMakeCache.txt" && march=generic
printf 'version: %s\ntrainer_march: %s\n' "$VERSION" "${march:-native}" > "$B/share/ablate/BUILD"
glibc=$(dpkg-query -W -f='${Version}' libc6)
cat > "$B/README" <<EOF
ablate $VERSION for x86-64 Linux (glibc 2.17 or newer; it brings its own glibc $glibc).
bin/ablate up            a coordinator, its dashboard and a local worker on this machine
bin/ablate-worker --check   is this node ready (GPUs, driver, cuBLASLt, NCCL, folders)?
The NVIDIA driver, cuBLASLt and NCCL are the node's own (LD_LIBRARY_PATH or ldconfig).
Examples: share/ablate/examples. The guide: share/ablate/README.md and share/ablate/docs.
EOF

mkdir -p "$OUT"
tar -C "$STAGE" --owner=0 --group=0 -czf "$OUT/$NAME.tar.gz" "$NAME"
echo "$OUT/$NAME.tar.gz"
