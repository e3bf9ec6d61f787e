#!/usr/bin/env bash
# Records the golden traces (traces/golden/) on the bundled models with the reference backend:
# every method (sequential; draft LM; EAGLE-1 chain and EAGLE-2 dynamic tree; EAGLE-3 chain;
# P-EAGLE chain and tree; MTP chain and dynamic tree (SGLang's variant); Medusa chain and tree) on the first held-out prompt of each domain
# (experiments/train/heldout_prompts.json), greedy, coupled (T 0.8) and rejection sampling (T 1),
# seed 7, 32 new tokens, top-20 logit summaries. tests/models replays every one of them.
#
# Usage: scripts/record_golden.sh [OUT_DIR]   (default traces/golden; SPECDEC_BUILD_DIR as build.sh;
#        ONLY="mtp-chain medusa-tree" records those methods alone)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_BUILD_DIR:-$root/build}
out=$(realpath -m "${1:-$root/traces/golden}")
[ -x "$build/specdec" ] || "$root/scripts/build.sh"
specdec="$build/specdec"
mkdir -p "$out"
# Traces record the model paths as given: relative to the repository root, so they mean the
# same on every clone.
cd "$root"
models=models

declare -A methods=(
  [sequential]="--method sequential"
  [draft]="--method draft --drafter $models/draft --k 4"
  [eagle-chain]="--method eagle --drafter $models/eagle1 --k 4"
  [eagle-dynamic]="--method eagle --drafter $models/eagle1 --tree dynamic --depth 4 --tree-top-k 4 --total-tokens 16"
  [eagle3-chain]="--method eagle3 --drafter $models/eagle3 --k 4"
  [peagle-chain]="--method peagle --drafter $models/peagle --k 4"
  [peagle-tree]="--method peagle --drafter $models/peagle --tree mc_sim_7b_63"
  [mtp-chain]="--method mtp --drafter $models/mtp --k 4"
  [mtp-dynamic]="--method mtp,variant=sglang --drafter $models/mtp --tree dynamic --depth 4 --tree-top-k 4 --total-tokens 16"
  [medusa-chain]="--method medusa --drafter $models/medusa --k 4"
  [medusa-tree]="--method medusa --drafter $models/medusa --tree [[0],[1],[2],[0,0],[0,1],[1,0],[0,0,0],[0,0,0,0]]"
)
set -f  # the tree's brackets are not file patterns
declare -A modes=(
  [greedy]="--sampling greedy"
  [coupled]="--sampling coupled --temperature 0.8"
  [sample]="--sampling sample --temperature 1"
)
for domain in prose code; do
  prompt=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][0], end='')" \
           experiments/train/heldout_prompts.json "$domain")
  for name in ${ONLY:-"${!methods[@]}"}; do
    for mode in "${!modes[@]}"; do
      # shellcheck disable=SC2086  # the option strings are meant to split
      "$specdec" record --model "$models/target" --prompt "$prompt" ${methods[$name]} ${modes[$mode]} \
        --seed 7 --max-new-tokens 32 --threads 1 --out "$out/${name}_${domain}_${mode}.h5" > /dev/null
    done
  done
done
set +f
ls -1 "$out"/*.h5 | wc -l | xargs echo "golden traces in $out:"
du -sh "$out"
