#!/usr/bin/env bash
# Everything this project can check about its GPU backend on one machine, in one command, and
# one table at the end: op conformance, logits conformance, the GPU tests, and gptoss-bench on
# synthetic 20b (and 120b when the GPU and the disk can hold it).
#
#   bash scripts/gpu-check.sh            installs what is missing, builds cuda or hip for this
#                                        GPU, runs everything (20-60 minutes, mostly writing
#                                        and loading the synthetic models)
#   bash scripts/gpu-check.sh --dry-run  says which GPU it finds and what it would run
#
# Without a usable NVIDIA GPU (cuda backend) or AMD GPU (ROCm: hip backend) it says so and
# exits 0, having changed nothing.
# Environment: GPU_CHECK_MODELS (folder for the synthetic models; default models/ here),
# GPU_CHECK_BUILD (build folder; default build-gpu), GPU_CHECK_SKIP_120B=1,
# GPU_CHECK_PREBUILT=1 (GPU_CHECK_BUILD was built elsewhere, e.g. with this GPU's architecture
# on a machine that has the packages: install and build nothing), GPU_CHECK_REFERENCE_BACKEND
# (compare the logits with that backend's exact ones instead of the float64 reference files,
# for a conformance folder that lacks them: gptoss-conformance logits --reference-backend),
# GPU_CHECK_STEP_TIMEOUT (seconds; a check that runs longer fails; default none).
# Logs and the JSON of every run: $GPU_CHECK_BUILD/gpu-check/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dry=0
case "${1:-}" in
  "") ;;
  --dry-run) dry=1 ;;
  *) echo "usage: bash scripts/gpu-check.sh [--dry-run]" >&2; exit 2 ;;
esac
build="${GPU_CHECK_BUILD:-build-gpu}"
models="${GPU_CHECK_MODELS:-$root/models}"
out="$build/gpu-check"

# ---- a GPU? -----------------------------------------------------------------------------
# NVIDIA (nvidia-smi) runs the cuda backend; AMD (ROCm: /dev/kfd, rocminfo, rocm-smi) the hip
# backend. The table is the same.
be=""
if command -v nvidia-smi >/dev/null 2>&1 &&
   gpus="$(nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>&1)" && [ -n "$gpus" ]; then
  be=cuda
  gpu_mib="$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | tr -d ' ')"
elif [ -e /dev/kfd ] && command -v rocminfo >/dev/null 2>&1 &&
     gpus="$(rocminfo 2>/dev/null | sed -n 's/^ *Name: *\(gfx[0-9a-f]*\).*/\1/p')" && [ -n "$gpus" ]; then
  be=hip
  gfx="$(echo "$gpus" | head -1)"
  # VRAM of GPU 0 in MiB (rocm-smi's CSV: device,total bytes,...); a 64 GiB GCD if unknown.
  gpu_mib="$(rocm-smi --showmeminfo vram --csv 2>/dev/null | awk -F, 'NR==2 {printf "%d", $2 / 1048576}')"
  gpu_mib="${gpu_mib:-65536}"
fi
if [ -z "$be" ]; then
  echo "gpu-check: no usable NVIDIA GPU (nvidia-smi) or AMD GPU (/dev/kfd + rocminfo) here: nothing to check."
  exit 0
fi
echo "gpu-check: found ($be backend)"
echo "$gpus" | sed 's/^/  GPU /'
if [ "$dry" = 1 ]; then
  echo "gpu-check: would install missing packages (scripts/setup.sh), build $build with $be for"
  echo "  this GPU, run gptoss-conformance (backend-ops, logits) and the $be.* ctest tests, write"
  echo "  synthetic 20b$( [ "$gpu_mib" -ge 75000 ] && echo " and 120b") under $models and run gptoss-bench."
  exit 0
fi

# ---- dependencies and build -------------------------------------------------------------
mkdir -p "$out"
if [ "${GPU_CHECK_PREBUILT:-0}" = 1 ]; then
  echo "== using the build in $build (GPU_CHECK_PREBUILT=1)"
  [ -x "$build/bin/gptoss-$be-info" ] || { echo "gpu-check: no $build/bin/gptoss-$be-info" >&2; exit 1; }
else
bash scripts/setup.sh
if [ "$be" = cuda ]; then
  nvcc="$(command -v nvcc || true)"
  [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
  if [ -z "$nvcc" ]; then
    echo "gpu-check: no CUDA compiler; installing Debian's nvidia-cuda-toolkit"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nvidia-cuda-toolkit; }; then
      echo "gpu-check: could not install a CUDA toolkit: install one (nvcc 11.8 or later) and run again" >&2
      exit 1
    fi
    nvcc="$(command -v nvcc)"
  fi
  echo "== build ($build, nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), this GPU's architecture)"
  gpu_flags=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=native -DGPTOSS_HIP=OFF)
else
  echo "== build ($build, hipcc for $gfx; scripts/setup.sh installed Debian's hipcc)"
  gpu_flags=(-DGPTOSS_HIP=ON -DGPTOSS_HIP_ARCHITECTURES="$gfx" -DGPTOSS_BUILD_CUDA=OFF)
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${gpu_flags[@]}" >"$out/cmake.log" 2>&1 ||
  { cat "$out/cmake.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
fi
bin="$build/bin"
"$bin/gptoss-$be-info" | tee "$out/device.txt"
peak="$(sed -n 's/^peak_bandwidth_gbps=//p' "$out/device.txt" | head -1)"
tok="$root/third_party/tokenizer/tokenizer.json"
logits_dir="$root/../shared/conformance/logits"

# Runs a check, keeping its output; records "name<TAB>PASS|FAIL|SKIP<TAB>detail" for the table.
# info: the same, but its result is shown and never fails the run (INFO).
results="$out/results.tsv"
: >"$results"
run_check() {
  local kind="$1" name="$2"; shift 2
  echo "== $name"
  local rc=0 started=$SECONDS
  timeout "${GPU_CHECK_STEP_TIMEOUT:-0}" "$@" >"$out/$name.log" 2>&1 || rc=$?
  tail -3 "$out/$name.log"
  echo "   ($((SECONDS - started)) s, exit $rc)"
  local verdict=PASS
  [ "$rc" = 77 ] && verdict=SKIP
  [ "$rc" != 0 ] && [ "$rc" != 77 ] && verdict="FAIL (exit $rc)"
  [ "$rc" = 124 ] && verdict="FAIL (over ${GPU_CHECK_STEP_TIMEOUT} s)"
  [ "$kind" = info ] && verdict="INFO ($verdict)"
  printf '%s\t%s\t%s\n' "$name" "$verdict" "$(grep -E 'passed|failed' "$out/$name.log" | tail -1)" >>"$results"
}
check() { run_check check "$@"; }
info() { run_check info "$@"; }

# ---- correctness ------------------------------------------------------------------------
# Every slot against the CPU's scalar reference, in both precisions, at every shape set; then
# the real shapes timed (median of 20 calls per case, for the log).
# (The usage text into a variable first: grep -q would close the pipe early, and pipefail
# would then read gptoss-conformance's SIGPIPE as "no backend-ops".)
usage_text="$("$bin/gptoss-conformance" 2>&1 || true)"
if grep -q backend-ops <<<"$usage_text"; then
  check backend-ops-exact "$bin/gptoss-conformance" backend-ops -b "$be" --shapes all
  check backend-ops-fast "$bin/gptoss-conformance" backend-ops -b "$be" --shapes all --precision fast
  info backend-ops-timed "$bin/gptoss-conformance" backend-ops -b "$be" --shapes real,big --precision fast --perf 20
  # The kernels only batch invariance off reaches: tensor cores (fast) and the one-pass
  # attention (exact) for calls of more than 8 tokens (docs/backends.md, "Which kernels run").
  for p in exact fast; do
    check "backend-ops-not-invariant-$p" env GPTOSS_CUDA_BATCH_INVARIANT=0 "$bin/gptoss-conformance" \
      backend-ops -b "$be" --shapes all --precision "$p"
  done
  if [ "$be" = cuda ]; then  # the HIP build's 64-lane warps, emulated (docs/backends.md)
    for p in exact fast; do
      check "backend-ops-wave64-$p" env GPTOSS_CUDA_WAVE64=1 "$bin/gptoss-conformance" backend-ops -b cuda \
        --shapes all --precision "$p"
    done
  else  # the MFMA GEMM, off by default until this check passes on an MI250
    check backend-ops-mfma-fast env GPTOSS_HIP_MFMA=1 GPTOSS_CUDA_BATCH_INVARIANT=0 "$bin/gptoss-conformance" \
      backend-ops -b hip --shapes all --precision fast
  fi
else
  printf 'backend-ops\tSKIP\tthis build has no backend-ops (plugin ABI 2)\n' >>"$results"
fi
# Logits against the float64 reference: exact + f32 cache within the reference's tolerance,
# fast against llama.cpp's deviation (what the cuda.conformance.* tests check); with a bf16
# cache for information (on the tiny conformance model a bf16 cache alone deviates more than
# llama.cpp does, on the CPU backend too: see README).
ref=()
[ -n "${GPU_CHECK_REFERENCE_BACKEND:-}" ] && ref=(--reference-backend "$GPU_CHECK_REFERENCE_BACKEND" --format hf)
if [ -d "$logits_dir" ]; then
  for p in exact fast; do
    check "logits-$p-kv-f32" "$bin/gptoss-conformance" logits --backend "$be" --precision "$p" \
      "${ref[@]}" --tokenizer-json "$tok" "$logits_dir"
    info "logits-$p-kv-bf16" "$bin/gptoss-conformance" logits --backend "$be" --precision "$p" --kv bf16 \
      "${ref[@]}" --tokenizer-json "$tok" "$logits_dir"
  done
else
  printf 'logits\tSKIP\t%s not found\n' "$logits_dir" >>"$results"
fi
# The [cuda-gpu] tests (ctest's cuda.model: batch invariance past every size threshold, the
# whole-row sampling path, a page table offset before the table, ...) by themselves, for the
# table; then the rest of the $be.* tests but those run above.
if [ "$be" = cuda ]; then
  check cuda-gpu-tests "$bin/gptoss-tests" "[cuda-gpu]"
  # The batch-invariance tests the CPU runs at every level, on fresh-seed models too (ctest's
  # cuda.invariance).
  check cuda-invariance-tests env GPTOSS_TEST_BACKEND=cuda "$bin/gptoss-tests" "[invariance]"
fi
check ctest-$be ctest --test-dir "$build" -R "^$be\\." -E 'conformance|backend_ops|^cuda\.(model|invariance)$' \
  --output-on-failure

# ---- speed ------------------------------------------------------------------------------
# Peak GPU memory while a command runs (nvidia-smi or rocm-smi every 0.5 s), in MiB, into $2.
# (rocm-smi's CSV: device, VRAM total bytes, VRAM used bytes; not yet seen on an MI250.)
memory_used_mib() {
  if [ "$be" = cuda ]; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0
  else
    rocm-smi --showmeminfo vram --csv 2>/dev/null | awk -F, 'NR==2 {printf "%d\n", $3 / 1048576}'
  fi
}
with_memory() {
  local log="$1"; shift
  ( while :; do memory_used_mib; sleep 0.5; done ) >"$log" &
  local sampler=$!
  local rc=0
  "$@" || rc=$?
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  return $rc
}
bench() {  # name, model dir, gptoss-bench arguments...
  local name="$1" model="$2"; shift 2
  echo "== bench $name"
  if with_memory "$out/$name.mem" "$bin/gptoss-bench" -m "$model" --backend "$be" --peak-gbps "$peak" \
       --kv bf16 --output json "$@" >"$out/$name.json" 2>"$out/$name.err"; then
    cat "$out/$name.json"
  else
    echo "  failed: $(tail -1 "$out/$name.err")"
  fi
}
make_model() {  # preset: writes it unless it is there; fails with the log's end
  local dir="$models/synthetic-$1"
  [ -f "$dir/model-hf/config.json" ] && return 0
  echo "== gptoss-make-model --preset $1 (into $dir)"
  "$bin/gptoss-make-model" --preset "$1" --out "$dir" --format hf --tokenizer-json "$tok" >"$out/make-$1.log" 2>&1 ||
    { tail -3 "$out/make-$1.log"; return 1; }
}
disk_free_gb() { df -BG --output=avail "$1" | tail -1 | tr -dc 0-9; }
mkdir -p "$models"
presets=(20b)
if [ "${GPU_CHECK_SKIP_120B:-0}" != 1 ] && [ "$gpu_mib" -ge 75000 ]; then presets+=(120b); fi
for preset in "${presets[@]}"; do
  need=$([ "$preset" = 20b ] && echo 16 || echo 70)
  if [ ! -f "$models/synthetic-$preset/model-hf/config.json" ] && [ "$(disk_free_gb "$models")" -lt "$need" ]; then
    printf 'bench-%s\tSKIP\tless than %s GB free in %s\n' "$preset" "$need" "$models" >>"$results"
    continue
  fi
  if ! make_model "$preset"; then
    printf 'bench-%s\tFAIL\tgptoss-make-model failed (%s)\n' "$preset" "$out/make-$preset.log" >>"$results"
    continue
  fi
  m="$models/synthetic-$preset/model-hf"
  bench "$preset-p2048" "$m" -p 2048 -n 64 -r 3
  bench "$preset-decode" "$m" -p 16 -n 256 -r 3
  bench "$preset-batch64" "$m" -p 128 -n 32 -r 1 -b 64
  # What batch invariance costs (20b only, to keep the run short): the same prefill and
  # 64-sequence runs with it off (tensor cores for calls of more than 8 tokens).
  if [ "$preset" = 20b ]; then
    GPTOSS_CUDA_BATCH_INVARIANT=0 bench "$preset-p2048-not-invariant" "$m" -p 2048 -n 64 -r 3
    GPTOSS_CUDA_BATCH_INVARIANT=0 bench "$preset-batch64-not-invariant" "$m" -p 128 -n 32 -r 1 -b 64
  fi
done

# ---- the table --------------------------------------------------------------------------
python3 - "$out" "$results" <<'EOF'
import json, os, sys
out, results = sys.argv[1], sys.argv[2]
dev = dict(l.strip().split("=", 1) for l in open(os.path.join(out, "device.txt")) if "=" in l)
print(f"\n## gpu-check: {dev.get('name')} (sm {dev.get('compute_capability')}, {int(dev.get('memory_total_bytes', 0)) / 2**30:.1f} GiB, "
      f"{dev.get('peak_bandwidth_gbps')} GB/s peak)\n")
print("| check | result | detail |\n| --- | --- | --- |")
for line in open(results):
    name, verdict, detail = (line.rstrip("\n").split("\t") + ["", ""])[:3]
    print(f"| {name} | {verdict} | {detail} |")
print("\n| model | test | tok/s | ms/token | GB/s | % of peak | load s | GPU memory |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for preset in ("20b", "120b"):
    for test in ("p2048", "decode", "batch64", "p2048-not-invariant", "batch64-not-invariant"):
        path = os.path.join(out, f"{preset}-{test}.json")
        if not os.path.exists(path):
            continue
        try:
            r = json.load(open(path))
        except ValueError:
            print(f"| {preset} | {test} | failed: see {path[:-5]}.err | | | | | |")
            continue
        mem = [int(x) for x in open(os.path.join(out, f"{preset}-{test}.mem")).read().split() if x.isdigit()]
        mem_s = f"{max(mem) / 1024:.1f} GiB" if mem else "?"
        pp, tg = r["prefill_tok_s"]["mean"], r["decode_tok_s"]["mean"]
        off = " (batch invariance off)" if test.endswith("not-invariant") else ""
        if test.startswith("batch64"):
            print(f"| {preset} | decode, 64 sequences{off} | {r['batched_decode_tok_s']:.0f} in all | {r['batched_ms_per_step']:.2f} per step | | | {r['load_s']:.1f} | {mem_s} |")
            continue
        if test.startswith("p2048"):
            print(f"| {preset} | prefill {r['n_prompt']}{off} | {pp:.0f} | {1e3 / pp:.3f} | | | {r['load_s']:.1f} | {mem_s} |")
        print(f"| {preset} | decode after {r['n_prompt']}{off} | {tg:.1f} | {1e3 / tg:.2f} | {r['achieved_gbs']:.0f} | "
              f"{r['bandwidth_pct']['mean']:.0f} % | {r['load_s']:.1f} | {mem_s} |")
print(f"\n(logs and JSON: {out}; bench: fast precision, bf16 KV cache; GB/s: the weights and KV a decode "
      "token reads, as stored, per second)")
EOF
grep -q $'\tFAIL' "$results" && exit 1
exit 0
