#!/usr/bin/env bash
# The main job: install what is needed, build, make the bundled default model if it is not there
# yet, and decode a prompt with it. Extra arguments go to `specdec generate`, e.g.
#   scripts/run.sh --prompt "Once upon a time" --max-new-tokens 64 --sampling coupled --temperature 0.8
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${SPECDEC_BUILD_DIR:-$root/build}
model="$build/models/tiny"
if [ ! -f "$model/config.json" ]; then
  "$build/specdec" init-model --preset tiny --seed 0 --out "$model"
fi
if [ $# -eq 0 ]; then
  set -- --prompt "Speculative decoding is" --max-new-tokens 32
fi
"$build/specdec" generate --model "$model" "$@"
