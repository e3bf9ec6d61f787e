#!/usr/bin/env bash
# Builds specdec with AddressSanitizer and UndefinedBehaviorSanitizer in ./build-sanitize and runs
# the cpu test suite under them. Any finding aborts its test, so the suite passes only when clean.
#   scripts/sanitize.sh                  # the whole cpu suite
#   scripts/sanitize.sh -R 'Trace|Fuzz'  # extra arguments go to ctest (here: a subset)
# SPECDEC_SANITIZE_TARGETS="a b" builds only those targets (CI builds the I/O, decoding and fuzz
# regression tests that way); the default builds everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_SANITIZE_BUILD_DIR:-$root/build-sanitize}
"$root/scripts/setup.sh"
# CUDA sources are compiled by nvcc without sanitizers; the emulated kernels run as C++.
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPECDEC_SANITIZE=address,undefined > /dev/null
if [ -n "${SPECDEC_SANITIZE_TARGETS:-}" ]; then
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$(nproc)" --target ${SPECDEC_SANITIZE_TARGETS}
else
  cmake --build "$build" -j "$(nproc)"
fi
# detect_leaks: LeakSanitizer as well; abort_on_error keeps the report and fails the test.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The cross-library and Python tests (labels interop, python) drive the specdec binary and the
# Python module from Python; they run in the main build.
ctest --test-dir "$build" -L cpu -LE "interop|python" --output-on-failure -j "$(nproc)" "$@"
