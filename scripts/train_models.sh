#!/usr/bin/env bash
# Trains every bundled model from scratch on this machine's CPU and writes them, with the PyTorch
# cross-check file and the held-out and context prompts, into OUT_DIR (default: models/, replacing the bundled
# ones). Fixed seeds; each recipe logs its losses (train_log.csv) and writes a model card
# (README.md) with data, parameters, steps, final loss, held-out perplexity and wall time.
#
# Usage: scripts/train_models.sh [OUT_DIR]
# Environment: THREADS (torch threads per recipe, default 1), DATA (corpus directory, default
# $build/train-data).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_BUILD_DIR:-$root/build}
out=${1:-$root/models}
data=${DATA:-$build/train-data}
threads=${THREADS:-1}
py=/usr/bin/python3
train="$root/experiments/train/train.py"
"$root/scripts/setup.sh"

start=$(date +%s)
$py "$train" corpus --data "$data" > /dev/null
$py "$train" prompts --data "$data" --out "$root/experiments/train/heldout_prompts.json"
$py "$root/experiments/train/context_prompts.py" --out "$root/experiments/train/context_prompts.json"
# The draft LM does not depend on the target: train both at once.
$py "$train" target --data "$data" --out "$out/target" --threads "$threads" &
target_pid=$!
$py "$train" draft --data "$data" --out "$out/draft" --threads "$threads"
wait "$target_pid"
for head in eagle1 eagle3 peagle mtp medusa; do
  $py "$train" "$head" --data "$data" --target "$out/target" --out "$out/$head" --threads "$threads"
done
$py "$root/experiments/train/crosscheck.py" --models "$out" --data "$data" --out "$out/pytorch_reference.h5"
echo "trained every model in $(( ($(date +%s) - start) / 60 )) min; model cards: $out/*/README.md"
