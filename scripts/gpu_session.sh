#!/usr/bin/env bash
# The one script a session with a GPU runs. A lent GPU machine gives 15 minutes of device time in
# all (every call, start and idle wait included), at most 10 minutes per call; it goes back about
# 30 seconds after a call and no machine is started with less than 4 minutes left. So the first
# call is `all`: one self-contained run of at most 9 minutes on binaries built here and carried,
# every phase under its own time cap, each phase's log written to $OUT as it runs. What to run,
# in which order, and what to do when a call fails part-way: bench/trainer_gpu/NOTES.md ("The plan
# for 15 minutes on a GPU").
#
# HERE, on the Debian machine, once per session (the device machine has CUDA, cmake, ninja, a
# compiler and PyTorch, but no Debian -dev packages, no OpenBLAS and no network):
#
#   scripts/gpu_session.sh prepare     # packs .gpu-deps/ (git-ignored): deps.tar.gz (lib/: the
#                                      # shared libraries the binaries need and the device lacks,
#                                      # OpenBLAS, libgfortran, libquadmath, libgomp, libcrypto; include/ and
#                                      # the GoogleTest archives for a rebuild there) and
#                                      # bin.tar.gz (the GPU binaries, built with -Werror and
#                                      # without -march=native); then `check`
#                                      # ABLATE_CARRY_BUILD=build: pack that build's binaries
#                                      # instead of building the trainer alone (it must have been
#                                      # configured with -DABLATE_TRAINER_NATIVE=OFF or a
#                                      # -DABLATE_TRAINER_MARCH other than native); and
#                                      # bundle.tar.gz, the newest dist/ bundle (./dev.sh dist;
#                                      # ABLATE_CARRY_BUNDLE=FILE), for the product phase
#   scripts/gpu_session.sh check       # the packed binaries' needs against the device: each
#                                      # NEEDED library carried or in the base system, no glibc or
#                                      # libstdc++ symbol version newer than Ubuntu 24.04's
#   scripts/gpu_session.sh caps        # the phase caps of `all` and their sum against the budget
#   scripts/gpu_session_rehearse.sh    # `all` in a Debian minbase root file system (no -dev
#                                      # packages, no OpenBLAS): every phase's command line runs,
#                                      # the GPU parts say "no CUDA device"
#   scripts/gpu_session.sh rehearse    # the device's fallback build with Debian's -dev headers
#                                      # and libraries hidden (a private mount namespace)
#
# THERE, with the device tool (`run`, carry [".gpu-deps"]):
#
#   bash scripts/gpu_session.sh all        # the first call (timeout_s 570): test, product (the
#                                          # bundle's `ablate up` on the GPU: worker --check, a
#                                          # built-in CUDA sweep and a torchrun script sweep),
#                                          # torch (ablate's step with tiled, then mma attention,
#                                          # then PyTorch's), e2e, ops, in that order, each under
#                                          # its cap (`caps`); $OUT: env.txt, test.log,
#                                          # product.log, torch.log, e2e.log, ops.log,
#                                          # summary.txt (+ build.log if it built)
#   bash scripts/gpu_session.sh sanitize   # a second call, only if time is left: memcheck and
#                                          # racecheck, small shapes
#   ABLATE_FORCE_BUILD=1 bash scripts/gpu_session.sh test   # a rebuild from source there, then
#                                          # the gpu tests (second call, only if time is left)
#   One phase alone (a re-run): test (ABLATE_FILTER=<gtest filter>: only those tests), product
#   (ABLATE_BUNDLE=<bundle .tar.gz> to use another; the ctest gpu_session_product runs it here
#   on the CPU), torch, e2e, ops, bench (the r20 step with the per-op table, then r9), multi (2+ GPUs only).
#
# Each call first finds binaries: the carried ones when they start on that machine (no build:
# the time goes to the GPU), else a build from source into build-gpu with -DABLATE_WERROR=OFF
# (the machine's compiler may be newer than Debian's, and one new warning must not cost a call);
# in `all` that build counts against the budget and the later phases get what is left.
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
BUNDLE_TGZ=$CARRY/bundle.tar.gz  # the product phase's: scripts/dist.sh's bundle
DEPS=${ABLATE_GPU_DEPS:-/tmp/ablate-gpu-deps}
BUILD=${ABLATE_GPU_BUILD:-$ROOT/build-gpu}  # override only to test the script elsewhere
JOBS=$(nproc 2>/dev/null || echo 8)
# The binaries every phase may need; the test binaries run directly (not through ctest, whose
# files hold this machine's absolute paths). Not ablate-data: it links libcurl and OpenSSL,
# which the device may lack, and no phase needs it (e2e writes its shards with python3).
BINARIES=(ablate-train trainer_gpu_bench tests/trainer_cuda_test tests/trainer_cuda_host_test
          tests/trainer_multi_gpu_test)
# Must match tests/trainer/CMakeLists.txt: the NCCL tests that need one GPU; the rest need two.
ONE_GPU_FILTER='*WorldSizeOne*:*OneGpu*'
MMA_FILTER='*mma*:*Mma*'  # every test of the mma attention kernels (names say so)

# ---- time caps (seconds) -------------------------------------------------------------------
# `all` runs in at most BUDGET seconds: the device call's timeout_s is BUDGET + 30 (the tool's
# transfers), so 540 leaves the 15-minute lease ~4 minutes after a 1-2 minute start for a second
# call on the still-warm machine. Each phase of `all` runs under its cap (timeout kills the whole
# phase), and its runs under sub-caps that add up to 5 s less (the phase's own work). `caps`
# prints them and checks the sums; gpu_session_rehearse.sh runs it.
BUDGET=${ABLATE_ALL_BUDGET:-540}
CAP_SETUP=20                 # unpack, env.txt, do the carried binaries start (the rest of setup)
CAP_TEST=120                 # (1) the gpu label: op tests, then model and training tests
CAP_TEST_HOST=5              #     trainer_cuda_host_test
CAP_TEST_OPS=35              #     CudaOps, attention masks and choice, optimizer, dist. Muon
CAP_TEST_MODEL=42            #     the knob cases, trajectory against the CPU, resume
CAP_TEST_REST=8              #     whatever a later test adds (no filter above matches it)
CAP_TEST_NCCL=8              #     trainer_multi_gpu_test at world size 1
CAP_TEST_MMA=17              #     the mma attention kernels' tests, last and on their own
CAP_PRODUCT=100              # (2) the bundle's ablate up on the GPU: check, two sweeps, compare
CAP_PRODUCT_CHECK=10         #     ablate-worker --check; ablate-data encode (each)
CAP_PRODUCT_BUILTIN=30       #     r20 tiny on CUDA, 2 variants x 2 seeds, 150 steps
CAP_PRODUCT_SCRIPT=45        #     train_cuda.py under torchrun, 2 x 2 (torch's start each run)
CAP_TORCH=215                # (3) r20 full step: ablate's (tiled, then mma attention), then
                             #     PyTorch's (torch.compile)
CAP_TORCH_TILED=40           #     trainer_gpu_bench --skip-ops --attention tiled: 2 warm-up +
                             #     2 x 4 steps (2026-11-27: ~2.2 s a step)
CAP_TORCH_MMA=45             #     the same, --attention mma (never timed before: a little more)
CAP_TORCH_PYTORCH=125        #     torch_step_bench.py: compile (101.5 s on 2026-11-27) + 1
                             #     warm-up + 4 steps
CAP_E2E=35                   # (4) ablate-train r20 tiny, 150 steps
CAP_E2E_CUDA=10              #     --backend cuda (2026-11-27: 0.44 s of training)
CAP_E2E_CPU=20               #     --backend cpu (16 cores there)
CAP_OPS=50                   # (5) the per-op table at r20 full (no step)
CAP_OPS_RUN=45
# Outside `all` (second call or by hand): each run's cap.
CAP_SANITIZE_RUN=${ABLATE_SANITIZE_CAP:-150}
CAP_BUILD=${ABLATE_BUILD_CAP:-420}

die() { echo "gpu_session: $*" >&2; exit 1; }

# A cap in seconds, cut to what is left of the current phase of `all` (ABLATE_PHASE_END, epoch
# seconds; none outside `all`), so that no run outlives its phase.
clip() {
  local cap=$1 left
  if [ -n "${ABLATE_PHASE_END:-}" ]; then
    left=$((ABLATE_PHASE_END - $(date +%s) - 2))
    [ "$left" -lt "$cap" ] && cap=$left
    [ "$cap" -lt 1 ] && cap=1
  fi
  echo "$cap"
}

# ---- here ----------------------------------------------------------------------------------

pack_deps() {
  local stage=$CARRY/stage multiarch=/usr/lib/x86_64-linux-gnu
  local inc=/usr/include blas_inc=/usr/include/x86_64-linux-gnu/openblas-pthread
  for p in $inc/nlohmann/json.hpp $inc/CLI/CLI.hpp $inc/gtest/gtest.h $inc/gmock/gmock.h \
           $blas_inc/cblas.h $multiarch/libopenblas.so.0 $multiarch/libgfortran.so.5 \
           $multiarch/libquadmath.so.0 $multiarch/libgomp.so.1 $multiarch/libcrypto.so.3 \
           $multiarch/libgtest.a $multiarch/libgmock.a; do
    [ -e "$p" ] || die "prepare: $p is missing (apt-get install nlohmann-json3-dev libcli11-dev \
libgtest-dev libgmock-dev libopenblas-dev libssl-dev)"
  done
  rm -rf "$stage" && mkdir -p "$stage/include" "$stage/lib"
  cp -r $inc/nlohmann $inc/CLI $inc/gtest $inc/gmock "$stage/include/"
  cp $blas_inc/*.h "$stage/include/"
  # NCCL's header, so that the device build compiles the multi-GPU path (the library is loaded
  # at run time from the device machine's CUDA or PyTorch).
  [ -f /usr/local/cuda/include/nccl.h ] && cp /usr/local/cuda/include/nccl.h "$stage/include/"
  # libcrypto: the shard checksums (trainer/CMakeLists.txt links OpenSSL's when it is found).
  cp -L $multiarch/libopenblas.so.0 $multiarch/libgfortran.so.5 $multiarch/libquadmath.so.0 \
        $multiarch/libgomp.so.1 $multiarch/libcrypto.so.3 "$stage/lib/"
  ln -s libopenblas.so.0 "$stage/lib/libopenblas.so"
  cp $multiarch/libgtest.a $multiarch/libgtest_main.a $multiarch/libgmock.a \
     $multiarch/libgmock_main.a "$stage/lib/"
  tar czf "$DEPS_TGZ" -C "$stage" . && rm -rf "$stage"
}

# The GPU binaries, built here by the compiler the code is checked with (warnings are errors),
# against the carried libraries' names (rpath into $DEPS/lib), so the device can run them as
# they are.
# ABLATE_CARRY_BUILD=<dir>: take the binaries of that (top-level or trainer-only) build instead;
# it must have CUDA and -DABLATE_TRAINER_NATIVE=OFF (-march=native code may not run on the
# device's processor).
pack_binaries() {
  local build=$ROOT/build-gpu-carry
  if [ -n "${ABLATE_CARRY_BUILD:-}" ]; then
    build=$(cd "$ABLATE_CARRY_BUILD" && pwd) || die "prepare: no build folder $ABLATE_CARRY_BUILD"
    grep -q '^ABLATE_TRAINER_NATIVE:BOOL=OFF' "$build/CMakeCache.txt" ||
      ! grep -q '^ABLATE_TRAINER_MARCH:STRING=native' "$build/CMakeCache.txt" ||
      die "prepare: $build compiles for -march=native (configure it with -DABLATE_TRAINER_NATIVE=OFF \
or -DABLATE_TRAINER_MARCH=x86-64-v3, as ./dev.sh dist does)"
    local stage=$CARRY/bin-stage b found
    rm -rf "$stage" && mkdir -p "$stage/tests"
    for b in "${BINARIES[@]}"; do
      found=$(find "$build" -name "$(basename "$b")" -type f -perm -u+x 2>/dev/null | head -1)
      [ -n "$found" ] || die "prepare: $build has no $(basename "$b") (build it first)"
      cp "$found" "$stage/$b"
    done
    tar czf "$BIN_TGZ" -C "$stage" "${BINARIES[@]}" || die "prepare: cannot pack the binaries"
    rm -rf "$stage"
    return
  fi
  environment
  CAP_BUILD=36000 WERROR=ON BUILD=$build build_from_source ||
    die "prepare: the GPU build failed here (build.log)"
  tar czf "$BIN_TGZ" -C "$build" "${BINARIES[@]}" || die "prepare: cannot pack the binaries"
}

# The product phase's bundle: ABLATE_CARRY_BUNDLE, else the newest of dist/ (./dev.sh dist). Its
# trainer must not be compiled for this machine's processor alone.
pack_bundle() {
  local tgz=${ABLATE_CARRY_BUNDLE:-} march
  [ -n "$tgz" ] || tgz=$(ls -t "$ROOT"/dist/ablate-*-linux-x86_64.tar.gz 2>/dev/null | head -1)
  [ -f "$tgz" ] || die "prepare: no bundle in dist/ (run ./dev.sh dist, or set ABLATE_CARRY_BUNDLE)"
  march=$(tar xzf "$tgz" --wildcards --to-stdout '*/share/ablate/BUILD' 2>/dev/null |
          sed -n 's/^trainer_march: //p')
  [ -n "$march" ] || die "prepare: $tgz says nothing of its trainer's -march (made by an older dist.sh?)"
  [ "$march" != native ] || [ -n "${ABLATE_CARRY_NATIVE_BUNDLE:-}" ] ||
    die "prepare: $tgz has a trainer for -march=native; ./dev.sh dist makes one for x86-64-v3"
  cp "$tgz" "$BUNDLE_TGZ"
  echo "gpu_session: bundle $(basename "$tgz") (trainer -march=$march)"
}

prepare() {
  mkdir -p "$CARRY"
  pack_deps
  pack_binaries
  pack_bundle
  # The device gets a copy of the working tree without .git: say here what it is.
  { git -C "$ROOT" log -1 --format='%h %cd %s' --date=iso
    git -C "$ROOT" status --short -- trainer tests/trainer bench/trainer_gpu scripts; } \
    > "$CARRY/commit.txt"
  git -C "$ROOT" check-ignore -q .gpu-deps/deps.tar.gz ||
    die "prepare: .gpu-deps is not ignored by git (.gitignore): it would travel twice"
  du -ch "$CARRY"/*.tar.gz
  check_carry
  echo "gpu_session: packed $CARRY; carry .gpu-deps (the device tool's limit is 64 MiB in all)"
}

# ---- what the carried binaries need, against the device (Ubuntu 24.04) -------------------------

# The device's base system: these libraries are there (glibc 2.39, GCC 14's libstdc++ and
# libgcc_s); every other NEEDED library must be in the carried lib/. libcuda and cuBLASLt are
# opened at run time (dlopen), never NEEDED.
BASE_LIBS=" libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 "
BASE_LIBS+="libstdc++.so.6 libgcc_s.so.1 "
MAX_VERSIONS=(GLIBC_2.39 GLIBCXX_3.4.33 CXXABI_1.3.15 GCC_14.0.0)

# Prints the highest symbol version each ELF file in $@ asks for, per prefix, and fails when one
# is newer than the device's or a NEEDED library is neither carried ($libdir) nor in BASE_LIBS.
check_elves() {
  local libdir=$1; shift
  local f lib max want got bad=0
  for f in "$@"; do
    for lib in $(readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
      case "$BASE_LIBS" in *" $lib "*) continue ;; esac
      [ -e "$libdir/$lib" ] && continue
      echo "  $(basename "$f"): needs $lib, which is neither carried nor in the device's base"
      bad=1
    done
    for max in "${MAX_VERSIONS[@]}"; do
      want=${max%_*}_
      got=$(objdump -T "$f" | grep -o "$want[0-9][0-9.]*" | sort -uV | tail -1)
      [ -n "$got" ] || continue
      if [ "$(printf '%s\n%s\n' "$got" "$max" | sort -V | tail -1)" != "$max" ]; then
        echo "  $(basename "$f"): needs $got, newer than the device's $max"
        bad=1
      else
        printf '  %-26s %-16s (device %s)\n' "$(basename "$f")" "$got" "$max"
      fi
    done
  done
  return $bad
}

check_carry() {
  [ -f "$BIN_TGZ" ] && [ -f "$DEPS_TGZ" ] || die "check: run 'scripts/gpu_session.sh prepare' first"
  local tmp rc
  tmp=$(mktemp -d)
  tar xzf "$BIN_TGZ" -C "$tmp" && mkdir "$tmp/deps" && tar xzf "$DEPS_TGZ" -C "$tmp/deps" ./lib ||
    { rm -rf "$tmp"; die "check: cannot unpack $CARRY"; }
  echo "gpu_session: what the carried files need (base: glibc, libstdc++, libgcc_s)"
  local elves=()
  for b in "${BINARIES[@]}"; do [ -f "$tmp/$b" ] && elves+=("$tmp/$b"); done
  for b in "$tmp"/deps/lib/*.so*; do [ -L "$b" ] || elves+=("$b"); done
  check_elves "$tmp/deps/lib" "${elves[@]}"
  rc=$?
  rm -rf "$tmp"
  [ $rc -eq 0 ] || die "check: the carried binaries would not start on the device (above)"
  echo "gpu_session: check ok: every NEEDED library is carried or in the base system"
}

# ---- all: the first call --------------------------------------------------------------------

caps() {
  local bad=0
  check_sum() {
    local name=$1 cap=$2 sum=0 c; shift 2
    for c in "$@"; do sum=$((sum + c)); done
    printf '  %-7s cap %4d s, its runs %4d s (%s)\n' "$name" "$cap" "$sum" "$*"
    [ "$sum" -le $((cap - 5)) ] || { echo "  $name: its runs' caps exceed its cap - 5 s"; bad=1; }
  }
  echo "gpu_session: the caps of 'all' (budget $BUDGET s)"
  printf '  %-7s cap %4d s\n' setup "$CAP_SETUP"
  check_sum test "$CAP_TEST" "$CAP_TEST_HOST" "$CAP_TEST_OPS" "$CAP_TEST_MODEL" "$CAP_TEST_REST" \
    "$CAP_TEST_NCCL" "$CAP_TEST_MMA"
  check_sum product "$CAP_PRODUCT" "$CAP_PRODUCT_CHECK" "$CAP_PRODUCT_CHECK" "$CAP_PRODUCT_BUILTIN" \
    "$CAP_PRODUCT_SCRIPT"
  check_sum torch "$CAP_TORCH" "$CAP_TORCH_TILED" "$CAP_TORCH_MMA" "$CAP_TORCH_PYTORCH"
  check_sum e2e "$CAP_E2E" "$CAP_E2E_CUDA" "$CAP_E2E_CPU"
  check_sum ops "$CAP_OPS" "$CAP_OPS_RUN"
  local total=$((CAP_SETUP + CAP_TEST + CAP_PRODUCT + CAP_TORCH + CAP_E2E + CAP_OPS))
  echo "  total   $total s of the budget's $BUDGET s (the call: timeout_s $((BUDGET + 30)))"
  [ "$total" -le "$BUDGET" ] || { echo "  the phases' caps exceed the budget"; bad=1; }
  [ "$BUDGET" -le 540 ] || { echo "  the budget is over 9 minutes"; bad=1; }
  return $bad
}

# One phase of `all` in a child of this script under its cap (cut to what is left of the
# budget); a line per phase goes to summary.txt.
all_run() {
  local name=$1 cap=$2 started=$SECONDS left rc
  left=$((DEADLINE - SECONDS))
  if [ "$left" -lt 15 ]; then
    printf '%-6s skipped: %d s left of the budget\n' "$name" "$left" | tee -a "$OUT/summary.txt"
    return
  fi
  [ "$cap" -gt "$left" ] && cap=$left
  echo "==== phase $name (cap $cap s; $left s left of $BUDGET)"
  ABLATE_BIN=$BIN ABLATE_PHASE_END=$(( $(date +%s) + cap )) \
    timeout -k 5 "$cap" bash "$ROOT/scripts/gpu_session.sh" "_$name"
  rc=$?
  printf '%-6s exit %3d after %3d s (cap %3d s)%s\n' "$name" "$rc" $((SECONDS - started)) "$cap" \
    "$([ "$rc" = 124 ] && echo ': cut at its cap')" >> "$OUT/summary.txt"
}

all_phases() {
  DEADLINE=$((SECONDS + BUDGET))
  local t0=$SECONDS
  : > "$OUT/summary.txt"
  # Setup: unpack, env.txt, and whether the carried binaries start (else a build, capped so that
  # at least the test phase keeps its time).
  environment
  record_env > /dev/null
  CAP_BUILD=$(( BUDGET - CAP_SETUP - CAP_TEST < CAP_BUILD ? BUDGET - CAP_SETUP - CAP_TEST : CAP_BUILD ))
  binaries
  printf '%-6s %3d s (cap %d s): binaries in %s\n' setup $((SECONDS - t0)) "$CAP_SETUP" "$BIN" \
    >> "$OUT/summary.txt"
  all_run test "$CAP_TEST"
  all_run product "$CAP_PRODUCT"
  all_run torch "$CAP_TORCH"
  all_run e2e "$CAP_E2E"
  all_run ops "$CAP_OPS"
  {
    echo "---- in $((SECONDS - t0)) s of the budget's $BUDGET s; the figures:"
    grep -hE '^\[  (PASSED|FAILED) |^\[  SKIPPED \] [0-9]+ test|^\[  FAILED  \]|^== .*exit|drift|gpu/envelope' \
      "$OUT/test.log" 2>/dev/null
    grep -hE '^== (mode|sweep|product)|^ok:|FAIL|hardware of|^(check|watch|compare) exit' \
      "$OUT/product.log" 2>/dev/null | cut -c1-200
    grep -hE ' micro-steps, attention |ms/step|tok/s|MFU|^torch|^exit' "$OUT/torch.log" 2>/dev/null |
      cut -c1-160
    grep -hE '^== |exit|"event":"end"' "$OUT/e2e.log" 2>/dev/null | cut -c1-200
    grep -hE '^  attention (fwd|bwd) |^  mma vs tiled|^micro-step from the table|sum so far|^exit' \
      "$OUT/ops.log" 2>/dev/null | cut -c1-200
  } >> "$OUT/summary.txt"
  echo "==== summary ($OUT/summary.txt)"
  cat "$OUT/summary.txt"
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
  LIBS=$DEPS/lib:$(cuda_lib_path)
  LIBS=${LIBS%:}
  [ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin  # nvcc, compute-sanitizer
  mkdir -p "$OUT"
}

# The folders that hold cuBLASLt and NCCL, ':'-separated: the toolkit's, then PyTorch's CUDA
# wheels (CUDA 13 ones put every library in nvidia/cu13/lib, older ones one folder per library).
cuda_lib_path() {
  local d site path=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && path=$path:$d
  done
  site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  for d in "$site"/nvidia/cu13/lib "$site"/nvidia/cublas/lib "$site"/nvidia/nccl/lib; do
    [ -d "$d" ] && path=$path:$d
  done
  echo "${path#:}"
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
  local targets=(ablate-train trainer_cuda_test trainer_cuda_host_test trainer_gpu_bench)
  {
    cmake -S "$ROOT/trainer" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$DEPS" -DABLATE_WERROR="${WERROR:-OFF}" \
      -DABLATE_TRAINER_NATIVE=OFF \
      -DABLATE_JSON_INCLUDE_DIR="$DEPS/include" -DABLATE_CLI11_INCLUDE_DIR="$DEPS/include" \
      -DGTEST_ROOT="$DEPS" -DGTest_ROOT="$DEPS" \
      -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$DEPS/lib -Wl,-rpath,$DEPS/lib" &&
    timeout -k 5 "$CAP_BUILD" cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" &&
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

# Runs one test binary under `cap` seconds; exit 124 means the cap cut it.
gtest() {
  local cap name=$2
  cap=$(clip "$1"); shift 2
  echo "== $name $* (cap $cap s)"
  ablate timeout -k 3 "$cap" "$BIN/tests/$name" "$@"
  local rc=$?
  echo "== $name exit $rc"
  return $rc
}

test_phase() {
  if [ -n "${ABLATE_FILTER:-}" ]; then  # a re-run of chosen tests only
    gtest "$CAP_TEST_MODEL" trainer_cuda_test --gtest_filter="$ABLATE_FILTER" 2>&1 |
      tee "$OUT/test.log" |
      grep -E '^== |^\[  (FAILED|PASSED|SKIPPED) |Failure|drift|gpu/envelope'
    test_failed
    return
  fi
  {
    # The op tests first (the quickest to point at a broken kernel), then model and training.
    gtest "$CAP_TEST_HOST" trainer_cuda_host_test
    gtest "$CAP_TEST_OPS" trainer_cuda_test \
      --gtest_filter="CudaOps.*:Masks/CudaAttention.*:CudaAttentionChoice.*:CudaOptim.*:CudaDistMuon.*-$MMA_FILTER"
    gtest "$CAP_TEST_MODEL" trainer_cuda_test \
      --gtest_filter="Knobs/CudaModel.*:CudaTraining.*:CudaResume*.*-$MMA_FILTER"
    # Whatever the two filters above missed (a test added later), so nothing goes unrun.
    gtest "$CAP_TEST_REST" trainer_cuda_test \
      --gtest_filter='-CudaOps.*:Masks/CudaAttention.*:CudaAttentionChoice.*:CudaOptim.*:CudaDistMuon.*:Knobs/CudaModel.*:CudaTraining.*:CudaResume*.*'
    if [ -x "$BIN/tests/trainer_multi_gpu_test" ]; then
      gtest "$CAP_TEST_NCCL" trainer_multi_gpu_test --gtest_filter="$ONE_GPU_FILTER"
    fi
    # The mma attention kernels (not kAuto's yet) last, in a process of their own: a fault in
    # them (a sticky CUDA error) cannot fail the established tests after it.
    gtest "$CAP_TEST_MMA" trainer_cuda_test --gtest_filter="$MMA_FILTER"
  } 2>&1 | tee "$OUT/test.log" | grep -E '^== |^\[  (FAILED|PASSED|SKIPPED) |Failure|drift|gpu/envelope'
  test_failed
}

# The test phase's exit: 1 when any test binary in test.log exited non-zero (its last line
# would otherwise be grep's status, and the summary would call a failing phase a pass).
test_failed() {
  ! grep -qE '^== [a-z_]+ exit [1-9]' "$OUT/test.log"
}

multi_phase() {
  [ -x "$BIN/tests/trainer_multi_gpu_test" ] || die "no trainer_multi_gpu_test (no nccl.h?)"
  {
    nvidia-smi -L
    gtest 480 trainer_multi_gpu_test --gtest_filter="-$ONE_GPU_FILTER"
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
    ablate timeout -k 3 "$CAP_SANITIZE_RUN" compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin" \
      --gtest_filter="$filter" 2>&1 | tail -30
    echo "$tool exit ${PIPESTATUS[0]}"
  }
  {
    run_sanitizer memcheck 'CudaOps.*:Masks/CudaAttention.*:CudaOptim.*:-*mid*:*RecordVocabulary*'
    run_sanitizer racecheck 'Masks/CudaAttention.*tiled64_docs_window:Masks/CudaAttention.*tiled128_docs_window:Masks/CudaAttention.*mma64_docs_window:Masks/CudaAttention.*mma128_docs_window'
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
    local backend cap
    for backend in cuda cpu; do
      cap=$CAP_E2E_CUDA; [ $backend = cpu ] && cap=$CAP_E2E_CPU
      cap=$(clip "$cap")
      echo "== ablate-train r20-sub3min tiny, --backend $backend, 150 steps (cap $cap s)"
      ablate timeout -k 3 "$cap" "$BIN/ablate-train" --preset r20-sub3min --scale tiny --max-steps 150 \
        --backend $backend --threads "$JOBS" --train "$data/train_*.bin" --val "$data/val_*.bin" 2>&1 |
        grep -E '"event":"(start|val|end|error)"|step (1|50|100|150)/' | cut -c1-400
      echo "exit ${PIPESTATUS[0]} (cap $cap s)"
    done
  } > "$OUT/e2e.log" 2>&1
  grep -E "exit|val_loss|error" "$OUT/e2e.log" | cut -c1-200
}

# The whole product on the device, as a researcher's GPU node runs it: the bundle (carried as
# .gpu-deps/bundle.tar.gz; prepare takes it from `./dev.sh dist`), `ablate-worker --check`
# against the real driver, `ablate up` with its local worker and the GPUs it finds, then two
# sweeps through the coordinator: the built-in trainer on CUDA (r20 tiny: a baseline and one
# ablation x 2 seeds) and a script sweep (scripts/gpu_product/train_cuda.py under torchrun on the
# GPU with the machine's own PyTorch: 2 variants x 2 seeds). Each sweep must end with every run
# succeeded and every point stored (the export's train points are steps 1..N, at least one val
# point, one succeeded attempt), the runs on a GPU in GPU mode, and `ablate compare` must print.
# Without a GPU (the rehearsal) the same sweeps run on the CPU at fewer steps, and the script
# sweep runs where python3 has torch. Exit 1 when any check fails.
product_phase() {
  local tgz=${ABLATE_BUNDLE:-$BUNDLE_TGZ} dir=$DEPS/product
  rm -rf "$dir" && mkdir -p "$dir/bundle"
  if [ ! -f "$tgz" ]; then
    echo "FAIL: no $tgz (prepare packs dist/'s bundle: run ./dev.sh dist first)" | tee "$OUT/product.log"
    return 1
  fi
  tar xzf "$tgz" -C "$dir/bundle" ||
    { echo "FAIL: cannot unpack $tgz" | tee "$OUT/product.log"; return 1; }
  PRODUCT_DIR=$dir PRODUCT_BIN=$(echo "$dir"/bundle/ablate-*/bin) product_run > "$OUT/product.log" 2>&1
  local rc=$?
  grep -E '^== |^ok|FAIL|exit [0-9]' "$OUT/product.log" | cut -c1-200
  return $rc
}

product_run() {
  local dir=$PRODUCT_DIR b=$PRODUCT_BIN gpus steps pysteps device rc=0 i
  local py=${ABLATE_TORCH_PYTHON:-python3}  # the scripts' interpreter: the machine's, with torch
  UP_PID=""
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU 0'; then
    gpus=1 steps=150 pysteps=60 device=cuda
    echo "== mode: GPU ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)); $b"
  else
    gpus=0 steps=30 pysteps=20 device=cpu
    echo "== mode: no GPU, the sweeps run on the CPU (the rehearsal); $b"
  fi
  # ablate's programs find cuBLASLt and NCCL in the toolkit or PyTorch's wheels; the carried lib/
  # stays out (the bundle brings its own libraries, and the worker's torchrun must load torch's).
  export LD_LIBRARY_PATH
  LD_LIBRARY_PATH=$(cuda_lib_path)
  stop_up() {  # ablate up stops its worker (and the worker its runs), then the coordinator
    [ -n "${UP_PID:-}" ] || return 0
    kill -INT "$UP_PID" 2>/dev/null
    local j; for j in $(seq 1 40); do kill -0 "$UP_PID" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$UP_PID" 2>/dev/null
    wait "$UP_PID" 2>/dev/null
    UP_PID=""
  }
  trap 'stop_up' EXIT
  trap 'stop_up; exit 143' TERM INT

  echo "== ablate-worker --check (cap $CAP_PRODUCT_CHECK s)"
  timeout -k 3 "$(clip "$CAP_PRODUCT_CHECK")" "$b/ablate-worker" --check --work-dir "$dir/check" \
    --data-dir "$dir/datasets" --allow-scripts --python "$py"
  echo "check exit $?"

  # The dataset: this repository's text, byte-level, as `ablate-data encode` writes it.
  echo "== ablate-data encode: this repository's text -> datasets/repo-text"
  local files=()
  mapfile -t files < <(cd "$ROOT" && find . -type f \( -name '*.md' -o -name '*.cc' -o -name '*.h' \
    -o -name '*.py' \) -not -path './build*' -not -path './.git/*' -not -path '*/node_modules/*' | sort)
  (cd "$ROOT" && timeout -k 3 "$(clip "$CAP_PRODUCT_CHECK")" "$b/ablate-data" encode "${files[@]}" \
     --out "$dir/datasets/repo-text" --val-fraction 0.1) 2>&1 | tail -2
  [ -f "$dir/datasets/repo-text/manifest.json" ] || { echo "FAIL: the dataset was not written"; return 1; }

  echo "== ablate up --data-dir $dir --listen 127.0.0.1:0 --http 127.0.0.1:0"
  "$b/ablate" up --data-dir "$dir" --listen 127.0.0.1:0 --http 127.0.0.1:0 --python "$py" \
    > "$dir/up.log" 2>&1 &
  UP_PID=$!
  for i in $(seq 1 80); do [ -s "$dir/server" ] && break; sleep 0.25; done
  cat "$dir/up.log"
  [ -s "$dir/server" ] || { echo "FAIL: ablate up did not start"; return 1; }
  export ABLATE_SERVER
  ABLATE_SERVER=$(cat "$dir/server")
  for i in $(seq 1 80); do
    "$b/ablate" --json workers 2>/dev/null | grep -q '"repo-text"' && break
    sleep 0.25
  done
  "$b/ablate" workers

  cat > "$dir/builtin.yaml" <<EOF
name: gpu-product-builtin
description: "the built-in trainer through the whole product (scripts/gpu_session.sh product)"
baseline:
  preset: r20-sub3min
  scale: tiny
  set: {num_iterations: $steps, muon.momentum_warmup_steps: 16}
ablations:
  - {name: no-unet, set: {unet_skips: false}}
seeds: 2
gpus_per_run: $gpus
dataset: repo-text
target_val_loss: 3.0
max_attempts: 1
EOF
  product_sweep builtin "$dir/builtin.yaml" "$CAP_PRODUCT_BUILTIN" "$steps" || rc=1

  if "$py" -c "import torch, sys; sys.exit(0 if '$device' == 'cpu' or torch.cuda.is_available() else 1)" \
       2>/dev/null; then
    mkdir -p "$dir/script"
    cp "$ROOT/scripts/gpu_product/train_cuda.py" "$dir/script/"
    cat > "$dir/script/script.yaml" <<EOF
name: gpu-product-script
description: "a PyTorch script under torchrun through the whole product (scripts/gpu_session.sh product)"
baseline:
  script: train_cuda.py
  launch: torchrun
  args: ["--device", "$device", "--steps", "$pysteps"]
ablations:
  - {name: higher-lr, args: ["--device", "$device", "--steps", "$pysteps", "--lr", "6e-3"], same_work: true}
seeds: 2
gpus_per_run: $gpus
target_val_loss: 3.5
max_attempts: 1
EOF
    "$py" -c 'import torch; print("== '"$py"': torch", torch.__version__, "cuda", torch.version.cuda)'
    product_sweep script "$dir/script/script.yaml" "$CAP_PRODUCT_SCRIPT" "$pysteps" || rc=1
  else
    echo "== sweep script: skipped: $py has no torch$([ $device = cuda ] && echo " that sees CUDA")"
    [ $device = cuda ] && { echo "FAIL: the GPU mode needs the script sweep"; rc=1; }
  fi
  stop_up
  echo "== product exit $rc"
  return $rc
}

# One sweep of the product phase: submit, watch under its cap, then the checks and compare.
# Called from product_run, whose b (the bundle's bin/), dir and gpus it reads.
product_sweep() {
  local name=$1 spec=$2 cap=$3 steps=$4 id
  cap=$(clip "$cap")
  echo "== sweep $name (cap $cap s)"
  id=$("$b/ablate" --json submit "$spec" | python3 -c 'import json, sys; print(json.load(sys.stdin)["sweep"]["id"])')
  [ -n "$id" ] || { echo "FAIL: $name: submit gave no sweep id"; "$b/ablate" submit "$spec"; return 1; }
  timeout -k 3 "$cap" "$b/ablate" watch "$id" | tail -3
  echo "watch exit ${PIPESTATUS[0]}"
  "$b/ablate" runs --sweep "$id"
  "$b/ablate" export "$id" --format jsonl > "$dir/export-$id.jsonl"
  python3 - "$dir/export-$id.jsonl" "$steps" "$gpus" <<'PY' || return 1
import json, sys
path, steps, gpus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
runs = [json.loads(line) for line in open(path)]
bad = [] if len(runs) == 4 else ["%d runs, not 4" % len(runs)]
for r in runs:
    pts = r["points"]
    train = sorted(p["step"] for p in pts if p["train_loss"] is not None)
    val = [p for p in pts if p["val_loss"] is not None]
    done = [a for a in r["attempts"] if a["state"] == "succeeded"]
    print("  run %s %-10s seed %s: %s, %d train points, %d val, final val %s, attempts %s" % (
        r["run_id"], r["variant"], r["seed"], r["state"], len(train), len(val),
        r["summary"]["final_val_loss"], [a["worker_id"] + " " + a["state"] for a in r["attempts"]]))
    why = []
    if r["state"] != "succeeded":
        why.append("state %s: %s" % (r["state"], r["error"][:300]))
    if train != list(range(1, steps + 1)):
        why.append("train points %d, not steps 1..%d" % (len(train), steps))
    if not val:
        why.append("no val point")
    if len(done) != 1:
        why.append("%d succeeded attempts" % len(done))
    if why:
        bad.append("run %s: %s" % (r["run_id"], "; ".join(why)))
for b in bad:
    print("FAIL:", b)
if not bad:
    print("ok: %d runs, every run succeeded with every point stored" % len(runs))
sys.exit(1 if bad else 0)
PY
  # Where the runs ran (compare's places of the runs): in GPU mode each on "1x <GPU model>".
  "$b/ablate" --json compare "$id" | python3 -c '
import json, sys
gpus = int(sys.argv[1])
places = [p for v in json.load(sys.stdin)["variants"] for p in v["runs"]]
kinds = sorted(set(p["hardware"] for p in places))
print("hardware of the runs:", kinds)
if gpus and any(not h.startswith("1x ") for h in kinds):
    print("FAIL: GPU mode, but runs ran on", kinds)
    sys.exit(1)' "$gpus" || return 1
  "$b/ablate" compare "$id" > "$dir/compare-$id.txt" 2>&1
  echo "compare exit $?"
  cut -c1-180 "$dir/compare-$id.txt" | head -8
  grep -q '^baseline ' "$dir/compare-$id.txt" || { echo "FAIL: $name: compare printed no baseline row"; return 1; }
}

# The same r20 step, ablate then PyTorch, on the same GPU in the same call: ms/step, tokens/s,
# MFU side by side (bench/trainer_gpu/NOTES.md, "Against PyTorch"). ablate's step runs twice,
# with the tiled attention kernels and then the mma ones, each under its own cap; either
# failing does not stop the rest. PyTorch is the machine's own (python3, or
# ABLATE_TORCH_PYTHON), run without ablate's library path; its step is torch_step_bench.py over
# the reference model of tests/reference/ablate_ref.py with flex_attention, under torch.compile.
torch_phase() {
  local py=${ABLATE_TORCH_PYTHON:-python3} cfg=$DEPS/r20-sub3min-full.json cap impl
  {
    for impl in tiled mma; do
      echo "== ablate: trainer_gpu_bench r20-sub3min full --attention $impl (one 65,536-token" \
        "sequence per micro-step)"
      cap=$CAP_TORCH_TILED; [ $impl = mma ] && cap=$CAP_TORCH_MMA
      cap=$(clip "$cap")
      ablate timeout -k 3 "$cap" "$BIN/trainer_gpu_bench" --preset r20-sub3min --scale full \
        --steps 4 --skip-ops --attention $impl
      echo "exit $? (cap $cap s)"
    done
    echo "== PyTorch: torch_step_bench.py, same config, same GPU"
    if ! "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
torch.cuda.get_device_name(0))'; then
      echo "gpu_session: no PyTorch with CUDA in $py: PyTorch's half is skipped"
    elif ! ablate "$BIN/trainer_gpu_bench" --preset r20-sub3min --scale full --dump-config "$cfg"
    then
      echo "gpu_session: cannot write $cfg"
    else
      cap=$(clip "$CAP_TORCH_PYTORCH")
      PYTHONUNBUFFERED=1 timeout -k 3 "$cap" "$py" "$ROOT/bench/trainer_gpu/torch_step_bench.py" \
        --config "$cfg" --steps 4 --warmup 1
      echo "exit $? (cap $cap s)"
    fi
  } 2>&1 | tee "$OUT/torch.log"
}

# The per-op table at the r20 full shape, without the step (the torch phase timed it).
ops_phase() {
  local cap
  cap=$(clip "$CAP_OPS_RUN")
  {
    ablate timeout -k 3 "$cap" "$BIN/trainer_gpu_bench" --preset r20-sub3min --scale full \
      --skip-step
    echo "exit $? (cap $cap s)"
  } 2>&1 | tee "$OUT/ops.log"
}

bench_phase() {
  {
    ablate timeout 300 "$BIN/trainer_gpu_bench" --preset r20-sub3min --scale full --steps 5
    echo "exit $?"
    ablate timeout 150 "$BIN/trainer_gpu_bench" --preset r9-shortcuts --scale full --steps 3 --skip-ops
    echo "exit $?"
  } 2>&1 | tee "$OUT/bench.log"
}

usage="usage: scripts/gpu_session.sh prepare | check | caps | rehearse | build | all |
  {test|product|torch|e2e|ops|bench|sanitize|multi}"
[ $# -eq 1 ] || die "$usage (one phase per call)"
case $1 in
  prepare) prepare ;;
  check) check_carry ;;
  caps) caps ;;
  rehearse) rehearse ;;
  build) environment && record_env >/dev/null && ABLATE_FORCE_BUILD=1 binaries ;;
  all) caps > /dev/null || die "the caps do not fit the budget: scripts/gpu_session.sh caps"
       all_phases ;;
  _test|_product|_torch|_e2e|_ops)  # a phase of `all`: set up by all_phases, binaries in ABLATE_BIN
    environment
    BIN=${ABLATE_BIN:?}
    "${1#_}_phase" ;;
  product)  # needs only the bundle (ABLATE_BUNDLE, else the carried one), not the binaries
    mkdir -p "$OUT"
    product_phase ;;
  test|torch|bench|sanitize|e2e|ops|multi)
    environment
    record_env
    binaries
    "$1_phase" ;;
  *) die "unknown phase '$1'. $usage" ;;
esac
