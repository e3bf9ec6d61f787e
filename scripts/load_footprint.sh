#!/usr/bin/env bash
# Peak memory and load time of models per backend: for each model and backend, runs
#   specdec generate --model M --backend B --prompt-ids 1,2,3 --max-new-tokens 1 --threads 1
# under /usr/bin/time -v, once to warm the page cache and then --runs times (default 3), and
# prints one row: the weights' in-memory size (the reference holds fp32; the cpu backend the
# stored precision, BF16/F16 or else fp32), the largest peak RSS of the runs and its ratio to that
# size, the median wall time of load plus one token, the median load time (the wall time less
# the prefill forward that generate reports: process start, tokenizer and weights), and over the
# load time the weight file's bytes and the weights' in-memory bytes (a rate of loading from the
# page cache). The KV cache of 4 positions is negligible beside the weights.
#
# Usage: scripts/load_footprint.sh [--specdec BIN] [--backends reference,cpu] [--runs N] MODEL...
#   MODEL: a checkpoint directory, a .safetensors file or a GGUF file.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/specdec
backends=reference,cpu
runs=3
models=()
while [ $# -gt 0 ]; do
  case $1 in
    --specdec) bin=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    -*) echo "load_footprint: unknown option '$1'; expected --specdec, --backends, --runs or model paths" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]?$ ]] || { echo "load_footprint: --runs must be a count from 1 to 99, not '$runs'" >&2; exit 2; }
[ ${#models[@]} -gt 0 ] || { echo "load_footprint: give at least one model (a checkpoint directory or a GGUF file)" >&2; exit 2; }
[ -x "$bin" ] || { echo "load_footprint: $bin is not an executable; build first (scripts/build.sh) or give --specdec" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "load_footprint: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-28s %-9s %8s %11s %10s %6s %8s %8s %9s %12s\n' model backend params "weights MB" "peak MB" ratio "wall s" "load s" "file GB/s" "weights GB/s"
for m in "${models[@]}"; do
  [ -e "$m" ] || { echo "load_footprint: $m does not exist" >&2; exit 2; }
  "$bin" inspect "$m" --json > "$tmp/inspect.json"
  read -r params dtype < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["parameters"], d["config"].get("torch_dtype") or "float32")' "$tmp/inspect.json")
  file_bytes=$(du -bL --apparent-size -c "$m" | tail -1 | cut -f1)
  [ -d "$m" ] && file_bytes=$(find -L "$m" -name '*.safetensors' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  name=$(basename "$m")
  IFS=, read -ra list <<< "$backends"
  for b in "${list[@]}"; do
    case $b in
      reference) bytes_per=4 ;;
      *) case $dtype in bfloat16|float16) bytes_per=2 ;; *) bytes_per=4 ;; esac ;;
    esac
    : > "$tmp/runs.txt"
    for run in $(seq 0 "$runs"); do  # run 0 warms the page cache
      /usr/bin/time -v -o "$tmp/time.txt" "$bin" generate --model "$m" --backend "$b" --prompt-ids 1,2,3 \
        --max-new-tokens 1 --threads 1 > "$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt" >&2; exit 1; }
      [ "$run" -eq 0 ] && continue
      rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time.txt")
      wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time.txt" |
             awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
      prefill_ms=$(sed -n 's/.*prefill \([0-9.]*\) ms.*/\1/p' "$tmp/out.txt")
      echo "$rss_kb $wall ${prefill_ms:-0}" >> "$tmp/runs.txt"
    done
    sort -k2,2g "$tmp/runs.txt" | awk -v n="$name" -v b="$b" -v p="$params" -v bp="$bytes_per" -v f="$file_bytes" '
      { r[NR] = $1; w[NR] = $2; l[NR] = $2 - $3 / 1000; if ($1 > rmax) rmax = $1 }
      END {
        m = int((NR + 1) / 2)  # the median run by wall time
        wmb = p * bp / 1e6; pmb = rmax * 1024 / 1e6
        printf "%-28s %-9s %7.0fM %11.0f %10.0f %6.2f %8.2f %8.2f %9.2f %12.2f\n", substr(n, 1, 28), b, p / 1e6, wmb, pmb, pmb / wmb, w[m], l[m], f / 1e9 / l[m], wmb / 1e3 / l[m]
      }'
  done
done
