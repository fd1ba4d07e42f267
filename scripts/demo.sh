#!/usr/bin/env bash
# The demo: a coordinator on a free loopback port with a fresh data dir, the example tiny sweep
# submitted to it, and its expansion shown. Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${ABLATE_DEMO_DIR:-$(mktemp -d /tmp/ablate-demo.XXXXXX)}
"$BUILD/server/ablate-coordinator" --listen 127.0.0.1:0 --data-dir "$DATA" \
  --port-file "$DATA/port" >"$DATA/coordinator.log" 2>&1 &
COORD=$!
trap 'kill $COORD 2>/dev/null; wait $COORD 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$DATA/port" ] && break; sleep 0.1; done
export ABLATE_SERVER=127.0.0.1:$(cat "$DATA/port")
echo "coordinator at $ABLATE_SERVER, data in $DATA"
"$BUILD/cli/ablate" submit "$ROOT/examples/demo-tiny.yaml"
"$BUILD/cli/ablate" sweeps
"$BUILD/cli/ablate" runs --sweep 1
