#!/usr/bin/env bash
# The demo: `ablate up --demo` — a coordinator and a local CPU worker, the Debian-text dataset
# (encoded once from the fortunes package and cached), and the five seed ablations of
# examples/demo-tiny.yaml at tiny scale with 3 seeds each, trained to the end. Prints the web
# dashboard's URL (127.0.0.1:8080, or a free port when 8080 is taken) to watch the curves live,
# then each run's final val loss and time-to-target and the `ablate compare` table, then stops.
#   scripts/demo.sh BUILD_DIR      (data in $ABLATE_DEMO_DIR, default ~/.local/share/ablate-demo)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DATA=${ABLATE_DEMO_DIR:-$HOME/.local/share/ablate-demo}
exec "$BUILD/cli/ablate" up --demo --data-dir "$DATA" --listen 127.0.0.1:0 --gpus none
