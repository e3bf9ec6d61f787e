#!/usr/bin/env bash
# Calibration without peeking, then independent evaluation.
#
#   scripts/evaluate_simulator.sh [OUT_DIR]        # SPECDEC_BUILD_DIR (default build)
#
# 1. Fits every calibration set in simulator/calibration (public measurements; only efficiency and
#    overhead terms move) and reports its in-sample and held-out (leave one source out, else leave
#    one row out) errors.
# 2. Writes the fitted hardware and engine specs under OUT_DIR/fitted/{hardware,engines}/, named as
#    the bundled specs they replace.
# 3. Predicts every reserved published result in simulator/evaluation twice: with the bundled specs
#    (priors) and with the fitted ones (--specs-dir). Nothing in simulator/evaluation is fitted; the
#    calibration loader refuses those files.
# Writes OUT_DIR/calibration.txt, OUT_DIR/evaluation_priors.{txt,json} and
# OUT_DIR/evaluation_fitted.{txt,json}; prints the two evaluation summaries last.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${SPECDEC_BUILD_DIR:-build}"
OUT="${1:-$BUILD/simulator-evaluation}"
SPECDEC="$BUILD/specdec"
[[ -x "$SPECDEC" ]] || { echo "error: $SPECDEC not found; build first (cmake --build $BUILD --target specdec)" >&2; exit 1; }
rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp/fitted/hardware" "$OUT.tmp/fitted/engines"

: > "$OUT.tmp/calibration.txt"
# Sets of one engine on one device are fitted together (--calibrate a.json,b.json): each release's
# host terms from all its rows (terms are scoped to the rows' engine_version; rows naming none fit
# the engine's own terms), each source held out in turn. The first group on a device fits its
# hardware and engine terms; a later group on the same device starts from that fitted hardware and
# fits its engine's terms alone (--fit engine). Hardware terms come from a group of dense single-GPU
# rows where there is one (the largest such): rows across tensor-parallel degrees or of
# mixture-of-experts targets add collective and routing costs that the hardware terms cannot tell
# from engine overhead. Then the largest groups first.
groups=$(/usr/bin/python3 - <<'PY'
import glob, json, os
def is_moe(model):
    path = os.path.join("simulator/specs/models", model + ".json")
    if not os.path.exists(path):
        return False
    spec = json.load(open(path))
    return any(spec.get(k, 0) for k in ("num_experts", "num_local_experts", "n_routed_experts"))
groups = {}
for f in sorted(glob.glob("simulator/calibration/*.json")):
    j = json.load(open(f))
    d = j.get("defaults", {})
    dense_single = all(int(r.get("tp", d.get("tp", 1))) == 1 and not is_moe(r.get("model", d.get("model", "")))
                       for r in j["rows"])
    g = groups.setdefault((j["hardware"], j.get("engine", "-")), {"files": [], "rows": 0, "dense_single": True})
    g["files"].append(f)
    g["rows"] += len(j["rows"])
    g["dense_single"] = g["dense_single"] and dense_single
for (hw, engine), g in sorted(groups.items(), key=lambda kv: (0 if kv[1]["dense_single"] else 1, -kv[1]["rows"], kv[1]["files"])):
    print(",".join(g["files"]), hw, engine)
PY
)
while read -r sets hw engine; do
  if [[ "$engine" == "-" ]]; then echo "error: $sets names no engine" >&2; exit 1; fi
  echo "== $sets" >> "$OUT.tmp/calibration.txt"
  fitted_hw="$OUT.tmp/fitted/hardware/$hw.json"
  args=(--calibrate "$sets" --cross-validate --engine-output "$OUT.tmp/fitted/engines/$engine.json")
  if [[ -e "$fitted_hw" ]]; then
    echo "(hardware $hw as fitted by an earlier group; this group fits engine $engine alone)" >> "$OUT.tmp/calibration.txt"
    args+=(--hardware "$fitted_hw" --fit engine)
  else
    args+=(--output "$fitted_hw")
  fi
  if [[ -e "$OUT.tmp/fitted/engines/$engine.json" ]]; then
    echo "(engine $engine was fitted on other hardware by an earlier group too; this group's fit replaces it)" >> "$OUT.tmp/calibration.txt"
  fi
  "$SPECDEC" simulate "${args[@]}" >> "$OUT.tmp/calibration.txt"
  echo >> "$OUT.tmp/calibration.txt"
done <<< "$groups"

"$SPECDEC" simulate --evaluate simulator/evaluation > "$OUT.tmp/evaluation_priors.txt"
"$SPECDEC" simulate --evaluate simulator/evaluation --json > "$OUT.tmp/evaluation_priors.json"
"$SPECDEC" simulate --evaluate simulator/evaluation --specs-dir "$OUT.tmp/fitted" > "$OUT.tmp/evaluation_fitted.txt"
"$SPECDEC" simulate --evaluate simulator/evaluation --specs-dir "$OUT.tmp/fitted" --json > "$OUT.tmp/evaluation_fitted.json"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"

grep -E '^(==|largest (held-out )?error)' "$OUT/calibration.txt"
echo
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
sets = {}
for kind in ("priors", "fitted"):
    j = json.load(open(f"{out}/evaluation_{kind}.json"))
    for s in j["sets"] + [j["all"]]:
        sets.setdefault(s["set"], {})[kind] = s
# mean |err|: how far off one prediction is on average; bias: the signed mean (> 0: too optimistic).
print(f"{'evaluation set':24}{'n':>4}{'priors: max':>13}{'mean |err|':>12}{'bias':>8}{'fitted: max':>13}{'mean |err|':>12}{'bias':>8}")
for name, k in sets.items():
    p, f = k["priors"], k["fitted"]
    print(f"{name:24}{p['results']:>4}{100*p['max_abs_relative_error']:>12.1f}%{100*p['mean_abs_relative_error']:>11.1f}%"
          f"{100*p['mean_relative_error']:>7.1f}%{100*f['max_abs_relative_error']:>12.1f}%{100*f['mean_abs_relative_error']:>11.1f}%"
          f"{100*f['mean_relative_error']:>7.1f}%")
PY
echo "wrote $OUT"
