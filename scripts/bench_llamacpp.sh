#!/usr/bin/env bash
# specdec's cpu backend beside llama.cpp on the same random-weight checkpoints (a benchmark, not a
# test). One command:
#   1. llama.cpp: builds the copy that PyPI's llama-cpp-python source distribution vendors
#      (pinned version, sha256 checked; CPU only, Release, GGML_NATIVE) into build/llamacpp/, or
#      uses an existing build named by LLAMACPP_DIR; compiles scripts/bench_llamacpp/all_rows.cpp
#      against it;
#   2. a Python virtual environment (build/llamacpp/venv) with the pinned `gguf` package, numpy and
#      h5py;
#   3. per model: `specdec init-model` writes the preset as a checkpoint (llama-0.5b in F32,
#      llama-1b in BF16, seed 0); scripts/bench_llamacpp/convert_to_gguf.py turns it into a GGUF
#      at the same precision, and a check compares the two programs' logits on one prompt;
#   4. alternates the two programs in rounds (the order flips every round), each side's figure per
#      round being its best of --repeat runs, as `specdec bench` takes it:
#        decode tokens/s       specdec bench --methods sequential (decode after a 16-token prompt)
#                              llama-bench -p 0 -n 32 -d 16 (tg32 at depth 16, best sample)
#        8-token forward ms    specdec bench's verify cost at 8 tokens (logits of every row)
#                              all_rows: llama_decode of 8 tokens after 16, logits of every row
#                              llama-bench -p 8 -d 16 (pp8: logits of the last row only)
#        T=8 / T=1             the same two programs at 1 and 8 tokens
#   5. prints a markdown table (medians over rounds, [min–max]) with the date, the CPU, each side's
#      instruction set, and writes it with every raw number to --out (results.md, results.json).
#
# Usage: scripts/bench_llamacpp.sh [options]
#   --rounds N       rounds of the two programs (default 7)
#   --threads N      threads of both programs (default 2)
#   --repeat N       runs per figure in a round, the best counts (default 3)
#   --models LIST    0.5b (llama-0.5b, F32) and/or 1b (llama-1b, BF16) (default 0.5b,1b)
#   --out DIR        results.md, results.json, raw.jsonl (default build/llamacpp/results)
#   --quick          one round, for trying it
#   --prepare-only   build, convert and check, measure nothing
#   -h, --help       this text
# Environment:
#   LLAMACPP_DIR       use this llama.cpp build instead of building one: a CMake build folder
#                      (bin/llama-bench, its libllama, CMakeCache.txt leading to llama.h) or an
#                      install prefix (bin/llama-bench, lib/libllama.so, include/llama.h)
#   LLAMACPP_CACHE     where downloads, builds, the venv and models go (default build/llamacpp)
#   LLAMACPP_JOBS      parallel jobs of the llama.cpp build (default 2)
#   SPECDEC_BUILD_DIR  the specdec build (default build)
#   PYTHON             the interpreter the venv is made from (default /usr/bin/python3)
# Needs: network on the first run (PyPI), cmake and a C++ compiler, about 9 GB of disk.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
here=$root/scripts/bench_llamacpp

# Pins. The sdist's hash is PyPI's sha256 of llama_cpp_python-$LCP_VERSION.tar.gz.
LCP_VERSION=0.3.36
LCP_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
PY_PINS="gguf==0.19.0 numpy==2.2.6 h5py==3.13.0"

rounds=7
threads=2
repeat=3
models=0.5b,1b
out=""
prepare_only=0

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}
die() { echo "bench_llamacpp: $*" >&2; exit 1; }
say() { echo "bench_llamacpp: $*" >&2; }

while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --threads) threads=${2:?--threads needs a number}; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a number}; shift 2 ;;
    --models) models=${2:?--models needs a list}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --quick) rounds=1; shift ;;
    --prepare-only) prepare_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (--help lists the options)" ;;
  esac
done
for v in rounds threads repeat; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--$v must be a positive whole number, not '${!v}'"
done

cache=${LLAMACPP_CACHE:-$root/build/llamacpp}
specdec_build=${SPECDEC_BUILD_DIR:-$root/build}
specdec=$specdec_build/specdec
out=${out:-$cache/results}
mkdir -p "$cache"

[ -x "$specdec" ] || die "no specdec at $specdec: build it first (scripts/build.sh, or cmake --build build --target specdec), or set SPECDEC_BUILD_DIR"

# --- the models: preset, stored dtype, label --------------------------------------------------
declare -a presets=() dtypes=() labels=()
IFS=, read -ra wanted <<< "$models"
for m in "${wanted[@]}"; do
  case $m in
    0.5b|llama-0.5b) presets+=(llama-0.5b); dtypes+=(F32); labels+=("0.5B F32") ;;
    1b|llama-1b) presets+=(llama-1b); dtypes+=(BF16); labels+=("1B BF16") ;;
    *) die "--models: '$m' is not one of 0.5b, 1b" ;;
  esac
done
[ ${#presets[@]} -gt 0 ] || die "--models names no model"

# --- the Python environment -------------------------------------------------------------------
venv=$cache/venv
base_python=${PYTHON:-/usr/bin/python3}
[ -x "$base_python" ] || base_python=$(command -v python3 || true)
[ -n "$base_python" ] || die "no python3 to make the virtual environment from (set PYTHON)"
if [ "$(cat "$venv/.complete" 2>/dev/null)" != "$PY_PINS" ]; then
  say "making the Python environment $venv ($PY_PINS)"
  rm -rf "$venv"
  "$base_python" -m venv "$venv" \
    || die "$base_python could not make a virtual environment (Debian: apt-get install python3-venv)"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install --quiet --no-input $PY_PINS >&2 \
    || die "pip could not install $PY_PINS into $venv (no network?)"
  echo "$PY_PINS" > "$venv/.complete"
fi
py=$venv/bin/python

# --- llama.cpp --------------------------------------------------------------------------------
# Sets llama_bench, llama_inc (include flags), llama_libdir, llama_origin.
find_llamacpp_in() {
  local d=$1 src=""
  llama_bench=""
  for c in "$d/bin/llama-bench" "$d/llama-bench"; do
    if [ -x "$c" ]; then llama_bench=$c; break; fi
  done
  [ -n "$llama_bench" ] || die "LLAMACPP_DIR=$d holds no bin/llama-bench (build llama.cpp's llama-bench target there, or unset LLAMACPP_DIR to build the pinned copy)"
  llama_libdir=""
  for c in "$d/bin" "$d/lib" "$d/lib64" "$d/src" "$d"; do
    if ls "$c"/libllama.so* > /dev/null 2>&1 || [ -f "$c/libllama.a" ]; then llama_libdir=$c; break; fi
  done
  [ -n "$llama_libdir" ] || die "LLAMACPP_DIR=$d: no libllama.so or libllama.a under bin/, lib/, lib64/ or src/"
  if [ -f "$d/include/llama.h" ]; then
    llama_inc="-I$d/include"
  elif [ -f "$d/CMakeCache.txt" ]; then
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$d/CMakeCache.txt")
    [ -f "$src/include/llama.h" ] || die "LLAMACPP_DIR=$d: its source tree ($src) has no include/llama.h"
    llama_inc="-I$src/include -I$src/ggml/include"
  else
    die "LLAMACPP_DIR=$d: no include/llama.h and no CMakeCache.txt to find the sources by"
  fi
}

build_llamacpp() {
  local dl=$cache/download sdist=llama_cpp_python-$LCP_VERSION.tar.gz
  local src=$cache/src/llama_cpp_python-$LCP_VERSION bdir=$cache/llama.cpp-$LCP_VERSION
  if [ -f "$bdir/.complete" ]; then
    find_llamacpp_in "$bdir"
    llama_origin="llama-cpp-python $LCP_VERSION sdist (vendor/llama.cpp), built here"
    return
  fi
  mkdir -p "$dl" "$cache/src"
  if [ ! -f "$dl/$sdist" ]; then
    say "downloading the llama-cpp-python $LCP_VERSION source distribution (about 75 MB)"
    printf 'llama-cpp-python==%s --hash=sha256:%s\n' "$LCP_VERSION" "$LCP_SHA256" > "$dl/requirements.txt"
    if ! "$venv/bin/pip" download --quiet --no-binary llama-cpp-python --no-deps --require-hashes \
           -r "$dl/requirements.txt" -d "$dl" >&2; then
      die "pip could not download llama-cpp-python==$LCP_VERSION (no network, or no PyPI?).
  Put the sdist at $dl/$sdist by hand, or point LLAMACPP_DIR at an existing llama.cpp build
  (a CMake build folder with bin/llama-bench and its libllama, or an install prefix with include/llama.h)."
    fi
  fi
  echo "$LCP_SHA256  $dl/$sdist" | sha256sum --check --quiet - \
    || die "$dl/$sdist does not have the pinned sha256 $LCP_SHA256; delete it to download again"
  if [ ! -f "$src/.extracted" ]; then
    rm -rf "$src"
    tar -xzf "$dl/$sdist" -C "$cache/src"
    [ -f "$src/vendor/llama.cpp/CMakeLists.txt" ] || die "$sdist has no vendor/llama.cpp"
    touch "$src/.extracted"
  fi
  command -v cmake > /dev/null || die "cmake is needed to build llama.cpp"
  say "building llama.cpp (llama-bench and libllama; CPU, Release, GGML_NATIVE) in $bdir; this takes a while"
  cmake -S "$src/vendor/llama.cpp" -B "$bdir" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_RPC=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    > "$cache/llama.cpp-configure.log" 2>&1 \
    || die "configuring llama.cpp failed; see $cache/llama.cpp-configure.log"
  cmake --build "$bdir" --target llama-bench llama -j "${LLAMACPP_JOBS:-2}" > "$cache/llama.cpp-build.log" 2>&1 \
    || die "building llama.cpp failed; see $cache/llama.cpp-build.log"
  touch "$bdir/.complete"
  find_llamacpp_in "$bdir"
  llama_origin="llama-cpp-python $LCP_VERSION sdist (vendor/llama.cpp), built here"
}

if [ -n "${LLAMACPP_DIR:-}" ]; then
  [ -d "$LLAMACPP_DIR" ] || die "LLAMACPP_DIR=$LLAMACPP_DIR is not a directory"
  find_llamacpp_in "$(cd "$LLAMACPP_DIR" && pwd)"
  llama_origin="LLAMACPP_DIR"
else
  build_llamacpp
fi

# all_rows, compiled against that llama.cpp (one binary per llama.cpp, remade when either changes).
all_rows=$cache/bin/all_rows-$(echo "$llama_libdir" | sha256sum | cut -c1-12)
mkdir -p "$cache/bin"
lib_file=$llama_libdir/libllama.so
[ -e "$lib_file" ] || lib_file=$llama_libdir/libllama.a
if [ ! -x "$all_rows" ] || [ "$here/all_rows.cpp" -nt "$all_rows" ] || [ "$lib_file" -nt "$all_rows" ]; then
  say "compiling all_rows against $llama_libdir"
  if [ "${lib_file##*.}" = a ]; then
    link=("$llama_libdir/libllama.a")
    for l in ggml ggml-cpu ggml-base; do
      f=$(find "$(dirname "$llama_libdir")" -name "lib$l.a" -print -quit)
      if [ -n "$f" ]; then link+=("$f"); fi
    done
    link+=(-fopenmp -lpthread -ldl)
  else
    link=("-L$llama_libdir" -lllama "-Wl,-rpath,$llama_libdir")
  fi
  defs=()
  for inc in $llama_inc; do
    if grep -qs "enum llama_load_mode" "${inc#-I}/llama.h"; then defs+=(-DALL_ROWS_LOAD_MODE); fi
  done
  # shellcheck disable=SC2086
  ${CXX:-g++} -O2 -std=c++17 "${defs[@]}" $llama_inc "$here/all_rows.cpp" -o "$all_rows.tmp" "${link[@]}" \
    || die "compiling $here/all_rows.cpp against $llama_libdir failed"
  mv "$all_rows.tmp" "$all_rows"
fi

# llama-bench reads the weights into memory as all_rows does: -lm none (-mmp 0 in older versions).
bench_help=$("$llama_bench" --help 2>&1 || true)
if [[ $bench_help == *--load-mode* ]]; then no_mmap=(-lm none); else no_mmap=(-mmp 0); fi

# --- checkpoints, GGUFs and the same-model check ----------------------------------------------
check_ids=$(seq -s, 11 26)  # 16 token ids
for i in "${!presets[@]}"; do
  p=${presets[$i]} d=${dtypes[$i]}
  ckpt=$cache/models/$p-$d
  gguf=$cache/models/$p-$d.gguf
  mkdir -p "$cache/models"
  if [ ! -f "$ckpt/config.json" ]; then
    say "writing $p ($d, seed 0) as a checkpoint"
    rm -rf "$ckpt"
    "$specdec" init-model --preset "$p" --dtype "$d" --seed 0 --out "$ckpt" >&2
  fi
  if [ ! -f "$gguf" ] || [ "$here/convert_to_gguf.py" -nt "$gguf" ] || [ "$ckpt/config.json" -nt "$gguf" ]; then
    say "converting $ckpt to GGUF"
    rm -f "$ckpt.checked"
    "$py" "$here/convert_to_gguf.py" "$ckpt" "$gguf.tmp" --name "specdec $p $d seed 0" >&2
    mv "$gguf.tmp" "$gguf"
  fi
  if [ ! -f "$ckpt.checked" ] || [ "$gguf" -nt "$ckpt.checked" ] || [ "$all_rows" -nt "$ckpt.checked" ]; then
    say "checking that $p is the same model in both programs (logits of a 16-token prompt)"
    "$specdec" forward --model "$ckpt" --backend cpu --threads "$threads" --prompt-ids "$check_ids" \
      --out "$cache/models/$p-$d.specdec-logits.h5" > /dev/null
    "$all_rows" --model "$gguf" --threads "$threads" --prompt-ids "$check_ids" \
      --logits-out "$cache/models/$p-$d.llamacpp-logits.f32" > /dev/null
    "$py" "$here/report.py" check "$cache/models/$p-$d.specdec-logits.h5" \
      "$cache/models/$p-$d.llamacpp-logits.f32" "$d" > "$ckpt.check.tmp" \
      || { cat "$ckpt.check.tmp" >&2; die "$p: the GGUF does not compute the same model as the checkpoint"; }
    cat "$ckpt.check.tmp" >&2
    mv "$ckpt.check.tmp" "$ckpt.checked"
  fi
done

if [ "$prepare_only" = 1 ]; then
  say "prepared: llama-bench $llama_bench, all_rows $all_rows, models under $cache/models"
  exit 0
fi

# --- the rounds -------------------------------------------------------------------------------
mkdir -p "$out"
raw=$out/raw.jsonl.tmp
: > "$raw"
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
run_specdec() {  # model-index round
  local i=$1 r=$2 p=${presets[$1]} d=${dtypes[$1]} j
  j=$("$specdec" bench --model "$cache/models/$p-$d" --backends cpu --methods sequential \
        --threads "$threads" --repeat "$repeat" --max-verify 8 --json 2> /dev/null) \
    || die "specdec bench failed on $p (run: $specdec bench --model $cache/models/$p-$d --backends cpu --methods sequential)"
  printf '{"side":"specdec","model":"%s","round":%d,"bench":%s}\n' "$p" "$r" "$(echo "$j" | tr -d '\n')" >> "$raw"
}
run_llamacpp() {
  local i=$1 r=$2 p=${presets[$1]} d=${dtypes[$1]} lb ar
  local gguf=$cache/models/$p-$d.gguf
  lb=$("$llama_bench" -m "$gguf" "${no_mmap[@]}" -t "$threads" -p 8 -n 32 -d 16 -r "$repeat" -o json 2> "$out/llama-bench.stderr") \
    || { cat "$out/llama-bench.stderr" >&2; die "llama-bench failed on $gguf"; }
  ar=$("$all_rows" --model "$gguf" --threads "$threads" --prompt 16 --tokens 1,8 --repeat "$repeat" 2> "$out/all_rows.stderr") \
    || { cat "$out/all_rows.stderr" >&2; die "all_rows failed on $gguf"; }
  printf '{"side":"llama.cpp","model":"%s","round":%d,"llama_bench":%s,"all_rows":%s}\n' "$p" "$r" \
    "$(echo "$lb" | tr -d '\n')" "$(echo "$ar" | tr -d '\n')" >> "$raw"
}
for ((r = 0; r < rounds; r++)); do
  for i in "${!presets[@]}"; do
    say "round $((r + 1))/$rounds: ${presets[$i]}"
    if ((r % 2 == 0)); then run_specdec "$i" "$r"; run_llamacpp "$i" "$r"
    else run_llamacpp "$i" "$r"; run_specdec "$i" "$r"; fi
  done
done
mv "$raw" "$out/raw.jsonl"
rm -f "$out/llama-bench.stderr" "$out/all_rows.stderr"

load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
"$py" "$here/report.py" table --raw "$out/raw.jsonl" --out "$out" --threads "$threads" --repeat "$repeat" \
  --cpu "${cpu:-unknown}" --cores "$(nproc)" --load "$load_before" "$load_after" --llamacpp "$llama_origin" \
  --models "$(IFS=,; echo "${presets[*]}")" --labels "$(IFS=,; echo "${labels[*]}")"
