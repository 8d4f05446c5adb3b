#!/usr/bin/env bash
# The fuzzing and ThreadSanitizer part of CI (docs/reliability.md), run by scripts/test.sh:
#  1. every fuzz harness (scripts/fuzz.sh lists them) runs from its committed corpus for an
#     equal share of GPTOSS_FUZZ_BUDGET_SECONDS (default 160: the CI cost stays the same as
#     harnesses are added; at least 20 s each), as many at once as there are cores; a crash,
#     leak or timeout fails, printing the input as hex;
#  2. the threaded paths run under ThreadSanitizer (build-tsan/, g++): every entry of
#     tsan_tests below; a reported data race fails.
# Environment: GPTOSS_FUZZ_BUILD / GPTOSS_TSAN_BUILD (build folders), GPTOSS_FUZZ_BUDGET_SECONDS.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc 2>/dev/null || echo 2)"

# Threaded code under ThreadSanitizer: one entry per test program, "TARGET [ARGUMENTS...]",
# built in the TSan build and run from its bin/. A new threaded component is one more line.
tsan_tests=(
  "gptoss-tests [concurrency]"
  "gptoss-server-tests [concurrency]"
)

failed=0
mapfile -t harnesses < <(bash scripts/fuzz.sh)
budget="${GPTOSS_FUZZ_BUDGET_SECONDS:-160}"
seconds=$((budget / ${#harnesses[@]}))
((seconds >= 20)) || seconds=20
echo "== build (fuzz harnesses, clang)"
GPTOSS_FUZZ_JOBS="$jobs" bash scripts/fuzz.sh --build
# A libFuzzer run is one thread: the harnesses run $jobs at a time, each into its own log,
# printed in order once all have finished.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
echo "== fuzz ${#harnesses[@]} harnesses, ${seconds} s each from tests/fuzz/corpus/NAME, $jobs at a time"
for h in "${harnesses[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  (rc=0
   GPTOSS_FUZZ_PREBUILT=1 bash scripts/fuzz.sh "$h" "$seconds" >"$logs/$h.log" 2>&1 || rc=$?
   echo "$rc" >"$logs/$h.rc") &
done
wait
for h in "${harnesses[@]}"; do
  echo "-- fuzz $h"
  cat "$logs/$h.log"
  [ "$(cat "$logs/$h.rc" 2>/dev/null)" = 0 ] || { echo "fuzz $h FAILED"; failed=1; }
done

echo "== build (ThreadSanitizer)"
tsan_build="${GPTOSS_TSAN_BUILD:-build-tsan}"
cmake -S . -B "$tsan_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPTOSS_TSAN=ON \
  -DGPTOSS_BUILD_CUDA=OFF -DGPTOSS_HIP=OFF >/dev/null
targets=()
for t in "${tsan_tests[@]}"; do targets+=("${t%% *}"); done
cmake --build "$tsan_build" -j"$jobs" --target "${targets[@]}" >/dev/null

echo "== threaded paths under ThreadSanitizer"
export TSAN_OPTIONS="${TSAN_OPTIONS:-second_deadlock_stack=1 suppressions=$root/tests/tsan.supp}"
for t in "${tsan_tests[@]}"; do
  read -r -a cmd <<<"$t"
  echo "-- ${cmd[*]}"
  "$tsan_build/bin/${cmd[0]}" "${cmd[@]:1}" || failed=1
done
exit "$failed"
