#!/usr/bin/env bash
# The plug-in SDK end to end (tests/plugin/CMakeLists.txt): install specdec into a temporary prefix,
# build examples/plugin_backend out of tree against it with find_package(specdec), then
#   specdec validate --backend plugin:libexample_plugin.so --against reference
# for every method with the bundled models (must pass, exit 0), and the example's deliberately wrong
# variant (must fail at step 0's target logits, exit 1).
# Usage: example_sdk_test.sh BUILD_DIR SOURCE_DIR SPECDEC_EXE CXX_COMPILER
set -euo pipefail
build=$1 src=$2 specdec=$3 cxx=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/specdec_plugin_sdk.XXXXXX")
trap 'rm -rf "$work"' EXIT

step() { printf '[%3ds] %s\n' "$SECONDS" "$*"; }
step "install the SDK into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" --component sdk >/dev/null
step "configure and build examples/plugin_backend against it"
cmake -S "$src/examples/plugin_backend" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" -j2 >/dev/null
plugin=$work/build/libexample_plugin.so wrong=$work/build/libexample_plugin_wrong.so
test -f "$plugin" && test -f "$wrong"

models=$src/models
common=(--model "$models/target" --against reference --prompt "In the beginning" --max-new-tokens 24 --json)
failures=0
check() {  # check EXPECTED_RC NAME ARGS...
  local expected=$1 name=$2; shift 2
  local rc=0 out
  out=$("$specdec" validate "${common[@]}" "$@" 2>&1) || rc=$?
  local result
  result=$(printf '%s' "$out" | sed -n 's/.*"result": *"\([a-z]*\)".*/\1/p' | head -1)
  step "$name: exit $rc, result ${result:-?}"
  if [ "$rc" != "$expected" ]; then
    echo "  expected exit $expected; output:"; printf '%s\n' "$out" | tail -20
    failures=$((failures + 1))
  fi
  last_out=$out
}
check 0 sequential --backend "plugin:$plugin" --method sequential
check 0 draft      --backend "plugin:$plugin" --method draft --drafter "$models/draft" --k 4
check 0 eagle      --backend "plugin:$plugin" --method eagle --drafter "$models/eagle1"
check 0 eagle3     --backend "plugin:$plugin" --method eagle3 --drafter "$models/eagle3"
check 0 peagle     --backend "plugin:$plugin" --method peagle --drafter "$models/peagle"
check 0 "eagle3 sampled" --backend "plugin:$plugin" --method eagle3 --drafter "$models/eagle3" --sampling sample \
      --temperature 0.8 --seed 7
check 1 "wrong variant" --backend "plugin:$wrong" --method sequential
# The wrong variant fails where it is wrong: the target logits of step 0.
if ! printf '%s' "$last_out" | tr -d '\n ' | grep -q '"failure":{[^}]*"step":0' ||
   ! printf '%s' "$last_out" | grep -q '"what": *"target logits"'; then
  echo "  the wrong variant's report does not name step 0's target logits:"; printf '%s\n' "$last_out" | head -40
  failures=$((failures + 1))
fi
step "done: $failures failure(s)"
[ "$failures" = 0 ]
