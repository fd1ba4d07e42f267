#!/usr/bin/env bash
# Fuzzes ablate's parsers with libFuzzer (tests/fuzz/*_fuzz.cc). Builds the fuzz_* binaries with
# clang (ASan + UBSan, coverage instrumentation) in build-fuzz/, then runs each target for MINUTES
# minutes under `nice -n 19`, JOBS targets at a time, starting from the committed seeds in
# tests/fuzz/corpus/NAME. Inputs that add coverage go to build-fuzz/corpus/NAME, crashes, hangs
# and sanitizer reports to build-fuzz/crashes/NAME/ (copy each into tests/fuzz/corpus/NAME once it
# is fixed: ctest replays that folder on every CI run). Each target's last stats line (execs/s,
# coverage) is printed at the end and kept in build-fuzz/logs/NAME.log.
#   bench/fuzz/run.sh [minutes=10] [jobs=2] [target ...]     (default: every target)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
MINUTES=${1:-10}
JOBS=${2:-2}
shift 2 || shift $# || true
BUILD=${ABLATE_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=($(ls tests/fuzz/*_fuzz.cc | sed 's|.*/||; s|_fuzz\.cc$||'))
fi

# CUDA off: nvcc does not take clang's sanitizer flags, and no parser is CUDA code.
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DABLATE_FUZZ=ON -DCMAKE_CUDA_COMPILER=NOTFOUND >/dev/null
nice -n 19 cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]/#/fuzz_}"

mkdir -p "$BUILD/logs"
fuzz_one() {
  local name=$1
  mkdir -p "$BUILD/corpus/$name" "$BUILD/crashes/$name"
  nice -n 19 "$BUILD/tests/fuzz/fuzz_$name" -max_total_time=$((MINUTES * 60)) -timeout=60 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$BUILD/crashes/$name/" \
    "$BUILD/corpus/$name" "$ROOT/tests/fuzz/corpus/$name" >"$BUILD/logs/$name.log" 2>&1 || true
}
running=0
for t in "${TARGETS[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

for t in "${TARGETS[@]}"; do
  last=$(grep -E '^#[0-9]+' "$BUILD/logs/$t.log" | tail -1)
  execs=$(grep -E 'stat::number_of_executed_units' "$BUILD/logs/$t.log" | awk '{print $2}')
  rate=$(grep -E 'stat::average_exec_per_sec' "$BUILD/logs/$t.log" | awk '{print $2}')
  found=$(ls "$BUILD/crashes/$t" | wc -l)
  echo "$t: ${execs:-?} execs, ${rate:-?}/s, findings: $found | $last"
done
