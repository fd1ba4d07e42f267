#!/usr/bin/env bash
# The one script a session with a GPU runs: build the trainer standalone with nvcc, run the
# `gpu` ctest label (then compute-sanitizer over the op tests), train a tiny preset end to end
# on both backends, time trainer_gpu_bench, and time the same step in PyTorch (torch.compile) on
# the same GPU in the same call. What it measures: bench/trainer_gpu/NOTES.md.
#
# The device machine has CUDA, cmake, ninja and a compiler but no Debian -dev packages and no
# network, so the headers and libraries it lacks travel with the call:
#
#   scripts/gpu_session.sh prepare        # HERE, on the Debian machine, once per session:
#                                         # packs .gpu-deps/deps.tar.gz (git-ignored): nlohmann/json,
#                                         # CLI11, GoogleTest (headers + static libs), OpenBLAS
#                                         # (cblas.h + libopenblas.so.0 and its libgfortran).
#
# Then, with the device tool (`run`, carry [".gpu-deps"]), one or more phases per call, in order:
#
#   bash scripts/gpu_session.sh build test     # configure + build into build-gpu, gpu tests,
#                                              # sanitizer, tiny end-to-end run (first call)
#   bash scripts/gpu_session.sh bench          # r20-sub3min at full scale, then r9 (second call)
#   bash scripts/gpu_session.sh torch          # r20 full: trainer_gpu_bench, then PyTorch's step
#                                              # (bench/trainer_gpu/torch_step_bench.py), same GPU
#
# build-gpu is git-ignored, so a warm machine keeps it between calls. Logs go to $OUT (the device
# tool's return folder; ./gpu-logs when unset): env.txt, build.log, ctest_gpu.log,
# gtest_gpu.xml, sanitizer.log, e2e.log, bench.log, torch.log (8 files; the tool returns at most
# 8). NCCL (runs on several GPUs): nccl.h travels in the pack; libnccl.so.2 is the machine's own
# or PyTorch's pip copy (nvidia.nccl), put on LD_LIBRARY_PATH below.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-logs}
DEPS_TGZ=$ROOT/.gpu-deps/deps.tar.gz
DEPS=/tmp/ablate-gpu-deps
BUILD=${ABLATE_GPU_BUILD:-$ROOT/build-gpu}  # override only to test the script elsewhere
JOBS=$(nproc 2>/dev/null || echo 8)

die() { echo "gpu_session: $*" >&2; exit 1; }

prepare() {
  local stage=$ROOT/.gpu-deps/stage multiarch=/usr/lib/x86_64-linux-gnu
  local inc=/usr/include blas_inc=/usr/include/x86_64-linux-gnu/openblas-pthread
  for p in $inc/nlohmann/json.hpp $inc/CLI/CLI.hpp $inc/gtest/gtest.h $inc/gmock/gmock.h \
           $blas_inc/cblas.h $multiarch/libopenblas.so.0 $multiarch/libgfortran.so.5 \
           $multiarch/libquadmath.so.0 $multiarch/libgtest.a $multiarch/libgmock.a; do
    [ -e "$p" ] || die "prepare: $p is missing (apt-get install nlohmann-json3-dev libcli11-dev \
libgtest-dev libgmock-dev libopenblas-dev)"
  done
  rm -rf "$stage" && mkdir -p "$stage/include" "$stage/lib"
  cp -r $inc/nlohmann $inc/CLI $inc/gtest $inc/gmock "$stage/include/"
  cp $blas_inc/*.h "$stage/include/"
  # NCCL's header, so that the device build compiles the multi-GPU path (the library is loaded
  # at run time from the device machine's CUDA or PyTorch).
  [ -f /usr/local/cuda/include/nccl.h ] && cp /usr/local/cuda/include/nccl.h "$stage/include/"
  cp -L $multiarch/libopenblas.so.0 $multiarch/libgfortran.so.5 $multiarch/libquadmath.so.0 \
        "$stage/lib/"
  ln -s libopenblas.so.0 "$stage/lib/libopenblas.so"
  cp $multiarch/libgtest.a $multiarch/libgtest_main.a $multiarch/libgmock.a \
     $multiarch/libgmock_main.a "$stage/lib/"
  tar czf "$DEPS_TGZ" -C "$stage" . && rm -rf "$stage"
  # The device gets a copy of the working tree without .git: say here what it is.
  { git -C "$ROOT" log -1 --format='%h %cd %s' --date=iso
    git -C "$ROOT" status --short -- trainer tests/trainer bench/trainer_gpu scripts; } \
    > "$ROOT/.gpu-deps/commit.txt"
  grep -qx '/.gpu-deps/' "$ROOT/.git/info/exclude" 2>/dev/null ||
    echo '/.gpu-deps/' >> "$ROOT/.git/info/exclude"
  echo "gpu_session: packed $(du -h "$DEPS_TGZ" | cut -f1) into $DEPS_TGZ; carry .gpu-deps"
}

# Unpacks the carried dependencies (once per machine) and points the loader at them, and at
# cuBLASLt wherever this machine keeps it.
environment() {
  [ -f "$DEPS_TGZ" ] || die "$DEPS_TGZ is missing: run 'scripts/gpu_session.sh prepare' on the \
Debian machine first and carry .gpu-deps"
  if [ ! -f "$DEPS/include/cblas.h" ]; then
    mkdir -p "$DEPS" && tar xzf "$DEPS_TGZ" -C "$DEPS" || die "cannot unpack $DEPS_TGZ"
  fi
  local extra=$DEPS/lib
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && extra=$extra:$d
  done
  local pip_cublas
  pip_cublas=$(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null)
  [ -n "$pip_cublas" ] && [ -d "$pip_cublas" ] && extra=$extra:$pip_cublas
  local pip_nccl
  pip_nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + "/lib")' 2>/dev/null)
  [ -n "$pip_nccl" ] && [ -d "$pip_nccl" ] && extra=$extra:$pip_nccl
  export LD_LIBRARY_PATH=$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  [ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin  # nvcc, compute-sanitizer
  mkdir -p "$OUT"
}

record_env() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "tree (as packed by prepare):"
    cat "$ROOT/.gpu-deps/commit.txt" 2>/dev/null
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    cmake --version 2>&1 | head -1
    c++ --version 2>&1 | head -1
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  } > "$OUT/env.txt"
  cat "$OUT/env.txt"
}

build() {
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  {
    cmake -S "$ROOT/trainer" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$DEPS" \
      -DABLATE_JSON_INCLUDE_DIR="$DEPS/include" -DABLATE_CLI11_INCLUDE_DIR="$DEPS/include" \
      -DGTEST_ROOT="$DEPS" -DGTest_ROOT="$DEPS" \
      -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$DEPS/lib -Wl,-rpath,$DEPS/lib" &&
    cmake --build "$BUILD" -j "$JOBS" --target ablate-train ablate-data trainer_cuda_test \
      trainer_cuda_host_test trainer_gpu_bench &&
    if cmake --build "$BUILD" --target help | grep -q trainer_multi_gpu_test; then
      cmake --build "$BUILD" -j "$JOBS" --target trainer_multi_gpu_test
    else
      echo "gpu_session: no nccl.h found: the NCCL tests are not built"
    fi
  } 2>&1 | tee "$OUT/build.log" | tail -25
  [ "${PIPESTATUS[0]}" -eq 0 ] || die "build failed (build.log)"
}

test_phase() {
  [ -x "$BUILD/tests/trainer_cuda_test" ] || die "no build in $BUILD: run the build phase first"
  # GTEST_OUTPUT makes each gpu test binary also write every test's result and time as XML
  # (one file per binary, joined into gtest_gpu.xml to stay within the tool's 8 files).
  rm -rf "$BUILD/gtest-xml"
  (cd "$BUILD" && GTEST_OUTPUT="xml:$BUILD/gtest-xml/" ctest -L gpu --output-on-failure \
     --timeout 900; ctest -R trainer_cuda_host_test --output-on-failure) 2>&1 |
    tee "$OUT/ctest_gpu.log" | tail -40
  cat "$BUILD"/gtest-xml/*.xml > "$OUT/gtest_gpu.xml" 2>/dev/null
  sanitize
  end_to_end
}

# Out-of-bounds accesses and shared-memory races in the hand-written kernels (small shapes).
sanitize() {
  local bin=$BUILD/tests/trainer_cuda_test
  command -v compute-sanitizer >/dev/null || { echo "no compute-sanitizer" > "$OUT/sanitizer.log"; return; }
  {
    echo "== memcheck: ops, attention, optimizers"
    compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" \
      --gtest_filter='CudaOps.*:Masks/CudaAttention.*:CudaOptim.*' 2>&1 | tail -30
    echo "memcheck exit ${PIPESTATUS[0]}"
    echo "== racecheck: tiled attention"
    compute-sanitizer --tool racecheck --error-exitcode 9 "$bin" \
      --gtest_filter='Masks/CudaAttention.*tiled64_docs_window:Masks/CudaAttention.*tiled128_docs_window' 2>&1 | tail -30
    echo "racecheck exit ${PIPESTATUS[0]}"
    echo "== memcheck: one whole model"
    compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" \
      --gtest_filter='Knobs/CudaModel.*r20_stack' 2>&1 | tail -20
    echo "memcheck exit ${PIPESTATUS[0]}"
  } > "$OUT/sanitizer.log" 2>&1
  grep -E "exit|ERROR SUMMARY" "$OUT/sanitizer.log"
}

# The r20 recipe at tiny scale on byte-level text (this repository's sources and docs, about
# 1.5 MB), 150 steps on each backend: the two loss curves side by side.
end_to_end() {
  local data=$BUILD/e2e-data
  mkdir -p "$data"
  python3 - "$ROOT" "$data" <<'PY' || { echo "gpu_session: cannot write shards" >&2; return; }
import glob, os, struct, sys
root, out = sys.argv[1], sys.argv[2]
tokens = []
paths = []
for ext in ("md", "cc", "h", "cu", "proto", "sh", "py"):
    paths += glob.glob(os.path.join(root, "**", "*." + ext), recursive=True)
for path in sorted(paths):
    if any(skip in path for skip in ("/build", "/.gpu-deps", "/node_modules", "/.git/")):
        continue
    tokens.append(256)  # BOS opens each document (byte-level vocabulary of `ablate-data encode`)
    tokens.extend(open(path, "rb").read())
def write(name, toks):
    header = [20240520, 1, len(toks)] + [0] * 253
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%dH" % len(toks), *toks))
split = len(tokens) * 9 // 10
write("train_000.bin", tokens[:split])
write("val_000.bin", tokens[split:])
PY
  {
    for backend in cuda cpu; do
      echo "== ablate-train r20-sub3min tiny, --backend $backend, 150 steps"
      "$BUILD/ablate-train" --preset r20-sub3min --scale tiny --max-steps 150 --backend $backend --threads "$JOBS" \
        --train "$data/train_*.bin" --val "$data/val_*.bin" 2>&1 |
        grep -E '"event":"(start|val|end|error)"|step (1|50|100|150)/' | cut -c1-400
      echo "exit ${PIPESTATUS[0]}"
    done
  } > "$OUT/e2e.log" 2>&1
  grep -E "exit|val_loss|error" "$OUT/e2e.log" | cut -c1-200
}

# The same r20 step, ablate then PyTorch, on the same GPU in the same call: ms/step, tokens/s,
# MFU side by side (bench/trainer_gpu/NOTES.md, "Against PyTorch"). PyTorch is the machine's
# own (python3, or ABLATE_TORCH_PYTHON); its step is torch_step_bench.py over the reference
# model of tests/reference/ablate_ref.py with flex_attention, under torch.compile.
torch_phase() {
  [ -x "$BUILD/trainer_gpu_bench" ] || die "no build in $BUILD: run the build phase first"
  local py=${ABLATE_TORCH_PYTHON:-python3} cfg=$BUILD/r20-sub3min-full.json
  {
    "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
torch.cuda.get_device_name(0))' || { echo "gpu_session: no PyTorch with CUDA in $py"; exit 0; }
    "$BUILD/trainer_gpu_bench" --preset r20-sub3min --scale full --dump-config "$cfg" ||
      { echo "gpu_session: cannot write $cfg"; exit 0; }
    echo "== ablate: trainer_gpu_bench r20-sub3min full (one 65,536-token sequence per micro-step)"
    "$BUILD/trainer_gpu_bench" --preset r20-sub3min --scale full --steps 5 --skip-ops
    echo "exit $?"
    echo "== PyTorch: torch_step_bench.py, same config, same GPU"
    "$py" "$ROOT/bench/trainer_gpu/torch_step_bench.py" --config "$cfg" --steps 5 --warmup 2
    echo "exit $?"
  } 2>&1 | tee "$OUT/torch.log"
}

bench() {
  [ -x "$BUILD/trainer_gpu_bench" ] || die "no build in $BUILD: run the build phase first"
  {
    "$BUILD/trainer_gpu_bench" --preset r20-sub3min --scale full --steps 5
    echo "exit $?"
    "$BUILD/trainer_gpu_bench" --preset r9-shortcuts --scale full --steps 3 --skip-ops
    echo "exit $?"
  } 2>&1 | tee "$OUT/bench.log"
}

[ $# -ge 1 ] || die "usage: scripts/gpu_session.sh prepare | {build|test|bench|torch|all}..."
if [ "$1" = prepare ]; then
  prepare
  exit
fi
environment
record_env
for phase in "$@"; do
  case $phase in
    build) build ;;
    test) test_phase ;;
    bench) bench ;;
    torch) torch_phase ;;
    all) build && test_phase && bench && torch_phase ;;
    *) die "unknown phase '$phase' (prepare, build, test, bench, torch, all)" ;;
  esac
done
