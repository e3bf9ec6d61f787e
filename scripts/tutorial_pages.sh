#!/usr/bin/env bash
# Writes the explain and compare pages docs/tutorial.md walks through, on the bundled models, into
# build/tutorial/ (open them in a browser), and with --screenshots re-takes the tutorial's
# screenshots (docs/tutorial/*.png) in a headless Chromium: the steps the tutorial shows, a large
# EAGLE-3 dynamic tree, the same page in an 800 px wide window, and the compare page. Run after
# scripts/build.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPECDEC_BUILD_DIR:-$root/build}
cd "$root"
out=$build/tutorial
mkdir -p "$out"
specdec=("$build/specdec" explain --model models/target --color never)
"${specdec[@]}" --method draft --drafter models/draft --k 3 --sampling sample --prompt "Hi" --html "$out/chain-sample.html" >"$out/chain-sample.txt"
"${specdec[@]}" --method eagle --drafter models/eagle1 --tree '[[0],[1],[0,0],[0,1],[1,0]]' --sampling sample --temperature 0.8 \
  --prompt "And God said" --html "$out/tree-sample.html" >"$out/tree-sample.txt"
"${specdec[@]}" --method eagle --drafter models/eagle1 --tree dynamic --depth 3 --tree-top-k 3 --total-tokens 8 --sampling coupled \
  --temperature 0.8 --prompt "And God said" --max-new-tokens 12 --html "$out/dynamic-coupled.html" >"$out/dynamic-coupled.txt"
"${specdec[@]}" --method peagle --drafter models/peagle --k 4 --prompt "And God said" --max-new-tokens 12 \
  --html "$out/peagle-greedy.html" >"$out/peagle-greedy.txt"
"${specdec[@]}" --method eagle3 --drafter models/eagle3 --tree dynamic --prompt "And God said" --max-new-tokens 24 \
  --html "$out/large-tree.html" >"$out/large-tree.txt"
"$build/specdec" compare --model models/target --prompt "And God said" --max-new-tokens 24 \
  --methods sequential,eagle,eagle3:tree=dynamic --html "$out/compare.html" >"$out/compare.txt"
echo "pages in $out"
[ "${1:-}" = "--screenshots" ] || exit 0
browser=${SPECDEC_CHROMIUM:-chromium}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
shot() {  # page, address fragment (step and node), png, window size (default 1100,720), pixels per CSS pixel (default 1)
  "$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" --hide-scrollbars \
    --window-size="${4:-1100,720}" --force-device-scale-factor="${5:-1}" --screenshot="$root/docs/tutorial/$3" "file://$out/$1#$2" 2>/dev/null
}
mkdir -p docs/tutorial
shot chain-sample.html "step=2&node=final" chain-sample.png
shot tree-sample.html "step=3&node=3" tree-residual.png
shot dynamic-coupled.html "step=1&node=1" dynamic-coupled.png
shot peagle-greedy.html "step=2&node=final" peagle.png
shot large-tree.html "step=1" large-tree.png 1000,820
shot large-tree.html "step=1" narrow.png 800,1000
shot compare.html "step=1" compare.png 1100,880 0.8  # the page is tall: smaller, to stay a small file
ls -l docs/tutorial/*.png
