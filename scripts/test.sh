#!/usr/bin/env bash
# Install what is needed, build, and run the cpu test suite (GPU tests need a GPU: ctest -L gpu; the
# cross-library tests in it make their pinned PyPI environment once, scripts/pyenv.sh);
# then the I/O, decoding and fuzz regression tests again under ASan+UBSan (scripts/sanitize.sh),
# and a short run of every libFuzzer harness (scripts/fuzz.sh --smoke).
# SPECDEC_QUICK=1 runs the cpu suite only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Each stage's wall time, printed as it ends and again at the end.
stages=()
stage_start=$SECONDS
stage() {  # stage NAME: closes the stage that ran since the last call
  local took=$((SECONDS - stage_start))
  stages+=("$(printf '%-34s %4d min %02d s' "$1" $((took / 60)) $((took % 60)))")
  echo "== stage '$1' took $((took / 60)) min $((took % 60)) s"
  stage_start=$SECONDS
}
summary() {
  echo "== stage times"
  printf '   %s\n' "${stages[@]}"
}
trap summary EXIT
"$root/scripts/setup.sh"
stage "setup (Debian packages)"
"$root/scripts/build.sh"
stage "build"
build=${SPECDEC_BUILD_DIR:-$root/build}
ctest --test-dir "$build" -L cpu --output-on-failure -j "$(nproc)"
stage "cpu test suite (ctest -L cpu)"
[ "${SPECDEC_QUICK:-0}" = 1 ] && exit 0

echo "== the I/O, decoding and fuzz regression tests under ASan+UBSan"
SPECDEC_SANITIZE_TARGETS="test_traces test_safetensors test_model_config test_checkpoint test_sequential \
test_speculative test_batched test_eagle_methods test_acceptance test_sampling fuzz_safetensors_replay fuzz_model_config_replay \
fuzz_drafter_config_replay fuzz_tree_choices_replay fuzz_vocabulary_replay fuzz_trace_replay test_tokenizers fuzz_tokenizer_replay \
fuzz_candidate_trace_replay fuzz_sweep_spec_replay fuzz_simulator_spec_replay test_gguf fuzz_gguf_replay" \
  "$root/scripts/sanitize.sh"
stage "sanitizer build and tests"
echo "== fuzz smoke run (libFuzzer, ASan+UBSan)"
"$root/scripts/fuzz.sh" --smoke
stage "fuzz smoke run"
