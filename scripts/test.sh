#!/usr/bin/env bash
# Install what is needed, build, and run the cpu test suite (GPU tests need a GPU: ctest -L gpu).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${SPECDEC_BUILD_DIR:-$root/build}
ctest --test-dir "$build" -L cpu --output-on-failure -j "$(nproc)"
