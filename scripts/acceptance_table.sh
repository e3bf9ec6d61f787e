#!/usr/bin/env bash
# The acceptance table of the bundled drafters (docs/acceptance.md): AL and per-position
# acceptance of draft / eagle / eagle3 / peagle at K = 1..8, greedy and T = 1, per domain, plus
# EAGLE-2 dynamic-tree AL, from real runs on the held-out prompts. Rewrites the generated part of
# docs/acceptance.md and writes $build/acceptance.csv. About 10 minutes on two cores.
#
# Usage: scripts/acceptance_table.sh [extra options of analysis/acceptance_table.py]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_BUILD_DIR:-$root/build}
[ -x "$build/specdec" ] || "$root/scripts/build.sh"
cd "$root"
/usr/bin/python3 analysis/acceptance_table.py --specdec "$build/specdec" --models models \
  --prompts experiments/train/heldout_prompts.json --out docs/acceptance.md --csv "$build/acceptance.csv" \
  --jobs "$(nproc)" "$@"
