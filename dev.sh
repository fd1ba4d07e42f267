#!/usr/bin/env bash
# ablate's developer entry point: installs what is missing (Debian 12), builds, and runs the demo
# or the tests. Idempotent and quick when everything is already present.
#   ./dev.sh demo    install, build, run the demo sweep on a local coordinator
#   ./dev.sh test    install, build, run every test (what CI runs)
#   ./dev.sh build   install and build only
#   ./dev.sh sanitize  ASan+UBSan build into build-asan/ and its tests (what CI runs after `test`)
#   ./dev.sh dist    the self-contained bundle dist/ablate-VERSION-linux-x86_64.tar.gz (--test: and
#                    its test in a Debian 11 root filesystem)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
BUILD=${ABLATE_BUILD_DIR:-$ROOT/build}
JOBS=${ABLATE_JOBS:-$(nproc)}

# What the demo needs: the compiler, the service libraries, OpenBLAS, and the fortunes it trains
# on (libgtest-dev, libgmock-dev and libboost-context-dev only because the build folder configures
# the tests too; they are small). The dashboard's uPlot comes from npm's registry with curl (web_package), not npm.
DEMO_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libsqlite3-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
  libopenblas-dev libboost-dev libboost-context-dev libgtest-dev libgmock-dev libcurl4-openssl-dev libssl-dev
  fortunes-min curl ca-certificates
)
# ... and what the tests add: PyTorch and SciPy (reference checks), clang (sanitizers, fuzzing),
# Chromium (the dashboard's browser tests), Slurm and sshd (pools), the bundle's root
# filesystem tools.
PACKAGES=(
  "${DEMO_PACKAGES[@]}" git sqlite3
  python3 python3-torch python3-numpy python3-scipy python3-grpcio python3-protobuf
  openssl clang libclang-rt-14-dev libomp-dev
  chromium
  slurmctld slurmd slurm-client munge
  openssh-server openssh-client
  patchelf mmdebstrap
)
# The programs the demo runs (`ablate up --demo`), which are also the ones a bundle ships.
PROGRAMS=(ablate ablate-coordinator ablate-worker ablate-train ablate-data)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_deps() {
  local missing=()
  local want=("$@")
  [ ${#want[@]} -gt 0 ] || want=("${PACKAGES[@]}")
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "dev.sh: installing ${missing[*]}" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# The dashboard's two npm packages in web/node_modules: uPlot (the charts) and playwright-core (the
# browser tests drive chromium with it), fetched without npm (web_package), and node to run the
# browser tests: Debian's nodejs when there is no node at all (a newer one may be installed).
# Debian's npm would bring some 400 more packages: 96 s of a bare `./dev.sh test` (2026-11-27).
web_deps() {
  if ! command -v node >/dev/null; then
    echo "dev.sh: installing nodejs" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs
  fi
  web_package uplot dist/uPlot.esm.js
  web_package playwright-core cli.js
}

# The dashboard's chart library alone: all the demo and the bundle use of web/node_modules.
web_uplot() {
  web_package uplot dist/uPlot.esm.js
}

# web_package NAME FILE: package NAME of web/package-lock.json (neither has dependencies of its
# own) from npm's registry ($npm_config_registry, default registry.npmjs.org) with curl, checked
# against the lockfile's sha512 and unpacked into web/node_modules/NAME, as `npm ci` would.
# Skipped while node_modules holds the locked version (and FILE, which shows it is whole).
web_package() {
  local name=$1 file=$2
  local lock="$ROOT/web/package-lock.json" dest="$ROOT/web/node_modules/$1"
  local entry version integrity registry tgz want got
  entry=$(sed -n "/\"node_modules\/$name\": {/,/}/p" "$lock")
  version=$(sed -n 's/.*"version": "\([^"]*\)".*/\1/p' <<<"$entry" | head -1)
  integrity=$(sed -n 's/.*"integrity": "sha512-\([^"]*\)".*/\1/p' <<<"$entry" | head -1)
  if [ -z "$version" ] || [ -z "$integrity" ]; then
    echo "dev.sh: no $name version and sha512 in $lock" >&2
    exit 1
  fi
  if [ -f "$dest/$file" ] && grep -q "\"version\": \"$version\"" "$dest/package.json"; then
    return 0
  fi
  registry=${npm_config_registry:-https://registry.npmjs.org/}
  tgz=$(mktemp)
  echo "dev.sh: fetching $name $version" >&2
  curl -fsSL --retry 3 "${registry%/}/$name/-/$name-$version.tgz" -o "$tgz"
  want=$(printf '%s' "$integrity" | base64 -d | od -An -v -tx1 | tr -d ' \n')
  got=$(sha512sum "$tgz" | cut -d' ' -f1)
  if [ "$want" != "$got" ]; then
    rm -f "$tgz"
    echo "dev.sh: $name-$version.tgz does not match the sha512 in $lock" >&2
    exit 1
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  tar -xzf "$tgz" -C "$dest" --strip-components=1
  rm -f "$tgz"
}

# What only the tests need (PyTorch, SciPy, Chromium, Slurm, clang, node, playwright-core, ...) is
# installed while the build compiles: none of it is read by the build, and on a bare machine it
# took about 150 s of the packages' 226 s before the first compile (bench/build/NOTES.md).
# wait_test_deps waits for it, fails with its log when it failed, and configures the build
# folder again so that the tests which look for node and python at configure time find them.
start_test_deps() {
  TEST_DEPS_LOG=$(mktemp)
  echo "dev.sh: installing the test packages in the background while the build compiles" >&2
  ( install_deps && web_deps ) >"$TEST_DEPS_LOG" 2>&1 &
  TEST_DEPS_PID=$!
  # Should the build fail, apt is let finish rather than left running on its own.
  trap '[ -z "${TEST_DEPS_PID:-}" ] || wait "$TEST_DEPS_PID" 2>/dev/null || true' EXIT
}

wait_test_deps() {
  local pid=$TEST_DEPS_PID
  TEST_DEPS_PID=
  if ! wait "$pid"; then
    cat "$TEST_DEPS_LOG" >&2
    echo "dev.sh: installing the test packages failed (above)" >&2
    rm -f "$TEST_DEPS_LOG"
    exit 1
  fi
  grep '^dev.sh:' "$TEST_DEPS_LOG" >&2 || true
  rm -f "$TEST_DEPS_LOG"
  configure
}

configure() {
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
}

# build [TARGET...]: everything, or only the named targets (and what they need).
build() {
  configure
  if [ $# -gt 0 ]; then
    cmake --build "$BUILD" -j "$JOBS" --target "$@"
  else
    cmake --build "$BUILD" -j "$JOBS"
  fi
}

run_tests() {
  ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" "$@"
}

# The ASan+UBSan build (no CUDA: nvcc takes no -fsanitize; no benchmarks) and its tests, which
# fail on any sanitizer report from any process (tests/sanitize/).
# With clang at -O0 (ABLATE_SANITIZE_OPT), which compiles it in about half the time of GCC at -O1
# (tests/sanitize/NOTES.md); clang's warnings differ from GCC's, so they are not errors here.
sanitize() {
  local dir=${ABLATE_SANITIZE_BUILD_DIR:-$ROOT/build-asan}
  # A build folder configured with another compiler is started afresh.
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-14' "$dir/CMakeCache.txt"; then
    rm -rf "$dir"
  fi
  CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DABLATE_SANITIZE=address -DABLATE_SANITIZE_OPT="${ABLATE_SANITIZE_OPT:--O0}" \
    -DABLATE_WERROR=OFF -DABLATE_CUDA=OFF >/dev/null
  cmake --build "$dir" -j "$JOBS"
  "$ROOT/tests/sanitize/run_tests.sh" "$dir" "$JOBS" "$@"
}

# The release bundle (scripts/dist.sh) into dist/, from its own build folder: the trainer's CPU
# kernels for x86-64-v3 (AVX2, every GPU node's CPU) instead of this machine's -march=native.
# `./dev.sh dist --test` then runs it in a Debian 11 root filesystem (scripts/test_bundle.sh).
dist() {
  local dir=${ABLATE_DIST_BUILD_DIR:-$ROOT/build-dist}
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DABLATE_TRAINER_MARCH=x86-64-v3 >/dev/null
  cmake --build "$dir" -j "$JOBS" --target "${PROGRAMS[@]}"
  local bundle
  bundle=$("$ROOT/scripts/dist.sh" "$dir" "$ROOT/dist")
  echo "dev.sh: $bundle" >&2
  if [ "${1:-}" = --test ]; then "$ROOT/scripts/test_bundle.sh" "$bundle"; fi
}

demo() {
  "$ROOT/scripts/demo.sh" "$BUILD"
}

cmd=${1:-}
shift || true
case "$cmd" in
  demo) install_deps "${DEMO_PACKAGES[@]}"; web_uplot; build "${PROGRAMS[@]}"; demo "$@" ;;
  test) install_deps "${DEMO_PACKAGES[@]}"; start_test_deps; build; wait_test_deps
        run_tests "$@" ;;
  build) install_deps; web_deps; build ;;
  deps) install_deps; web_deps ;;
  sanitize) install_deps; web_deps; sanitize "$@" ;;
  dist) install_deps "${DEMO_PACKAGES[@]}" patchelf mmdebstrap; web_uplot; dist "$@" ;;
  *) echo "usage: ./dev.sh demo|test|build|deps|sanitize|dist [--test]" >&2; exit 2 ;;
esac
