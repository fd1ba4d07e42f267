#!/usr/bin/env bash
# The demo: `ablate up` (coordinator + local CPU worker) on a free loopback port with a fresh
# data dir, the Debian-text dataset encoded from the fortunes package, and the five seed
# ablations of examples/demo-tiny.yaml (tiny scale, 2 seeds each) trained to the end. Prints
# each run's final val loss and time-to-target.  Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${ABLATE_DEMO_DIR:-$(mktemp -d /tmp/ablate-demo.XXXXXX)}
ABLATE="$BUILD/cli/ablate"

echo "== dataset: Debian fortunes as byte-level shards"
ABLATE_DATA="$BUILD/trainer/ablate-data" "$ROOT/tests/data/make_debian_text.sh" \
  "$DATA/datasets/debian-text" | tail -n 1

echo "== ablate up (data in $DATA)"
"$ABLATE" up --data-dir "$DATA" --listen 127.0.0.1:0 --cpu-slots "$(nproc)" --gpus none &
UP=$!
trap 'kill -TERM $UP 2>/dev/null; wait $UP 2>/dev/null || true' EXIT
for _ in $(seq 300); do [ -s "$DATA/server" ] && break; sleep 0.1; done
export ABLATE_SERVER=$(cat "$DATA/server")

echo "== submit examples/demo-tiny.yaml"
"$ABLATE" submit "$ROOT/examples/demo-tiny.yaml"
SWEEP=$("$ABLATE" --json sweeps --limit 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sweeps"][0]["id"])')

echo "== training (each line is a run changing state)"
"$ABLATE" watch "$SWEEP" | grep --line-buffered -E "^  run|succeeded|failed" || true

echo "== results: final val loss and time to target per run"
"$ABLATE" runs --sweep "$SWEEP"
echo
echo "Everything above is stored in $DATA/ablate.db. Explore with:"
echo "  export ABLATE_SERVER=$ABLATE_SERVER; $ABLATE sweep $SWEEP"
