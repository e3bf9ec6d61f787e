#!/usr/bin/env bash
# Runs a sweep on a Slurm cluster: a job array of N shards (`specdec sweep --shard I/N`, one
# results directory each, OUT-shardI) and a merge job that starts when all of them succeeded and
# writes OUT. Shards resume where they stopped, so a failed or preempted array can be resubmitted
# as is. Paths are resolved on the compute nodes: use a shared file system.
#
# Usage: scripts/sweep_slurm.sh [--wait] SPEC.json OUT_DIR N [sbatch options for both jobs...]
#   --wait   return when the merge job has finished, with its exit status
# The specdec binary is $SPECDEC, else build/specdec beside this script.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
wait=()
if [ "${1:-}" = "--wait" ]; then
  wait=(--wait)
  shift
fi
if [ $# -lt 3 ]; then
  echo "usage: scripts/sweep_slurm.sh [--wait] SPEC.json OUT_DIR N [sbatch options...]" >&2
  exit 2
fi
spec=$(realpath "$1")
out=$(realpath -m "$2")
n=$3
shift 3
case "$n" in
  '' | *[!0-9]* | 0) echo "sweep_slurm: N must be a positive integer, got '$n'" >&2; exit 2 ;;
esac
specdec=$(realpath "${SPECDEC:-$root/build/specdec}")
[ -x "$specdec" ] || { echo "sweep_slurm: $specdec is not an executable (build it, or set SPECDEC)" >&2; exit 2; }
[ -f "$spec" ] || { echo "sweep_slurm: no spec file $spec" >&2; exit 2; }
mkdir -p "$(dirname "$out")"

# \$SLURM_ARRAY_TASK_ID is expanded by each array task, not here.
array=$(sbatch --parsable "$@" --job-name=specdec-sweep --array="1-$n" --output="$out-shard%a.log" \
  --wrap="'$specdec' sweep '$spec' --out '$out-shard'\$SLURM_ARRAY_TASK_ID --shard \$SLURM_ARRAY_TASK_ID/$n")
array=${array%%;*}
shards=""
for i in $(seq 1 "$n"); do shards="$shards '$out-shard$i'"; done
echo "sweep_slurm: job array $array ($n shards)"
merge=$(sbatch --parsable "${wait[@]}" "$@" --job-name=specdec-sweep-merge --dependency="afterok:$array" \
  --kill-on-invalid-dep=yes --output="$out-merge.log" --wrap="'$specdec' sweep merge --out '$out'$shards")
echo "sweep_slurm: merge job ${merge%%;*} -> $out"
