#!/usr/bin/env bash
# Sets up whatever is missing, builds everything, and runs the whole test suite:
# unit tests, C API tests, conformance against ../shared/conformance, CLI and Python tests,
# then the bad-input and API tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc 2>/dev/null || echo 2)"

bash scripts/setup.sh

echo "== build (release)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"

echo "== build (ASan + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGPTOSS_SANITIZE=ON \
      -DGPTOSS_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-asan -j"$jobs" --target gptoss-tests gptoss-backend-cpu

echo "== tests under ASan + UBSan (bad input, C API, registry)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L sanitize

echo "== full suite"
ctest --test-dir build --output-on-failure -j"$jobs"
