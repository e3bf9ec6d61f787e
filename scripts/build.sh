#!/usr/bin/env bash
# Configures and builds specdec in ./build (Release). Extra arguments go to CMake's configure step,
# e.g. scripts/build.sh -DSPECDEC_CUDA=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
cmake --build "$build" -j "$(nproc)"
