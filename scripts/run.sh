#!/usr/bin/env bash
# The main job: install what is needed, build, and run one held-out prompt through sequential
# decoding, EAGLE and P-EAGLE on the bundled trained models (models/), side by side: output,
# acceptance length, tokens per target forward, speed, and whether the outputs agree; then what
# the acceptance measured here would buy on a GPU (scripts/projection.py: the simulator's
# predicted speedup of a published drafter of each method, with its measured error). Extra
# arguments go to `specdec compare`, e.g.
#   scripts/run.sh --methods sequential,draft,eagle,eagle3,peagle --sampling coupled --temperature 0.8
#   scripts/run.sh --prompt "def parse_args(argv):" --max-new-tokens 96
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
# Only what the main job runs: the command line (the test suites build with scripts/test.sh).
SPECDEC_BUILD_TARGETS=specdec "$root/scripts/build.sh"
build=${SPECDEC_BUILD_DIR:-$root/build}
cd "$root"
args=("$@")
given() { printf '%s\n' "${args[@]}" | grep -qE "^--($1)(=|$)"; }
# Defaults for what the arguments leave out. The prompt: the first held-out prose prompt
# (Genesis 1, never seen in training).
given 'prompt|prompt-ids' || args+=(--prompt "$(/usr/bin/python3 -c \
  "import json; print(json.load(open('experiments/train/heldout_prompts.json'))['prose'][0], end='')")")
given 'model' || args+=(--model models/target)
given 'methods' || args+=(--methods sequential,eagle,peagle)
given 'max-new-tokens' || args+=(--max-new-tokens 48)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
"$build/specdec" compare "${args[@]}" --json-file "$out" || status=$?
# What the acceptance measured here would buy on a GPU (the simulator), unless the caller asked
# for JSON or help.
if ! given 'json|help|h' && [ -s "$out" ]; then
  /usr/bin/python3 "$root/scripts/projection.py" "$build/specdec" "$out"
fi
exit "$status"
