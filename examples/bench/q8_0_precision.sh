#!/usr/bin/env bash
# The fast precision's error on a GGUF with Q8_0 dense tensors, against llama.cpp's on the same
# file (docs/performance.md, "Q8_0 times int8"):
#
#   examples/bench/q8_0_precision.sh LLAMA_SOURCE_DIR LLAMA_BUILD_DIR
#
# Requantizes the logits conformance set's model with llama.cpp's own llama-quantize (MXFP4_MOE:
# the experts kept as they are, every other 2-D tensor but the router in Q8_0) into a copy of
# the set, runs gptoss-conformance logits on that copy in both precisions, then llama.cpp on the
# same file (llama_logits.cpp, built here against LLAMA_BUILD_DIR's libllama), and prints per
# prompt the top-1 agreement, mean |d| and max |d| against the float64 reference at the
# manifest's positions. gptoss-conformance's verdicts compare with llama.cpp on the BF16 file (its
# manifest's figures); the llama.cpp lines printed after them are the yardstick for this file.
# Environment: GPTOSS_BUILD (default build/ of this checkout), CONFORMANCE (default
# ../shared/conformance/logits), TOKENIZER_JSON (default third_party/tokenizer/tokenizer.json),
# GPTOSS_CPU_ISA (the level to measure, as everywhere).
set -euo pipefail

if [ $# -ne 2 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
llama_src=$1
llama_bin=$2
[ -d "$llama_bin/bin" ] && llama_bin=$llama_bin/bin
gptoss_bin=${GPTOSS_BUILD:-$repo/build}/bin
conf=${CONFORMANCE:-$repo/../shared/conformance/logits}
tok=${TOKENIZER_JSON:-$repo/third_party/tokenizer/tokenizer.json}

[ -f "$llama_src/include/llama.h" ] || { echo "q8_0_precision.sh: $llama_src/include/llama.h: not found (LLAMA_SOURCE_DIR)" >&2; exit 1; }
for f in "$llama_bin/llama-quantize" "$gptoss_bin/gptoss-conformance"; do
  [ -x "$f" ] || { echo "q8_0_precision.sh: $f: not found or not executable" >&2; exit 1; }
done
lib=$(find "$llama_bin" "$llama_bin/.." -maxdepth 2 -name 'libllama.so' -print -quit)
[ -n "$lib" ] || { echo "q8_0_precision.sh: no libllama.so under $llama_bin (build llama.cpp with shared libraries)" >&2; exit 1; }
libdir=$(dirname "$lib")
for f in "$conf/manifest.json" "$conf/model.gguf" "$tok"; do
  [ -f "$f" ] || { echo "q8_0_precision.sh: $f: not found" >&2; exit 1; }
done
command -v python3 > /dev/null || { echo "q8_0_precision.sh: needs python3" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/set"
for f in "$conf"/*; do ln -s "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$work/set/"; done
rm "$work/set/model.gguf"
"$llama_bin/llama-quantize" "$conf/model.gguf" "$work/set/model.gguf" MXFP4_MOE > "$work/quantize.log" 2>&1 ||
  { cat "$work/quantize.log" >&2; exit 1; }
echo "the set's model requantized to Q8_0 dense tensors (MXFP4_MOE) by llama-quantize"
g++ -O2 -std=c++17 "$repo/examples/bench/llama_logits.cpp" -I"$llama_src/include" -I"$llama_src/ggml/include" \
  -L"$libdir" -lllama -Wl,-rpath,"$libdir" -o "$work/llama_logits"

for precision in exact fast; do
  echo "gptoss ($precision precision):"
  "$gptoss_bin/gptoss-conformance" logits --tokenizer-json "$tok" --format gguf --precision "$precision" "$work/set" |
    grep -E 'prefill' || true
done
echo "llama.cpp on the same file:"
python3 - "$work" "$conf" <<'PY'
import json, struct, subprocess, sys
work, conf = sys.argv[1], sys.argv[2]
m = json.load(open(f"{conf}/manifest.json"))
V = m["vocab_size"]
for p in m["prompts"]:
    pos = p["positions"]
    subprocess.run([f"{work}/llama_logits", f"{work}/set/model.gguf", f"{conf}/{p['ids']}", f"{work}/l.f32"]
                   + [str(x) for x in pos], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ll, ref = open(f"{work}/l.f32", "rb").read(), open(f"{conf}/{p['ref']}", "rb").read()
    agree, dsum, dmax = 0, 0.0, 0.0
    for r in range(len(pos)):
        a, b = struct.unpack_from(f"{V}f", ll, 4 * V * r), struct.unpack_from(f"{V}f", ref, 4 * V * r)
        agree += max(range(V), key=a.__getitem__) == max(range(V), key=b.__getitem__)
        d = [abs(x - y) for x, y in zip(a, b)]
        dsum, dmax = dsum + sum(d), max(dmax, max(d))
    print(f"llama.cpp {p['name']:<10} top-1 {agree / len(pos):.3f}, mean|d| {dsum / (V * len(pos)):.3g}, max|d| {dmax:.3g}")
PY
