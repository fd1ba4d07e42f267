#!/usr/bin/env bash
# Runs the tests of an ASan+UBSan build (./dev.sh sanitize builds it into build-asan/ and calls
# this) and fails when any process reported anything: the test binaries and every coordinator,
# worker, trainer and CLI they start write their reports to BUILD/sanitizer-logs/ (a child's
# report would otherwise only reach a log file the test may never read, or change an exit code
# the test does not check).
#   tests/sanitize/run_tests.sh BUILD JOBS [ctest args...]
# ABLATE_SANITIZE_ALL=1 runs every test, the ones CI leaves out (tests/sanitize/NOTES.md) too.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
jobs=$2
shift 2
logs=$build/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"

# halt_on_error: the first report ends the process (with -fno-sanitize-recover for UBSan too).
# Leaks are checked at every exit; lsan.supp names only third-party leaks (never ablate's).
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:check_initialization_order=1:detect_stack_use_after_return=0:log_path=$logs/asan:log_exe_name=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan:log_exe_name=1"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"

# Left out in CI, each for the reason in NOTES.md: one regex of test names.
skip=$(grep -v '^#' "$here/ci_skip.txt" | sed '/^$/d' | paste -sd'|')
args=(-LE gpu)
if [ "${ABLATE_SANITIZE_ALL:-0}" != 1 ] && [ -n "$skip" ]; then args+=(-E "$skip"); fi

ctest --test-dir "$build" --output-on-failure -j "$jobs" "${args[@]}" "$@"
rc=$?

reports=$(find "$logs" -type f -size +0 | sort)
if [ -n "$reports" ]; then
  echo "sanitize: $(echo "$reports" | wc -l) sanitizer report(s):" >&2
  for f in $reports; do
    echo "==== $f" >&2
    head -n 80 "$f" >&2
  done
  [ $rc -eq 0 ] && rc=1
else
  echo "sanitize: no sanitizer reports" >&2
fi
exit $rc
