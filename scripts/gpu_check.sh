#!/usr/bin/env bash
# The device check, on a machine with an NVIDIA GPU where only CUDA and CMake are installed:
#   1. prints nvidia-smi;
#   2. builds the reference, the kernels, the cpu and cuda backends and their gpu tests
#      (SPECDEC_KERNELS_ONLY: no HDF5 or Boost needed), taking Eigen, nlohmann-json and GoogleTest
#      from the system or from SPECDEC_GPU_DEPS (default build-gpu-deps/, made by
#      scripts/gpu_deps.sh on a Debian machine);
#   3. runs every kernel on the device, bitwise against its reference twin on fresh random inputs
#      with outputs poisoned first, and the whole CUDA backend on the device: every model family and
#      precision, the EAGLE heads, launch configurations, and greedy and coupled decoding of every
#      method equal to sequential decoding (tests/gpu);
#   4. where HDF5 and Boost are installed, builds the specdec command too and runs
#      `specdec validate --backend cuda` on every golden trace and against the reference for every
#      method, and `specdec bench` for every method's end-to-end speedup on a 1B shape with the
#      acceptance replayed from a golden trace (otherwise says so: the cpu tests replay every golden
#      trace on the emulated backend);
#   5. times the backend (specdec_cuda_bench: copy bandwidth, decode tokens/s and its fraction of
#      the copy bandwidth on Llama-3.1-8B's and a 1B shape in BF16, verify cost for T = 1..64) and
#      the kernels (specdec_kernel_bench, with cuBLAS's non-exact GEMMs on the same matrices);
#   6. runs compute-sanitizer memcheck and racecheck over the kernel tests (model-scale cases left
#      out), where compute-sanitizer works, each for at most SPECDEC_GPU_SANITIZER_S seconds;
# and prints a table last, with the targets (decode >= 80% of copy bandwidth on the 8B shape;
# verifying 8 tokens <= 1.2x one token there). Exits non-zero if a check fails. Meant to take
# under 8 minutes on an H200; logs go to the build folder.
#
# Usage: scripts/gpu_check.sh   (SPECDEC_GPU_BUILD_DIR, default build-gpu; SPECDEC_GPU_DEPS)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_GPU_BUILD_DIR:-$root/build-gpu}
deps=${SPECDEC_GPU_DEPS:-$root/build-gpu-deps}
log=$build/gpu_check.log
start=$(date +%s)
export PATH=$PATH:/usr/local/cuda/bin
jobs=$(nproc)

declare -a rows=()
status=0
row() {  # row STEP RESULT DETAIL
  rows+=("$(printf '%-34s %-6s %s' "$1" "$2" "$3")")
  [ "$2" = "PASS" ] || [ "$2" = "INFO" ] || [ "$2" = "SKIP" ] || status=1
}
elapsed() { echo "$(( $(date +%s) - start )) s"; }
summary() {
  echo
  echo "== gpu_check summary ($(date -u +%Y-%m-%d), $(elapsed))"
  printf '%s\n' "${rows[@]}"
}

# gtest_rows NAME OUTPUT RC: one row per passed and failed test of a GoogleTest program.
gtest_rows() {
  local out=$2 rc=$3
  while read -r name ms; do
    row "${name#*.}" PASS "bitwise, $ms"
  done < <(echo "$out" | sed -n 's/^\[       OK \] \([^ ]*\) (\(.*\))$/\1 \2/p')
  while read -r name; do
    row "${name#*.}" FAIL "see the output above"
  done < <(echo "$out" | sed -n 's/^\[  FAILED  \] \([^ ]*\) (.*)$/\1/p')
  if echo "$out" | grep -q "^\[  SKIPPED \]"; then row "$1" FAIL "skipped: the device was not usable"; fi
  [ "$rc" -eq 0 ] || row "$1" FAIL "exit $rc"
}

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
   cmake --build "$build" -j "$jobs" --target test_kernels_device test_cuda_backend_device specdec_kernel_bench \
     specdec_cuda_bench >> "$log" 2>&1; then
  row "build" PASS "$(elapsed)"
else
  tail -40 "$log"
  row "build" FAIL "see $log"
  summary
  exit 1
fi

echo "== kernels on the device, bitwise against the reference"
kernel_tests=$build/tests/gpu/test_kernels_device
out=$("$kernel_tests" 2>&1)
rc=$?
echo "$out"
gtest_rows "kernel tests" "$out" $rc

echo "== the CUDA backend on the device, bitwise against the reference"
out=$("$build/tests/gpu/test_cuda_backend_device" 2>&1)
rc=$?
echo "$out" | grep -v "^\[ RUN"
passed=$(echo "$out" | grep -c "^\[       OK \]")
failed=$(echo "$out" | grep -c "^\[  FAILED  \] [^ ]* (")
if echo "$out" | grep -q "^\[  SKIPPED \]"; then
  row "cuda backend tests" FAIL "skipped: the device was not usable"
elif [ "$rc" -eq 0 ]; then
  row "cuda backend tests" PASS "$passed passed, bitwise / token for token ($(elapsed))"
else
  row "cuda backend tests" FAIL "$passed passed, $failed failed, exit $rc"
fi

echo "== specdec validate --backend cuda (needs HDF5 and Boost)"
full=$build/full
if cmake -S "$root" -B "$full" -DCMAKE_BUILD_TYPE=Release -DSPECDEC_CUDA=ON -DSPECDEC_TESTS=OFF "${prefix[@]}" \
     >> "$log" 2>&1 && cmake --build "$full" -j "$jobs" --target specdec >> "$log" 2>&1; then
  bad=0 n=0
  for trace in "$root"/traces/golden/*.h5; do
    name=$(basename "$trace" .h5)
    family=${name%%[-_]*}
    drafter=()
    case $family in
      draft) drafter=(--drafter "$root/models/draft") ;;
      eagle) drafter=(--drafter "$root/models/eagle1") ;;
      eagle3) drafter=(--drafter "$root/models/eagle3") ;;
      peagle) drafter=(--drafter "$root/models/peagle") ;;
    esac
    n=$((n + 1))
    if ! "$full/specdec" validate --trace "$trace" --backend cuda --model "$root/models/target" "${drafter[@]}" \
         >> "$log" 2>&1; then
      bad=$((bad + 1))
      echo "golden trace $name: FAILED (see $log)"
    fi
  done
  [ $bad -eq 0 ] && row "golden traces on the device" PASS "$n of $n replay exactly" ||
    row "golden traces on the device" FAIL "$bad of $n diverge (see $log)"
  bad=0
  for m in "sequential" "draft --drafter $root/models/draft --k 4" "eagle --drafter $root/models/eagle1 --k 4" \
           "eagle3 --drafter $root/models/eagle3 --k 4" "peagle --drafter $root/models/peagle --k 4"; do
    # shellcheck disable=SC2086
    if ! "$full/specdec" validate --model "$root/models/target" --backend cuda --against reference --method $m \
         --prompt "In the beginning" --max-new-tokens 24 >> "$log" 2>&1; then
      bad=$((bad + 1))
      echo "validate --method $m: FAILED (see $log)"
    fi
  done
  [ $bad -eq 0 ] && row "validate against the reference" PASS "every method" ||
    row "validate against the reference" FAIL "$bad methods diverge (see $log)"
  # End-to-end speedups of every method on a 1B shape, acceptance replayed from a golden trace.
  if "$full/specdec" bench --preset llama-1b --backends cuda --tokens 64 --repeat 2 \
       --acceptance-trace "$root/traces/golden/eagle3-chain_prose_greedy.h5" --out "$build/bench-1b" \
       | tee "$build/bench_1b.txt"; then
    row "method speedups (llama-1b)" INFO "$build/bench_1b.txt"
  else
    row "method speedups (llama-1b)" FAIL "specdec bench failed (see above)"
  fi
else
  row "golden traces on the device" SKIP "no HDF5/Boost here to build specdec (the cpu tests replay them emulated)"
fi

echo "== timing the backend (specdec_cuda_bench)"
bench=$build/cuda_bench.txt
if "$build/specdec_cuda_bench" --shapes llama-3.1-8b,llama-1b | tee "$bench"; then
  row "backend timing" INFO "$bench"
  frac=$(sed -n 's/^decode llama-3.1-8b .* \([0-9.]*\)% of copy bandwidth$/\1/p' "$bench")
  v8=$(sed -n 's/^verify llama-3.1-8b *T=8 .* \([0-9.]*\)x one token$/\1/p' "$bench")
  [ -n "$frac" ] && row "8B decode of copy bandwidth" INFO "$frac% (target >= 80%: $(awk -v f="$frac" 'BEGIN{print (f >= 80 ? "met" : "not met")}'))"
  [ -n "$v8" ] && row "8B verify T=8 / T=1" INFO "${v8}x (target <= 1.2x: $(awk -v v="$v8" 'BEGIN{print (v <= 1.2 ? "met" : "not met")}'))"
else
  row "backend timing" FAIL "specdec_cuda_bench failed"
fi

echo "== timing the kernels (specdec_kernel_bench)"
if "$build/kernels/specdec_kernel_bench" | tee "$build/kernel_bench.txt"; then
  row "kernel timing" INFO "$build/kernel_bench.txt"
else
  row "kernel timing" FAIL "specdec_kernel_bench failed"
fi

# Last, because its duration is the least predictable: each tool gets at most
# SPECDEC_GPU_SANITIZER_S seconds (default 150), so the table above is never lost to it.
sanitizer=$(command -v compute-sanitizer || true)
sanitizer_s=${SPECDEC_GPU_SANITIZER_S:-150}
if [ -n "$sanitizer" ]; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer $tool (at most $sanitizer_s s)"
    timeout "$sanitizer_s" "$sanitizer" --tool "$tool" --error-exitcode 3 "$kernel_tests" \
      --gtest_filter='-*AtModelScale*' >> "$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
      row "compute-sanitizer $tool" PASS "$(elapsed)"
    elif [ $rc -eq 124 ]; then
      row "compute-sanitizer $tool" SKIP "stopped after $sanitizer_s s with no error reported so far"
    else
      grep -m 20 -E "=========" "$log" | tail -20
      row "compute-sanitizer $tool" FAIL "see $log"
    fi
  done
else
  row "compute-sanitizer" SKIP "not installed"
fi

summary
[ -f "$bench" ] && grep -E "^(device|copy bandwidth|decode|verify .*T=(1|8|64) )" "$bench"
exit $status
