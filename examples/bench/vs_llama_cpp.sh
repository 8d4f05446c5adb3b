#!/usr/bin/env bash
# gptoss-bench against llama.cpp on the same GGUF, the two alternated in one run (this VM's
# memory bandwidth drifts from one minute to the next, so only alternated pairs compare):
#
#   examples/bench/vs_llama_cpp.sh LLAMA_BUILD_DIR [MODEL.gguf]
#
# Per round: llama-bench (pp512, tg64) with the read test just before and after it, then
# gptoss-bench -p 512 -n 64 (which runs the read test beside its decode itself), then
# llama-batched-bench -npp 16 -ntg 32 -npl 8 against gptoss-bench -p 16 -n 32 -b 8. Prints the
# table of docs/performance.md ("gptoss against llama.cpp"): llama.cpp | gptoss | ratio, and
# each decode as a share of the read bandwidth measured beside it, and gptoss's decode as a
# share of pure loads of its bytes timed after every token (gptoss-bench --read-probe: the
# read test beside a run holds the run's mean against its best minute, and this VM's bandwidth
# moves 2x within minutes; left out where the probe fails). llama-bench's tg64 starts
# from an empty context while gptoss-bench's follows its 512-token prompt, so a further row
# compares the two at the same depth (llama-bench -p 0 -n 64 -d 512; left out where that
# llama-bench has no -d).
#
# MODEL defaults to the synthetic gpt-oss-20b with Q8_0 dense tensors (random weights, real
# shapes, 12.1 GB), made once with gptoss-make-model under $GPTOSS_BENCH_MODELS (default
# ~/.cache/gptoss-bench) and reused. Environment: GPTOSS_BUILD (default: build/ of this
# checkout), THREADS (2), ROUNDS (2), TOKENIZER_JSON (the one gptoss-make-model embeds;
# default third_party/tokenizer/tokenizer.json), RAW (a folder to keep every tool's output in;
# RAW/table.md holds the table over the rounds done so far, after each round). GPTOSS_CPU_ISA
# passes through to gptoss-bench: GPTOSS_CPU_ISA=avx2 against a llama.cpp built with
# -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF compares the two on AVX2 alone.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
llama_bin=$1
[ -d "$llama_bin/bin" ] && llama_bin=$llama_bin/bin
gptoss_bin=${GPTOSS_BUILD:-$repo/build}/bin
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
model=${2:-${GPTOSS_BENCH_MODELS:-$HOME/.cache/gptoss-bench}/synthetic-20b-q8_0/model.gguf}

for tool in "$llama_bin/llama-bench" "$llama_bin/llama-batched-bench" "$gptoss_bin/gptoss-bench"; do
  [ -x "$tool" ] || { echo "vs_llama_cpp.sh: $tool: not found or not executable" >&2; exit 1; }
done
command -v python3 > /dev/null || { echo "vs_llama_cpp.sh: needs python3 (to read the tools' JSON)" >&2; exit 1; }
case "$threads$rounds" in *[!0-9]*) echo "vs_llama_cpp.sh: THREADS and ROUNDS must be numbers" >&2; exit 2 ;; esac
[ "$rounds" -ge 1 ] || { echo "vs_llama_cpp.sh: ROUNDS must be at least 1" >&2; exit 2; }

if [ ! -f "$model" ]; then
  if [ $# -eq 2 ]; then echo "vs_llama_cpp.sh: $model: no such file" >&2; exit 1; fi
  tok=${TOKENIZER_JSON:-$repo/third_party/tokenizer/tokenizer.json}
  [ -f "$tok" ] || { echo "vs_llama_cpp.sh: $tok: no tokenizer.json to embed (set TOKENIZER_JSON)" >&2; exit 1; }
  [ -x "$gptoss_bin/gptoss-make-model" ] || { echo "vs_llama_cpp.sh: $gptoss_bin/gptoss-make-model: not built" >&2; exit 1; }
  echo "making $model (synthetic 20b, Q8_0 dense tensors; once) ..." >&2
  "$gptoss_bin/gptoss-make-model" --preset 20b --format gguf --gguf-dense q8_0 \
    --tokenizer-json "$tok" --out "$(dirname "$model")" >&2
fi

raw=${RAW:-$(mktemp -d)}
mkdir -p "$raw"
echo "raw output in $raw" >&2
read_bw() { "$gptoss_bin/gptoss-bench" --read-bw -t "$threads" -o json; }

# Every tool's command, as run (printed with the table).
cmd_lb=("$llama_bin/llama-bench" -m "$model" -p 512 -n 64 -t "$threads" -r 1 -o json)
cmd_gb=("$gptoss_bin/gptoss-bench" -m "$model" -p 512 -n 64 -t "$threads" -r 1 -o json)
cmd_gp=("$gptoss_bin/gptoss-bench" --read-probe -m "$model" -n 32 -t "$threads" -o json)
cmd_lbd=("$llama_bin/llama-bench" -m "$model" -p 0 -n 64 -d 512 -t "$threads" -r 1 -o json)
cmd_lbb=("$llama_bin/llama-batched-bench" -m "$model" -c 1024 -npp 16 -ntg 32 -npl 8 -t "$threads" -tb "$threads"
         --output-format jsonl)
cmd_gbb=("$gptoss_bin/gptoss-bench" -m "$model" -p 16 -n 32 -b 8 -t "$threads" -r 1 -o json)

# The table over rounds 1..$1 (after each round into $raw/table.md: a cut-short run keeps its rounds).
summarize() {
  python3 - "$raw" "$1" "${cmd_lb[*]}" "${cmd_lbd[*]}" "${cmd_gb[*]}" "${cmd_gp[*]}" "${cmd_lbb[*]}" \
    "${cmd_gbb[*]}" <<'EOF'
import json, os, sys

raw, rounds = sys.argv[1], int(sys.argv[2])
cmds = sys.argv[3:9]

def load(path):
    with open(path) as f:
        return json.load(f)

def jsonl_last(path):  # llama-batched-bench: one JSON object per line, among log lines
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith('{"n_kv_max"'):
                rows.append(json.loads(line))
    if not rows:
        sys.exit(f"vs_llama_cpp.sh: no result line in {path}")
    return rows[-1]

rows = {k: ([], []) for k in ("pp", "tg", "tgd", "pct", "probe", "b8")}
for r in range(1, rounds + 1):
    lb = load(f"{raw}/r{r}-llama-bench.json")
    l_pp = next(t["avg_ts"] for t in lb if t["n_prompt"] > 0 and t["n_gen"] == 0)
    l_tg = next(t["avg_ts"] for t in lb if t["n_gen"] > 0 and t["n_prompt"] == 0)
    bw = max(load(f"{raw}/r{r}-llama-bw-{w}.json")["read_bandwidth_gbs"] for w in ("before", "after"))
    gb = load(f"{raw}/r{r}-gptoss-bench.json")
    # Bytes a decode token reads: the weights as stored (the same file for both) plus the KV
    # cache at this context (gptoss-bench's count; llama.cpp's f16 cache reads a little less).
    l_pct = 100.0 * l_tg * gb["decode_bytes_per_token"] / 1e9 / bw
    lbb = jsonl_last(f"{raw}/r{r}-llama-batched.jsonl")
    gbb = load(f"{raw}/r{r}-gptoss-batched.json")
    depth = f"{raw}/r{r}-llama-bench-depth.json"
    if os.path.exists(depth) and os.path.getsize(depth) > 0:
        l_tgd = next(t["avg_ts"] for t in load(depth) if t["n_gen"] > 0)
        rows["tgd"][0].append(l_tgd)
        rows["tgd"][1].append(gb["decode_tok_s"]["mean"])
    probe = f"{raw}/r{r}-gptoss-probe.json"
    if os.path.exists(probe) and os.path.getsize(probe) > 0:
        p = load(probe)
        rows["probe"][1].append(100.0 * p["decode_gbs"] / max(p["buffer_gbs"], p["model_files_gbs"]))
    for key, l, g in (("pp", l_pp, gb["prefill_tok_s"]["mean"]), ("tg", l_tg, gb["decode_tok_s"]["mean"]),
                      ("pct", l_pct, gb["bandwidth_pct"]["mean"]), ("b8", lbb["speed_tg"], gbb["batched_decode_tok_s"])):
        rows[key][0].append(l)
        rows[key][1].append(g)
    print(f"round {r}: llama.cpp pp512 {l_pp:.2f} tg64 {l_tg:.2f} ({l_pct:.0f} % of {bw:.1f} GB/s) "
          f"8 seq {lbb['speed_tg']:.2f} | gptoss pp512 {gb['prefill_tok_s']['mean']:.2f} "
          f"tg64 {gb['decode_tok_s']['mean']:.2f} ({gb['bandwidth_pct']['mean']:.0f} % of "
          f"{gb['bandwidth_gbs']:.1f} GB/s) 8 seq {gbb['batched_decode_tok_s']:.2f}")

def span(v, fmt="{:.2f}"):
    lo, hi = min(v), max(v)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else fmt.format(lo) + "–" + fmt.format(hi)

print()
print("| | llama.cpp | gptoss | ratio |")
print("| --- | ---: | ---: | ---: |")
names = {"pp": "prefill pp512 tok/s", "tg": "decode tg64 tok/s",
         "tgd": "decode tg64 at the same depth, after 512 tokens (llama-bench `-d 512`)",
         "b8": "8 sequences decoding, aggregate tok/s (`-npp 16 -ntg 32 -npl 8` / `-p 16 -n 32 -b 8`)"}
for key in ("pp", "tg", "tgd", "b8"):
    l, g = rows[key]
    if not l:
        continue
    ratio = [gi / li for li, gi in zip(l, g)]  # each round's own pair
    print(f"| {names[key]} | {span(l)} | {span(g)} | {span(ratio, '{:.2f}')}× |")
l, g = rows["pct"]
print(f"| decode as % of the read test beside it | {span(l, '{:.0f}')} % | {span(g, '{:.0f}')} % | |")
if rows["probe"][1]:
    print(f"| decode as % of pure loads of its bytes after every token (read probe, the faster of its"
          f" two memories) | | {span(rows['probe'][1], '{:.0f}')} % | |")
print()
print(f"{rounds} round(s), each tool in turn; ratios are per round. Commands:")
for c in cmds:
    print("    " + c)
EOF
}

for r in $(seq 1 "$rounds"); do
  echo "round $r of $rounds: llama-bench ..." >&2
  read_bw > "$raw/r$r-llama-bw-before.json"
  "${cmd_lb[@]}" > "$raw/r$r-llama-bench.json" 2> "$raw/r$r-llama-bench.log"
  read_bw > "$raw/r$r-llama-bw-after.json"
  if ! "${cmd_lbd[@]}" > "$raw/r$r-llama-bench-depth.json" 2> "$raw/r$r-llama-bench-depth.log"; then
    : > "$raw/r$r-llama-bench-depth.json"  # an older llama-bench without -d: no such row
  fi
  echo "round $r of $rounds: gptoss-bench ..." >&2
  "${cmd_gb[@]}" > "$raw/r$r-gptoss-bench.json" 2> "$raw/r$r-gptoss-bench.log"
  echo "round $r of $rounds: gptoss-bench --read-probe ..." >&2
  if ! "${cmd_gp[@]}" > "$raw/r$r-gptoss-probe.json" 2> "$raw/r$r-gptoss-probe.log"; then
    : > "$raw/r$r-gptoss-probe.json"  # no such row
  fi
  echo "round $r of $rounds: llama-batched-bench ..." >&2
  "${cmd_lbb[@]}" > "$raw/r$r-llama-batched.jsonl" 2>&1  # its result line may go to either
  echo "round $r of $rounds: gptoss-bench -b 8 ..." >&2
  "${cmd_gbb[@]}" > "$raw/r$r-gptoss-batched.json" 2> "$raw/r$r-gptoss-batched.log"
  summarize "$r" > "$raw/table.md"
done
cat "$raw/table.md"

