#!/usr/bin/env bash
# ablate-data fetch against `curl` (the baseline) on the same files from the same local HTTP
# server, in the same run. The difference is what fetch adds per shard: validation (header,
# size, every token below the vocabulary), SHA-256 for the manifest, fsync and rename.
#
#   bench/data_fetch/run.sh [BUILD_DIR] [SHARDS] [TOKENS_PER_SHARD]
#
# Defaults: build/, 3 train shards, 100M tokens (200 MB, the real FineWeb shard size).
# Needs python3 (shard generation, http.server) and curl. Writes under a temp dir.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$repo/build}
shards=${2:-3}
tokens=${3:-100000000}
tool=$build/trainer/ablate-data
[[ -x $tool ]] || { echo "no $tool (build the ablate-data target)" >&2; exit 2; }

work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/src" "$work/curl"
python3 - "$work/src" "$shards" "$tokens" <<'PY'
import random, struct, sys
out, shards, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(0)
block = struct.pack("<%dH" % (1 << 20), *(rng.randrange(50257) for _ in range(1 << 20)))
names = ["fineweb_val_000000.bin"] + ["fineweb_train_%06d.bin" % i for i in range(1, shards + 1)]
for name in names:
    with open(f"{out}/{name}", "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, tokens, *([0] * 253)))
        left = 2 * tokens
        while left > 0:  # 1M random tokens, repeated: the bytes' content does not matter here
            f.write(block[:left])
            left -= len(block)
PY

python3 -m http.server 0 --bind 127.0.0.1 --directory "$work/src" > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$work/server.log" | head -n 1)
  [[ -n $port ]] && break
  sleep 0.1
done
url=http://127.0.0.1:$port
bytes=$(cat "$work"/src/*.bin | wc -c)

now() { date +%s.%N; }
t0=$(now)
for f in "$work"/src/*.bin; do curl -sf -o "$work/curl/$(basename "$f")" "$url/$(basename "$f")"; done
t1=$(now)
"$tool" fetch fineweb10B --shards "$shards" --dest "$work/dest" --base-url "$url" > /dev/null 2>&1
t2=$(now)
sha256sum "$work"/curl/*.bin > /dev/null
t3=$(now)

python3 - "$shards" "$bytes" "$t0" "$t1" "$t2" "$t3" <<'PY'
import sys
n, b, t0, t1, t2, t3 = int(sys.argv[1]), int(sys.argv[2]), *map(float, sys.argv[3:])
mb = b / 1e6
curl, fetch, sha = t1 - t0, t2 - t1, t3 - t2
print(f"files: val + {n} train shards, {mb:.0f} MB")
print(f"curl (baseline):      {curl:6.2f} s  {mb / curl:7.0f} MB/s")
print(f"ablate-data fetch:    {fetch:6.2f} s  {mb / fetch:7.0f} MB/s  ratio {fetch / curl:.2f}x curl")
print(f"sha256sum (reference): {sha:5.2f} s  {mb / sha:7.0f} MB/s")
PY
