#!/usr/bin/env bash
# The README's picture of the dashboard, made from the demo's data: trains the demo sweep
# (`ablate up --demo`, examples/demo-tiny.yaml) in a fresh data dir, serves that data dir again
# (`ablate up --data-dir`) on ports the OS picks, and has headless Chromium take the picture of
# the sweep's page (tests/web/picture.mjs). ctest's web.picture runs it with OUT in the build tree.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${ABLATE_BUILD_DIR:-$ROOT/build}
OUT=$ROOT/docs/img/dashboard.png
REPORT=

usage() {
  cat <<EOF
usage: scripts/dashboard_picture.sh [--report FILE] [OUT.png]

Trains the demo sweep (6 variants x 3 seeds of a tiny CPU model: about 90 s on 2 cores) in a
temporary data dir, serves it with the dashboard on a free port, and writes a 1280x960 PNG of the
sweep's page (the comparison with the baseline and the loss curves) to OUT.png (default
docs/img/dashboard.png, the README's picture). Fails, saying why, when there is no build, no
Chromium or playwright-core, when the demo fails or when the page logs an error.

  --report FILE   also write what the page showed (series, compare rows, console errors) as JSON
  -h, --help      this text

Environment: ABLATE_BUILD_DIR (default: the repo's build/), ABLATE_WEB_ROOT (default: web/).
EOF
}

fail() {
  echo "dashboard_picture.sh: $1" >&2
  [ -n "${2:-}" ] && [ -f "$2" ] && { echo "---- the end of $(basename "$2"):" >&2; tail -n 30 "$2" >&2; }
  exit 1
}

step() {
  echo "dashboard_picture.sh: $*"
}

while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --report) REPORT=${2:?--report needs a FILE}; shift 2 ;;
    -*) usage >&2; exit 2 ;;
    *) OUT=$1; shift; [ $# -eq 0 ] || { usage >&2; exit 2; } ;;
  esac
done

ABLATE=$BUILD/cli/ablate
export ABLATE_WEB_ROOT=${ABLATE_WEB_ROOT:-$ROOT/web}
PICTURE_JS=$ROOT/tests/web/picture.mjs
[ -x "$ABLATE" ] || fail "no build: $ABLATE is missing (./dev.sh build, or set ABLATE_BUILD_DIR)"
command -v node >/dev/null || fail "node is missing (./dev.sh deps installs nodejs)"
node "$PICTURE_JS" --check >/dev/null || fail "cannot start headless Chromium (./dev.sh deps)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ablate-picture.XXXXXX")
SERVER=
# Stops the dashboard's `ablate up` as Ctrl-C would, then removes the data.
cleanup() {
  if [ -n "$SERVER" ] && kill -0 "$SERVER" 2>/dev/null; then
    kill -INT "$SERVER"
    wait "$SERVER" || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT

step "training the demo sweep in $TMP/data (about 90 s on 2 cores)"
"$ABLATE" up --demo --data-dir "$TMP/data" --listen 127.0.0.1:0 --http off --gpus none \
  >"$TMP/demo.log" 2>&1 || fail "the demo failed (exit $?)" "$TMP/demo.log"
SWEEP=$(sed -n "s/^ablate up --demo: submitted sweep \([0-9]*\) .*/\1/p" "$TMP/demo.log")
[ -n "$SWEEP" ] || fail "the demo's output names no sweep" "$TMP/demo.log"
step "the demo finished: $(grep -m1 "^sweep $SWEEP '" "$TMP/demo.log" || echo "sweep $SWEEP")"

step "serving $TMP/data"
"$ABLATE" up --data-dir "$TMP/data" --listen 127.0.0.1:0 --http 127.0.0.1:0 --gpus none \
  --cpu-slots 1 >"$TMP/serve.log" 2>&1 &
SERVER=$!
URL=
for _ in $(seq 300); do
  URL=$(sed -n 's/^  dashboard: \(http:[^ ]*\)$/\1/p' "$TMP/serve.log")
  [ -n "$URL" ] && break
  kill -0 "$SERVER" 2>/dev/null || fail "ablate up --data-dir stopped" "$TMP/serve.log"
  sleep 0.1
done
[ -n "$URL" ] || fail "ablate up --data-dir printed no dashboard URL in 30 s" "$TMP/serve.log"

step "taking the picture of ${URL}sweeps/$SWEEP"
node "$PICTURE_JS" "${URL}sweeps/$SWEEP" "$OUT" ${REPORT:+"$REPORT"} || fail "no picture"

step "stopping the dashboard"
kill -INT "$SERVER"
wait "$SERVER" || fail "ablate up --data-dir exited with $? on Ctrl-C" "$TMP/serve.log"
SERVER=
step "done: $OUT"
