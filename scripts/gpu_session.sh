#!/usr/bin/env bash
# The one script a session with a GPU runs. A lent GPU machine gives about 30 minutes of device
# time, at most 10 minutes per call, and goes back about 30 seconds after a call: a later call
# usually finds a bare machine. So every call is self-contained, one phase per call, each well
# inside 9 minutes on the machine's 16 cores. What to run, in which order, and what to do when a
# phase fails: bench/trainer_gpu/NOTES.md ("The plan for 30 minutes on a GPU").
#
# HERE, on the Debian machine, once per session (the device machine has CUDA, cmake, ninja, a
# compiler and PyTorch, but no Debian -dev packages and no network):
#
#   scripts/gpu_session.sh prepare     # packs .gpu-deps/ (git-ignored): the headers and libraries
#                                      # the trainer needs (nlohmann/json, CLI11, GoogleTest,
#                                      # OpenBLAS, nccl.h, libgomp), and the GPU binaries built
#                                      # here by Debian's GCC with -Werror (bin.tar.gz)
#   scripts/gpu_session.sh rehearse    # here: the device build with the Debian -dev headers and
#                                      # libraries hidden (a private mount namespace), so only the
#                                      # carried ones can be found; prints each phase's command
#
# THERE, with the device tool (`run`, carry [".gpu-deps"]), one phase per call:
#
#   bash scripts/gpu_session.sh test       # every gpu test (ops, attention, model, training,
#                                          # NCCL at world size 1), host tests; with
#                                          # ABLATE_FILTER=<gtest filter>: only those tests
#   bash scripts/gpu_session.sh torch      # r20 full: ablate's step, then PyTorch's, same GPU
#   bash scripts/gpu_session.sh bench      # r20 full step + per-op table, then r9
#   bash scripts/gpu_session.sh sanitize   # compute-sanitizer memcheck/racecheck, small shapes
#   bash scripts/gpu_session.sh e2e        # ablate-train r20 tiny, 150 steps, cuda then cpu
#   bash scripts/gpu_session.sh multi      # 2+ GPUs only: NCCL tests, 2 GPUs against 1
#
# Each phase first finds binaries: the carried ones when they start on that machine (no build:
# the phase's whole time goes to the GPU), else a build from source into build-gpu (incremental
# when the machine is still warm), with -DABLATE_WERROR=OFF: the machine's compiler may be newer
# than Debian's, and one new warning must not cost a call. Logs go to $OUT (./gpu-logs when
# unset): env.txt, build.log (when it built), and the phase's own log (at most 8 files return).
# cuBLASLt and NCCL are opened at run time; they are looked for in the CUDA toolkit and in
# PyTorch's wheels (nvidia/cu13/lib for CUDA 13, nvidia/{cublas,nccl}/lib before), and that path
# is given to ablate's binaries only: the PyTorch phase runs with the machine's own environment,
# so PyTorch loads the CUDA libraries it was built with.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-logs}
CARRY=$ROOT/.gpu-deps
DEPS_TGZ=$CARRY/deps.tar.gz
BIN_TGZ=$CARRY/bin.tar.gz
DEPS=${ABLATE_GPU_DEPS:-/tmp/ablate-gpu-deps}
BUILD=${ABLATE_GPU_BUILD:-$ROOT/build-gpu}  # override only to test the script elsewhere
JOBS=$(nproc 2>/dev/null || echo 8)
# The binaries every phase may need; the test binaries run directly (not through ctest, whose
# files hold this machine's absolute paths).
BINARIES=(ablate-train ablate-data trainer_gpu_bench tests/trainer_cuda_test
          tests/trainer_cuda_host_test tests/trainer_multi_gpu_test)
# Must match tests/trainer/CMakeLists.txt: the NCCL tests that need one GPU; the rest need two.
ONE_GPU_FILTER='*WorldSizeOne*:*OneGpu*'

die() { echo "gpu_session: $*" >&2; exit 1; }

# ---- here ----------------------------------------------------------------------------------

pack_deps() {
  local stage=$CARRY/stage multiarch=/usr/lib/x86_64-linux-gnu
  local inc=/usr/include blas_inc=/usr/include/x86_64-linux-gnu/openblas-pthread
  for p in $inc/nlohmann/json.hpp $inc/CLI/CLI.hpp $inc/gtest/gtest.h $inc/gmock/gmock.h \
           $blas_inc/cblas.h $multiarch/libopenblas.so.0 $multiarch/libgfortran.so.5 \
           $multiarch/libquadmath.so.0 $multiarch/libgomp.so.1 $multiarch/libgtest.a \
           $multiarch/libgmock.a; do
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
        $multiarch/libgomp.so.1 "$stage/lib/"
  ln -s libopenblas.so.0 "$stage/lib/libopenblas.so"
  cp $multiarch/libgtest.a $multiarch/libgtest_main.a $multiarch/libgmock.a \
     $multiarch/libgmock_main.a "$stage/lib/"
  tar czf "$DEPS_TGZ" -C "$stage" . && rm -rf "$stage"
}

# The GPU binaries, built here by the compiler the code is checked with (warnings are errors),
# against the carried libraries' names (rpath into $DEPS/lib), so the device can run them as
# they are.
pack_binaries() {
  local build=$ROOT/build-gpu-carry
  environment
  WERROR=ON BUILD=$build build_from_source || die "prepare: the GPU build failed here (build.log)"
  tar czf "$BIN_TGZ" -C "$build" "${BINARIES[@]}" || die "prepare: cannot pack the binaries"
}

prepare() {
  mkdir -p "$CARRY"
  pack_deps
  pack_binaries
  # The device gets a copy of the working tree without .git: say here what it is.
  { git -C "$ROOT" log -1 --format='%h %cd %s' --date=iso
    git -C "$ROOT" status --short -- trainer tests/trainer bench/trainer_gpu scripts; } \
    > "$CARRY/commit.txt"
  grep -qx '/.gpu-deps/' "$ROOT/.git/info/exclude" 2>/dev/null ||
    echo '/.gpu-deps/' >> "$ROOT/.git/info/exclude"
  du -ch "$CARRY"/*.tar.gz
  echo "gpu_session: packed $CARRY; carry .gpu-deps (the device tool's limit is 64 MiB in all)"
}

# The device build as the device would run it, with what Debian installed for the -dev packages
# hidden: a private mount namespace lays empty folders over those headers and libraries, so a
# header or library the pack forgot fails the build here instead of on the GPU machine.
rehearse() {
  [ -f "$DEPS_TGZ" ] || die "run 'scripts/gpu_session.sh prepare' first"
  local hide=(/usr/include/nlohmann /usr/include/CLI /usr/include/gtest /usr/include/gmock
              /usr/include/x86_64-linux-gnu/openblas-pthread /usr/lib/x86_64-linux-gnu/openblas-pthread
              /usr/lib/x86_64-linux-gnu/cmake /usr/share/cmake
              /usr/share/pkgconfig /usr/lib/x86_64-linux-gnu/pkgconfig)
  local mounts="" d
  for d in "${hide[@]}"; do [ -d "$d" ] && mounts+="mount -t tmpfs none $d && "; done
  # The deps folder is a fresh tmpfs too: the carried archive is unpacked anew, as there.
  mkdir -p "$DEPS"
  mounts+="mount -t tmpfs none $DEPS && "
  local rbuild=${ABLATE_REHEARSE_BUILD:-$ROOT/build-gpu-rehearse}
  rm -rf "$rbuild"
  local started=$SECONDS
  unshare -m --propagation private bash -c "$mounts
    for f in /usr/lib/x86_64-linux-gnu/libgtest*.a /usr/lib/x86_64-linux-gnu/libgmock*.a; do
      [ -e \"\$f\" ] && mount --bind /dev/null \"\$f\"; done
    [ ! -e /usr/include/nlohmann/json.hpp ] || exit 9
    WERROR=${WERROR:-OFF} ABLATE_GPU_BUILD=$rbuild OUT=$OUT/rehearse bash '$ROOT/scripts/gpu_session.sh' build" ||
    die "rehearse: the device build failed with only the carried dependencies ($OUT/rehearse/build.log)"
  echo "gpu_session: rehearsal build ok in $((SECONDS - started)) s on $(nproc) cores"
}

# ---- there (and in the rehearsal) ---------------------------------------------------------

# Unpacks the carried dependencies (once per machine) and finds cuBLASLt and NCCL. LIBS is the
# library path for ablate's binaries only (see `ablate`).
environment() {
  [ -f "$DEPS_TGZ" ] || die "$DEPS_TGZ is missing: run 'scripts/gpu_session.sh prepare' on the \
Debian machine first and carry .gpu-deps"
  if [ ! -f "$DEPS/include/cblas.h" ]; then
    mkdir -p "$DEPS" && tar xzf "$DEPS_TGZ" -C "$DEPS" || die "cannot unpack $DEPS_TGZ"
  fi
  LIBS=$DEPS/lib
  local d site
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && LIBS=$LIBS:$d
  done
  # PyTorch's CUDA wheels: CUDA 13 ones put every library in nvidia/cu13/lib, older ones one
  # folder per library.
  site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  for d in "$site"/nvidia/cu13/lib "$site"/nvidia/cublas/lib "$site"/nvidia/nccl/lib; do
    [ -d "$d" ] && LIBS=$LIBS:$d
  done
  [ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin  # nvcc, compute-sanitizer
  mkdir -p "$OUT"
}

# Runs one of ablate's binaries with the carried and found libraries.
ablate() { LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }

record_env() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "tree (as packed by prepare):"
    cat "$CARRY/commit.txt" 2>/dev/null
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    cmake --version 2>&1 | head -1
    c++ --version 2>&1 | head -1
    ldd --version 2>&1 | head -1
    echo "library path for ablate's binaries: $LIBS"
    # What the loader will open: the library path's folders first, then the system's cache.
    local lib found
    for lib in libcublasLt.so.13 libnccl.so.2; do
      found=$(find -H ${LIBS//:/ } -maxdepth 1 -name "$lib" 2>/dev/null | head -1)
      [ -n "$found" ] || found=$(ldconfig -p 2>/dev/null | grep -m1 "$lib " | sed 's/.*=> //')
      echo "$lib: ${found:-NOT FOUND}"
    done
  } > "$OUT/env.txt"
  cat "$OUT/env.txt"
}

build_from_source() {
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  local targets=(ablate-train ablate-data trainer_cuda_test trainer_cuda_host_test trainer_gpu_bench)
  {
    cmake -S "$ROOT/trainer" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$DEPS" -DABLATE_WERROR="${WERROR:-OFF}" \
      -DABLATE_TRAINER_NATIVE=OFF \
      -DABLATE_JSON_INCLUDE_DIR="$DEPS/include" -DABLATE_CLI11_INCLUDE_DIR="$DEPS/include" \
      -DGTEST_ROOT="$DEPS" -DGTest_ROOT="$DEPS" \
      -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$DEPS/lib -Wl,-rpath,$DEPS/lib" &&
    cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" &&
    if cmake --build "$BUILD" --target help | grep -q trainer_multi_gpu_test; then
      cmake --build "$BUILD" -j "$JOBS" --target trainer_multi_gpu_test
    else
      echo "gpu_session: no nccl.h found: the NCCL tests are not built"
    fi
  } > "$OUT/build.log" 2>&1
  local rc=$?
  tail -25 "$OUT/build.log"
  return $rc
}

# Sets BIN: the carried binaries when they start here, else a build (ABLATE_FORCE_BUILD=1 always
# builds). A phase never depends on an earlier call.
binaries() {
  if [ -z "${ABLATE_FORCE_BUILD:-}" ] && [ -f "$BIN_TGZ" ]; then
    mkdir -p "$DEPS/bin"
    [ -x "$DEPS/bin/tests/trainer_cuda_test" ] || tar xzf "$BIN_TGZ" -C "$DEPS/bin"
    if ablate "$DEPS/bin/tests/trainer_cuda_host_test" --gtest_list_tests >/dev/null 2>&1; then
      BIN=$DEPS/bin
      echo "gpu_session: using the carried binaries (built by prepare; no build)"
      return
    fi
    echo "gpu_session: the carried binaries do not start here:"
    ablate "$DEPS/bin/tests/trainer_cuda_host_test" --gtest_list_tests 2>&1 | head -3
  fi
  local started=$SECONDS
  build_from_source || die "build failed (build.log)"
  echo "gpu_session: built in $((SECONDS - started)) s"
  BIN=$BUILD
}

# gtest's XML per binary goes to $OUT/gtest-<name>.xml only for the test phase (file budget).
gtest() {
  local name=$1; shift
  echo "== $name $*"
  ablate timeout "${PHASE_TIMEOUT:-420}" "$BIN/tests/$name" "$@"
  local rc=$?
  echo "== $name exit $rc"
  return $rc
}

test_phase() {
  if [ -n "${ABLATE_FILTER:-}" ]; then  # a re-run of chosen tests only
    gtest trainer_cuda_test --gtest_filter="$ABLATE_FILTER" 2>&1 | tee "$OUT/test.log" |
      grep -E '^== |^\[  (FAILED|PASSED|SKIPPED) |Failure|drift'
    return
  fi
  {
    # The op tests first (the quickest to point at a broken kernel), then model and training.
    gtest trainer_cuda_host_test
    GTEST_OUTPUT=xml:$OUT/gtest_ops.xml gtest trainer_cuda_test \
      --gtest_filter='CudaOps.*:Masks/CudaAttention.*:CudaAttentionChoice.*:CudaOptim.*:CudaDistMuon.*'
    GTEST_OUTPUT=xml:$OUT/gtest_model.xml gtest trainer_cuda_test \
      --gtest_filter='Knobs/CudaModel.*:CudaTraining.*:CudaResume*.*'
    # Whatever the two filters above missed (a test added later), so nothing goes unrun.
    gtest trainer_cuda_test \
      --gtest_filter='-CudaOps.*:Masks/CudaAttention.*:CudaAttentionChoice.*:CudaOptim.*:CudaDistMuon.*:Knobs/CudaModel.*:CudaTraining.*:CudaResume*.*'
    if [ -x "$BIN/tests/trainer_multi_gpu_test" ]; then
      gtest trainer_multi_gpu_test --gtest_filter="$ONE_GPU_FILTER"
    fi
  } 2>&1 | tee "$OUT/test.log" | grep -E '^== |^\[  (FAILED|PASSED|SKIPPED) |Failure|drift'
}

multi_phase() {
  [ -x "$BIN/tests/trainer_multi_gpu_test" ] || die "no trainer_multi_gpu_test (no nccl.h?)"
  {
    nvidia-smi -L
    PHASE_TIMEOUT=480 gtest trainer_multi_gpu_test --gtest_filter="-$ONE_GPU_FILTER"
  } 2>&1 | tee "$OUT/multi.log" | grep -E '^== |^\[  (FAILED|PASSED|SKIPPED) |Failure|GPU'
}

# Out-of-bounds accesses and shared-memory races in the hand-written kernels, small shapes only
# (the sanitizer slows kernels 10-100x: the mid-size attention cases are left out).
sanitize_phase() {
  local bin=$BIN/tests/trainer_cuda_test
  command -v compute-sanitizer >/dev/null || { echo "no compute-sanitizer" | tee "$OUT/sanitizer.log"; return; }
  run_sanitizer() {
    local tool=$1 filter=$2
    echo "== $tool: $filter"
    ablate timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin" \
      --gtest_filter="$filter" 2>&1 | tail -30
    echo "$tool exit ${PIPESTATUS[0]}"
  }
  {
    run_sanitizer memcheck 'CudaOps.*:Masks/CudaAttention.*:CudaOptim.*:-*mid*:*RecordVocabulary*'
    run_sanitizer racecheck 'Masks/CudaAttention.*tiled64_docs_window:Masks/CudaAttention.*tiled128_docs_window'
    run_sanitizer memcheck 'Knobs/CudaModel.*r20_stack'
  } > "$OUT/sanitizer.log" 2>&1
  grep -E "^== |exit|ERROR SUMMARY" "$OUT/sanitizer.log"
}

# The r20 recipe at tiny scale on byte-level text (this repository's sources and docs, about
# 1.5 MB), 150 steps on each backend: the two loss curves side by side.
e2e_phase() {
  local data=$DEPS/e2e-data
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
      ablate timeout 200 "$BIN/ablate-train" --preset r20-sub3min --scale tiny --max-steps 150 \
        --backend $backend --threads "$JOBS" --train "$data/train_*.bin" --val "$data/val_*.bin" 2>&1 |
        grep -E '"event":"(start|val|end|error)"|step (1|50|100|150)/' | cut -c1-400
      echo "exit ${PIPESTATUS[0]}"
    done
  } > "$OUT/e2e.log" 2>&1
  grep -E "exit|val_loss|error" "$OUT/e2e.log" | cut -c1-200
}

# The same r20 step, ablate then PyTorch, on the same GPU in the same call: ms/step, tokens/s,
# MFU side by side (bench/trainer_gpu/NOTES.md, "Against PyTorch"). PyTorch is the machine's
# own (python3, or ABLATE_TORCH_PYTHON), run without ablate's library path; its step is
# torch_step_bench.py over the reference model of tests/reference/ablate_ref.py with
# flex_attention, under torch.compile.
torch_phase() {
  local py=${ABLATE_TORCH_PYTHON:-python3} cfg=$DEPS/r20-sub3min-full.json
  {
    "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
torch.cuda.get_device_name(0))' || { echo "gpu_session: no PyTorch with CUDA in $py"; exit 0; }
    ablate "$BIN/trainer_gpu_bench" --preset r20-sub3min --scale full --dump-config "$cfg" ||
      { echo "gpu_session: cannot write $cfg"; exit 0; }
    echo "== ablate: trainer_gpu_bench r20-sub3min full (one 65,536-token sequence per micro-step)"
    ablate timeout 240 "$BIN/trainer_gpu_bench" --preset r20-sub3min --scale full --steps 5 --skip-ops
    echo "exit $?"
    echo "== PyTorch: torch_step_bench.py, same config, same GPU"
    PYTHONUNBUFFERED=1 timeout 300 "$py" "$ROOT/bench/trainer_gpu/torch_step_bench.py" \
      --config "$cfg" --steps 5 --warmup 2
    echo "exit $?"
  } 2>&1 | tee "$OUT/torch.log"
}

bench_phase() {
  {
    ablate timeout 300 "$BIN/trainer_gpu_bench" --preset r20-sub3min --scale full --steps 5
    echo "exit $?"
    ablate timeout 150 "$BIN/trainer_gpu_bench" --preset r9-shortcuts --scale full --steps 3 --skip-ops
    echo "exit $?"
  } 2>&1 | tee "$OUT/bench.log"
}

usage="usage: scripts/gpu_session.sh prepare | rehearse | build | {test|torch|bench|sanitize|e2e|multi}"
[ $# -eq 1 ] || die "$usage (one phase per call)"
case $1 in
  prepare) prepare ;;
  rehearse) rehearse ;;
  build) environment && record_env >/dev/null && ABLATE_FORCE_BUILD=1 binaries ;;
  test|torch|bench|sanitize|e2e|multi)
    environment
    record_env
    binaries
    "$1_phase" ;;
  *) die "unknown phase '$1'. $usage" ;;
esac
