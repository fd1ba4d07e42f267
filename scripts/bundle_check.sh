#!/bin/bash
# What scripts/test_bundle.sh and scripts/test_image.sh run inside their root filesystem (in a
# chroot, as root): every program of the bundle in ABLATE_DIR starts; a coordinator with its
# dashboard and a worker run a 4-run CPU sweep, which is read back; the worker's preflight passes.
#   /bundle_check.sh ABLATE_DIR
set -euo pipefail
A=${1:?usage: bundle_check.sh ABLATE_DIR}/bin
echo "inside: $(ldd --version | head -1); the system's libstdc++:" \
  "$(ls /usr/lib/x86_64-linux-gnu/libstdc++.so.6.* 2>/dev/null || echo none)"
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
succeeded=$("$A/ablate" --json runs --sweep 1 | { grep -o '"RUN_SUCCEEDED"' || true; } | wc -l)
[ "$succeeded" -eq 4 ] || { echo "FAIL: $succeeded of 4 runs succeeded"; exit 1; }
"$A/ablate" compare 1 | head -4
"$A/ablate-worker" --check --gpus none --work-dir /srv/work --data-dir /srv/data
echo "bundle test passed"
