#!/usr/bin/env bash
# Reference decode speed: sequential greedy decoding of 64 tokens after a 16-token prompt on the
# bundled default model and on a random ~100M-parameter Llama shape. Prints a markdown table.
# Usage: scripts/bench_reference.sh [threads]   (default: all cores)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_BUILD_DIR:-$root/build}
threads=${1:-$(nproc)}
[ -x "$build/specdec" ] || "$root/scripts/build.sh"
prompt=$(seq -s, 10 25)  # 16 token ids
echo "| model | parameters | threads | decode tokens/s |"
echo "|---|---|---|---|"
for preset in tiny llama-100m; do
  model="$build/models/$preset"
  mkdir -p "$build/models"
  [ -f "$model/config.json" ] || "$build/specdec" init-model --preset "$preset" --seed 0 --out "$model" > /dev/null
  params=$("$build/specdec" inspect "$model" --json | /usr/bin/python3 -c 'import json,sys; print("%.1f M" % (json.load(sys.stdin)["parameters"]/1e6))')
  tps=$("$build/specdec" generate --model "$model" --prompt-ids "$prompt" --max-new-tokens 64 --ignore-eos \
          --threads "$threads" --json | /usr/bin/python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["timing"]["decode_tokens_per_second"])')
  echo "| \`$preset\` | $params | $threads | $tps |"
done
