#!/usr/bin/env bash
# The device check, on a machine with an NVIDIA GPU where only CUDA and CMake are installed:
#   1. builds the reference, the kernels and their gpu tests (SPECDEC_KERNELS_ONLY: no HDF5 or
#      Boost needed), taking Eigen, nlohmann-json and GoogleTest from the system or from
#      SPECDEC_GPU_DEPS (default build-gpu-deps/, made by scripts/gpu_deps.sh on a Debian machine);
#   2. prints nvidia-smi;
#   3. runs every kernel on the device, bitwise against its reference twin on fresh random inputs
#      with outputs poisoned first (tests/gpu);
#   4. runs compute-sanitizer memcheck and racecheck over the same tests (model-scale cases left
#      out to keep it short), where compute-sanitizer is installed;
#   5. times the kernels (specdec_kernel_bench);
# and prints a table last. Exits non-zero if any check fails. Takes about 3–5 minutes on an H200.
#
# Usage: scripts/gpu_check.sh   (SPECDEC_GPU_BUILD_DIR, default build-gpu; SPECDEC_GPU_DEPS)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_GPU_BUILD_DIR:-$root/build-gpu}
deps=${SPECDEC_GPU_DEPS:-$root/build-gpu-deps}
log=$build/gpu_check.log
start=$(date +%s)
export PATH=$PATH:/usr/local/cuda/bin

declare -a rows=()
status=0
row() {  # row STEP RESULT DETAIL
  rows+=("$(printf '%-30s %-8s %s' "$1" "$2" "$3")")
  [ "$2" = "PASS" ] || [ "$2" = "INFO" ] || [ "$2" = "SKIP" ] || status=1
}
elapsed() { echo "$(( $(date +%s) - start )) s"; }

mkdir -p "$build"
: > "$log"
echo "== nvidia-smi"
if nvidia-smi; then
  row "nvidia-smi" INFO "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
else
  echo "gpu_check: nvidia-smi failed: no usable NVIDIA GPU or driver here" >&2
  exit 1
fi

echo "== build ($build)"
prefix=()
[ -d "$deps" ] && prefix=(-DCMAKE_PREFIX_PATH="$deps")
if cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPECDEC_KERNELS_ONLY=ON -DSPECDEC_CUDA=ON \
     "${prefix[@]}" >> "$log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" --target test_kernels_device specdec_kernel_bench >> "$log" 2>&1; then
  row "build" PASS "$(elapsed)"
else
  tail -40 "$log"
  row "build" FAIL "see $log"
  printf '%s\n' "${rows[@]}"
  exit 1
fi
tests=$build/tests/gpu/test_kernels_device

echo "== kernels on the device, bitwise against the reference"
out=$("$tests" 2>&1)
rc=$?
echo "$out"
while read -r name ms; do
  row "${name#DeviceKernels.}" PASS "bitwise, $ms"
done < <(echo "$out" | sed -n 's/^\[       OK \] \([^ ]*\) (\(.*\))$/\1 \2/p')
while read -r name; do
  row "${name#DeviceKernels.}" FAIL "see the output above"
done < <(echo "$out" | sed -n 's/^\[  FAILED  \] \([^ ]*\) (.*)$/\1/p')
if echo "$out" | grep -q "SKIPPED"; then row "gpu tests" FAIL "skipped: the device was not usable"; fi
[ $rc -eq 0 ] || row "gpu tests" FAIL "exit $rc"

sanitizer=$(command -v compute-sanitizer || true)
if [ -n "$sanitizer" ]; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer $tool"
    if "$sanitizer" --tool "$tool" --error-exitcode 3 "$tests" --gtest_filter='-*AtModelScale*' >> "$log" 2>&1; then
      row "compute-sanitizer $tool" PASS "$(elapsed)"
    else
      grep -m 20 -E "=========" "$log" | tail -20
      row "compute-sanitizer $tool" FAIL "see $log"
    fi
  done
else
  row "compute-sanitizer" SKIP "not installed"
fi

echo "== timing"
if "$build/kernels/specdec_kernel_bench" | tee "$build/kernel_bench.txt"; then
  row "kernel timing" INFO "$build/kernel_bench.txt"
else
  row "kernel timing" FAIL "specdec_kernel_bench failed"
fi

echo
echo "== gpu_check summary ($(date -u +%Y-%m-%d), $(elapsed))"
printf '%s\n' "${rows[@]}"
[ -f "$build/kernel_bench.txt" ] && sed -n '/^copy bandwidth/,$p' "$build/kernel_bench.txt"
exit $status
