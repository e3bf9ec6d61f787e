#!/usr/bin/env bash
# The acceptance table of the bundled drafters (docs/acceptance.md): AL and per-position
# acceptance of draft / eagle / eagle3 / peagle at K = 1..8, greedy and T = 1, per domain, plus
# EAGLE-2 dynamic-tree AL, from real runs on the held-out prompts. It is the sweep
# experiments/sweeps/acceptance.json, run as one shard per core and merged (each shard resumes
# where it stopped if interrupted), then analysis/sweep_table.py. Prints the table and writes
# $build/acceptance.csv; with --write it also rewrites the generated part of docs/acceptance.md.
# About 25 minutes on two busy cores (1088 runs of 64 tokens).
#
# Usage: scripts/acceptance_table.sh [--write]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_BUILD_DIR:-$root/build}
write=()
case "${1:-}" in
  --write) write=(--out docs/acceptance.md) ;;
  "") ;;
  *) echo "usage: scripts/acceptance_table.sh [--write]" >&2; exit 2 ;;
esac
[ -x "$build/specdec" ] || "$root/scripts/build.sh"
cd "$root"
shards=$(nproc)
out=$build/sweeps/acceptance
pids=()
for i in $(seq 1 "$shards"); do
  OMP_NUM_THREADS=1 "$build/specdec" sweep experiments/sweeps/acceptance.json --out "$out-shard$i" --shard "$i/$shards" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
rm -rf "$out"
"$build/specdec" sweep merge --out "$out" $(for i in $(seq 1 "$shards"); do echo "$out-shard$i"; done)
/usr/bin/python3 analysis/sweep_table.py "$out" --csv "$build/acceptance.csv" "${write[@]}"
