#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang, ASan and UBSan in ./build-fuzz and runs
# each one, printing a table of executions, coverage and findings.
#   scripts/fuzz.sh                    # every harness for 60 s
#   scripts/fuzz.sh 3600 fuzz_trace    # one harness for an hour
#   scripts/fuzz.sh --smoke            # CI: 3000 executions (at most 60 s) each
#   scripts/fuzz.sh --runs 10000000 fuzz_model_config   # until 10 million executions
# SPECDEC_FUZZ_NO_BUILD=1 skips the build (for runs side by side on one built tree).
# Corpora persist in build-fuzz/corpus/<harness> (a later run resumes from them); the seed corpus
# is the repository's real files (tests/fuzz/CMakeLists.txt). A finding is saved under
# build-fuzz/findings/<harness>/ and makes the script exit non-zero; replay one with
#   build-fuzz/tests/fuzz/<harness> build-fuzz/findings/<harness>/crash-...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_FUZZ_BUILD_DIR:-$root/build-fuzz}
smoke=0
seconds=60
runs=0
if [ "${1:-}" = "--smoke" ]; then
  smoke=1
  shift
elif [ "${1:-}" = "--runs" ]; then
  [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --runs needs a number of executions, got '${2:-}'" >&2; exit 2; }
  runs=$2
  shift 2
elif [ -n "${1:-}" ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
all=(fuzz_safetensors fuzz_model_config fuzz_drafter_config fuzz_tree_choices fuzz_vocabulary fuzz_trace fuzz_tokenizer
     fuzz_candidate_trace fuzz_simulator_spec fuzz_sweep_spec fuzz_gguf)
# These two link the runtime, whose kernel emulator uses std::source_location: clang reads it from
# libstdc++ only from version 15 on. Older clangs fuzz the others; the two replays still run in
# the cpu suite (GCC) and under ASan+UBSan.
runtime_harnesses=(fuzz_candidate_trace fuzz_sweep_spec)
# Install first, so a fresh machine has clang 16 when the compiler is chosen below.
[ "${SPECDEC_FUZZ_NO_BUILD:-0}" = 1 ] || "$root/scripts/setup.sh"
# Debian 12's newest clang (16, installed by setup.sh) where present, else the default clang.
cc=clang
cxx=clang++
if command -v clang++-16 > /dev/null; then
  cc=clang-16
  cxx=clang++-16
fi
clang_major=$($cxx --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
# The reports must be symbolized: findings are told from libhdf5's contained reports by their
# frames' names. The compiler's own llvm-symbolizer (setup.sh installs it), else any on PATH.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-${clang_major:-0}/bin/llvm-symbolizer
  [ -x "$ASAN_SYMBOLIZER_PATH" ] || ASAN_SYMBOLIZER_PATH=$(command -v llvm-symbolizer || true)
fi
if [ -z "$ASAN_SYMBOLIZER_PATH" ] || [ ! -x "$ASAN_SYMBOLIZER_PATH" ]; then
  echo "fuzz.sh: no llvm-symbolizer found (install llvm-${clang_major:-16}; scripts/setup.sh does): without one, reports" \
       "inside libhdf5 cannot be told from specdec's" >&2
  exit 2
fi
export ASAN_SYMBOLIZER_PATH
if [ "${clang_major:-0}" -lt 15 ]; then
  if [ $# -gt 0 ]; then
    for h in "$@"; do
      for r in "${runtime_harnesses[@]}"; do
        [ "$h" != "$r" ] || { echo "fuzz.sh: $h needs clang >= 15 (std::source_location in libstdc++), found clang ${clang_major:-none}" >&2; exit 2; }
      done
    done
  else
    echo "fuzz.sh: clang ${clang_major:-none} < 15: skipping ${runtime_harnesses[*]} (their replays run in the cpu suite)"
    kept=()
    for h in "${all[@]}"; do
      [[ " ${runtime_harnesses[*]} " == *" $h "* ]] || kept+=("$h")
    done
    all=("${kept[@]}")
  fi
fi
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=("${all[@]}")

if [ "${SPECDEC_FUZZ_NO_BUILD:-0}" != 1 ]; then
  CC=$cc CXX=$cxx cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPECDEC_FUZZ=ON \
    -DSPECDEC_SANITIZE=address,undefined -DSPECDEC_CUDA=OFF -DSPECDEC_OPENMP=OFF > /dev/null
  cmake --build "$build" -j "$(nproc)" --target "${harnesses[@]}"
fi

# Seed directories and files per harness, as the replay tests use them.
seeds() {
  local h=$1
  sed -n "s/^set(seeds_$h \(.*\))$/\1/p" "$root/tests/fuzz/CMakeLists.txt" |
    sed -e "s|\${CMAKE_CURRENT_SOURCE_DIR}|$root/tests/fuzz|g" -e "s|\${S}|$root|g"
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
# The trace reader checks each file in a child process first (traces/contained_read.hpp); a hang
# there is cut short after 5 s instead of 30.
export SPECDEC_READ_TIMEOUT_S=${SPECDEC_READ_TIMEOUT_S:-5}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/fuzz/lsan.supp}
status=0
report=$(mktemp "$build/fuzz-report.XXXXXX")
trap 'rm -f "$report"' EXIT
printf "%-22s %12s %8s %8s %9s %10s %s\n" harness executions exec/s coverage findings contained seconds > "$report"
for h in "${harnesses[@]}"; do
  corpus="$build/corpus/$h"
  findings="$build/findings/$h"
  mkdir -p "$corpus" "$findings"
  # Seeds come in as single files too: copy them into a seed directory libFuzzer can read.
  seed_dir="$build/seeds/$h"
  rm -rf "$seed_dir"
  mkdir -p "$seed_dir"
  for s in $(seeds "$h"); do
    if [ -d "$s" ]; then
      find "$s" -type f ! -name README.md -exec cp {} "$seed_dir/" \;
    elif [ -f "$s" ]; then
      cp "$s" "$seed_dir/"
    fi
  done
  # Smoke: 3000 executions, or 60 s for the slow trace harness, whichever comes first.
  # A fixed seed: the same inputs every time, so a smoke run does not pass or fail by chance.
  if [ $smoke -eq 1 ]; then
    limit=(-runs=3000 -max_total_time=60 -seed=1)
  elif [ "$runs" -gt 0 ]; then
    limit=(-runs="$runs")
  else
    limit=(-max_total_time="$seconds")
  fi
  log="$build/fuzz-$h.log"
  start=$(date +%s)
  set +e
  "$build/tests/fuzz/$h" "${limit[@]}" -max_len=200000 -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$corpus" "$seed_dir" > "$log" 2>&1
  rc=$?
  set -e
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  # crash-, leak-, timeout- and oom- inputs; slow-unit- ones are only noted in the log.
  found=$(find "$findings" -type f ! -name 'slow-unit-*' | wc -l)
  # Sanitizer reports printed by the trace reader's child process (the parent turned each into a
  # clean error): "contained" when the faulting frame is inside libhdf5, a finding otherwise. The
  # C library's own copies (glibc's __memcpy_avx512_..., from sysdeps/) are passed over like the
  # interceptors, so a copy libhdf5 asked for is counted as libhdf5's.
  contained=0
  ours=0
  while IFS= read -r frame; do
    if [[ "$frame" == *libhdf5* ]]; then contained=$((contained + 1)); else ours=$((ours + 1)); fi
  done < <(awk '/ERROR: AddressSanitizer|runtime error:/ {want = 1}
                want && /^ *#[0-9]+ / && !/asan|sanitizer|interceptor|libclang_rt|libc\.so|sysdeps\/| in (malloc|calloc|realloc|free|mem(cpy|move|set|cmp)|str[a-z]*|operator new|operator delete)[ (]/ {print; want = 0}' "$log")
  found=$((found + ours))
  # libFuzzer's malloc limit also fires in the reader's child process, which writes an oom- input
  # while the parent carries on with a clean error: when the allocation is made inside libhdf5 (a
  # size read from a malformed file), that input is contained like the crashes above.
  if grep -q 'ERROR: libFuzzer: out-of-memory (malloc(' "$log"; then
    frame=$(awk '/ERROR: libFuzzer: out-of-memory \(malloc\(/ {want = 1}
                 want && /^ *#[0-9]+ / && !/sanitizer|fuzzer::|asan|malloc|libclang_rt/ {print; exit}' "$log")
    if [[ "$frame" == *libhdf5* ]]; then
      oom=$(find "$findings" -type f -name 'oom-*' | wc -l)
      found=$((found - oom))
      contained=$((contained + oom))
    fi
  fi
  printf "%-22s %12s %8s %8s %9s %10s %s\n" "$h" "${execs:-?}" "${speed:-?}" "${cov:-?}" "$found" "$contained" "$elapsed" >> "$report"
  if [ $rc -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "fuzz: $h: finding (exit $rc); see $log and $findings" >&2
    tail -n 30 "$log" >&2
    status=1
  fi
done
cat "$report"
exit $status
