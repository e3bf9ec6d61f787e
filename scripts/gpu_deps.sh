#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs besides CUDA and CMake — Eigen and nlohmann-json (headers
# with their CMake package files) and GoogleTest (static libraries) — into one folder, laid out
# as an install prefix, for a machine with a GPU that has none of them and no network. Run it
# on a Debian machine with scripts/setup.sh's packages; copy the folder along with the checkout.
#
# Usage: scripts/gpu_deps.sh [OUT_DIR]   (default build-gpu-deps, which gpu_check.sh looks for)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/build-gpu-deps}")
lib=/usr/lib/x86_64-linux-gnu
for need in /usr/include/eigen3 /usr/share/eigen3/cmake /usr/include/nlohmann /usr/share/cmake/nlohmann_json \
            /usr/include/gtest /usr/include/gmock "$lib/cmake/GTest" "$lib/libgtest.a"; do
  [ -e "$need" ] || { echo "gpu_deps: $need is missing; run scripts/setup.sh first" >&2; exit 1; }
done
tmp="$out.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp/include" "$tmp/share/eigen3" "$tmp/share/cmake" "$tmp/lib/x86_64-linux-gnu/cmake"
cp -r /usr/include/eigen3 /usr/include/nlohmann /usr/include/gtest /usr/include/gmock "$tmp/include/"
cp -r /usr/share/eigen3/cmake "$tmp/share/eigen3/"
cp -r /usr/share/cmake/nlohmann_json "$tmp/share/cmake/"
cp -r "$lib/cmake/GTest" "$tmp/lib/x86_64-linux-gnu/cmake/"
cp "$lib"/libgtest.a "$lib"/libgtest_main.a "$lib"/libgmock.a "$lib"/libgmock_main.a "$tmp/lib/x86_64-linux-gnu/"
rm -rf "$out"
mv "$tmp" "$out"
echo "gpu_deps: $(du -sh "$out" | cut -f1) in $out"
