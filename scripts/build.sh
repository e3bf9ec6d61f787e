#!/usr/bin/env bash
# Configures and builds specdec in ./build (Release). Extra arguments go to CMake's configure step,
# e.g. scripts/build.sh -DSPECDEC_CUDA=OFF. SPECDEC_BUILD_TARGETS (space-separated) builds only
# those targets, e.g. SPECDEC_BUILD_TARGETS=specdec for the command line alone (scripts/run.sh).
# Objects go through ccache when it is installed (scripts/setup.sh installs it), so a fresh clone
# on the same machine rebuilds from the cache.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
targets=()
for t in ${SPECDEC_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
