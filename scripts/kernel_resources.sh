#!/usr/bin/env bash
# Prints, as a Markdown table, what ptxas reports for every kernel for sm_90 (registers, stack,
# spills), compiled with the project's flags. kernels/README.md holds its output.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$nvcc" -std=c++17 -arch=sm_90 --fmad=false --ftz=false --prec-div=true --prec-sqrt=true -Xptxas -v -c \
  -I"$root" "$root/kernels/cuda/launch.cu" -o "$tmp/launch.o" 2> "$tmp/ptxas.txt"
echo "| kernel | registers | stack bytes | spill stores / loads |"
echo "|---|---|---|---|"
/usr/bin/python3 - "$tmp/ptxas.txt" <<'PY'
import re, subprocess, sys
text = open(sys.argv[1]).read()
types = {"0": "F32", "1": "BF16", "2": "F16"}
for entry in re.split(r"Compiling entry function '", text)[1:]:
    mangled = entry.split("'")[0]
    name = subprocess.run(["c++filt", mangled], capture_output=True, text=True).stdout.strip()
    name = name.split(">(")[0].replace("void specdec::kernels::run_kernel<specdec::kernels::", "")
    name = re.sub(r"\(specdec::kernels::WeightType\)(\d)", lambda m: types[m.group(1)], name).rstrip(" ")
    stack = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", entry)
    regs = re.search(r"Used (\d+) registers", entry)
    print(f"| `{name}` | {regs.group(1)} | {stack.group(1)} | {stack.group(2)} / {stack.group(3)} |")
PY
