#!/usr/bin/env bash
# libFuzzer campaigns on the harnesses of tests/fuzz (docs/reliability.md).
#
#   scripts/fuzz.sh                          the harness names, one per line
#   scripts/fuzz.sh --build                  builds every harness (what a run would build)
#   scripts/fuzz.sh HARNESS SECONDS [FLAG..]  builds what is missing (build-fuzz/, clang 14,
#                                            ASan + UBSan + LeakSanitizer) and runs HARNESS
#                                            from its committed corpus for SECONDS, with extra
#                                            libFuzzer FLAGs if given (they override ours);
#                                            exit 0 if no crash
#
# Inputs the run finds are kept in build-fuzz/out/HARNESS/corpus (the committed corpus is only
# read), so a later run goes on from there. A crash, leak or timeout fails with the libFuzzer
# report and the crashing input as hex; the input stays in build-fuzz/out/HARNESS/artifacts/.
# Environment: GPTOSS_FUZZ_BUILD (build folder), GPTOSS_FUZZ_JOBS (build jobs, default 2),
# GPTOSS_FUZZ_PREBUILT (set: run the harness as built, without building it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz_dir="$root/tests/fuzz"

harnesses() {
  for f in "$fuzz_dir"/harnesses/*.cpp; do basename "$f" .cpp; done
}

build="${GPTOSS_FUZZ_BUILD:-$root/build-fuzz}"
build_targets() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DGPTOSS_FUZZ=ON -DCMAKE_BUILD_TYPE=Release \
          -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
          -DGPTOSS_BUILD_EXAMPLES=OFF -DGPTOSS_BUILD_SERVER=OFF -DGPTOSS_BUILD_CUDA=OFF -DGPTOSS_HIP=OFF >/dev/null
  fi
  cmake --build "$build" -j"${GPTOSS_FUZZ_JOBS:-2}" --target "$@" >/dev/null
}

if (($# == 0)); then
  harnesses
  exit 0
fi
if [ "$1" = "--build" ]; then
  build_targets fuzz
  exit 0
fi
if (($# < 2)) || [[ ! "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [--build | HARNESS SECONDS [LIBFUZZER_FLAG...]]" >&2
  exit 2
fi
name="$1"
seconds="$2"
shift 2
if [ ! -f "$fuzz_dir/harnesses/$name.cpp" ]; then
  echo "fuzz.sh: no harness '$name'; there are:" >&2
  harnesses >&2
  exit 2
fi

# (Set by scripts/reliability.sh, which builds every harness first and then runs several at once.)
[ -n "${GPTOSS_FUZZ_PREBUILT:-}" ] || build_targets "fuzz-$name"

out="$build/out/$name"
mkdir -p "$out/corpus" "$out/artifacts"
rm -f "$out"/artifacts/*
# 64 KiB: room to grow the 20 KB checkpoint seeds, while the few large regression inputs
# (deeply nested JSON) stay a test of the replay, not the size of every mutation.
flags=(-max_total_time="$seconds" -print_final_stats=1 -timeout=30 -rss_limit_mb=2048
       -max_len=65536 -artifact_prefix="$out/artifacts/")
if [ -f "$fuzz_dir/dict/$name.dict" ]; then flags+=(-dict="$fuzz_dir/dict/$name.dict"); fi
if command -v llvm-symbolizer-14 >/dev/null; then
  export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-14)}"
fi
# intercept_tls_get_addr=0: see scripts/test.sh (LeakSanitizer's tracer crash on dynamic TLS).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:intercept_tls_get_addr=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

set +e
"$build/bin/fuzz-$name" "${flags[@]}" "$@" "$out/corpus" "$fuzz_dir/corpus/$name" \
  >"$out/log.txt" 2>&1
rc=$?
set -e
grep -E "^(stat::|INFO: seed corpus|#[0-9]+[[:space:]]*(INITED|DONE))" "$out/log.txt" || true
if ((rc != 0)); then
  echo "fuzz.sh: $name failed (exit $rc); the end of the libFuzzer log ($out/log.txt):"
  tail -n 60 "$out/log.txt"
  for input in "$out"/artifacts/*; do
    [ -f "$input" ] || continue
    echo "== input $input ($(stat -c %s "$input") bytes), as hex:"
    od -An -tx1 -v "$input" | head -n 400
  done
  exit 1
fi
# libFuzzer runs every input of the corpora before it mutates any, then prints INITED: this run
# replayed the committed corpus (the regression inputs) under ASan + UBSan, which CI's fuzz
# stage counts on (tests/CMakeLists.txt leaves the replays out of the ASan build).
if ! grep -q "INITED" "$out/log.txt"; then
  echo "fuzz.sh: $name: the corpus did not run whole within $seconds s (no INITED line in $out/log.txt)"
  exit 1
fi
