#!/usr/bin/env bash
# Sets up whatever is missing, builds everything, and runs the whole test suite:
# unit tests, C API tests, conformance against ../shared/conformance, CLI, Python and server
# tests, with every library test (bad input included) also run under AddressSanitizer + UBSan;
# then the installed library, its two out-of-tree consumers and the pip package
# (test-install.sh), and the OpenAI SDK against gptoss-server on both stores (test-server.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# The reference data and the tiny model most tests load live outside the repository: shared/
# beside the checkout, or where GPTOSS_SHARED_DIR says (CMakeLists.txt reads it too). Without
# them a third of the suite would fail one by one, so stop here and say why.
shared="${GPTOSS_SHARED_DIR:-$root/../shared}"
if [ ! -d "$shared/conformance/logits/model-hf" ]; then
  echo "scripts/test.sh: $shared/conformance/logits/model-hf not found: the suite needs the" \
       "conformance data (shared/conformance/{harmony,tokenizer,logits}) beside the checkout," \
       "or GPTOSS_SHARED_DIR=/path/to/shared" >&2
  exit 2
fi
export GPTOSS_SHARED_DIR="$(cd "$shared" && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"
# Each section's header says how far into the run it starts, so a slow CI run shows where it went.
section() { echo "== $1   [at $((SECONDS / 60)) min $((SECONDS % 60)) s]"; }

bash scripts/setup.sh

# The release build (with what check-run builds first in build/) and the Python package's pip
# build (scripts/test-python-package.sh) compile libgptoss and the CPU plugin with the same flags:
# through ccache the pip build takes the release build's objects instead of compiling them again
# (165 s on 2 cores). The cache is build-ccache/ in the checkout, so a clean clone starts empty;
# the sanitized builds, whose flags nothing else shares, compile without it.
export CCACHE_DIR="$root/build-ccache"
with_ccache=(env CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache)

section "formatting of the C/C++ lines changed since .clang-format (scripts/check-format.sh)"
bash scripts/check-format.sh

section "scripts/run.sh builds only what the CLI needs (scripts/check-run-builds-only-needed.sh)"
# First, on the fresh build/: the release build below reuses what it built.
"${with_ccache[@]}" bash scripts/check-run-builds-only-needed.sh

# -DGPTOSS_UNITY_TESTS=ON: the test programs compile 8 files to a unit (tests/CMakeLists.txt),
# which cuts their compile time by 40-50 % in a build from scratch (docs/README.md).
section "build (release)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPTOSS_UNITY_TESTS=ON \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build -j"$jobs"

section "build (ASan + UBSan)"
# (Without the GPU backends: their kernels cannot run under ASan, and CI has no GPU anyway.)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPTOSS_SANITIZE=ON -DGPTOSS_UNITY_TESTS=ON \
      -DGPTOSS_BUILD_EXAMPLES=OFF -DGPTOSS_BUILD_SERVER=OFF -DGPTOSS_BUILD_CUDA=OFF -DGPTOSS_HIP=OFF >/dev/null
cmake --build build-asan -j"$jobs"

section "library tests under ASan + UBSan (loaders on corrupt files, C API, registry, ...)"
# intercept_tls_get_addr=0: the sanitizer runtime of GCC <= 13 and LLVM <= 16 takes a dynamic
# TLS block (the plugins' thread_locals) whose address is 16 bytes past a 4 KiB boundary for a
# pre-2.25 glibc header and reads garbage from before it; LeakSanitizer's tracer then crashes
# at exit ("Tracer caught signal 11") after a test passed. It hit twice in CI runs here.
ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

section "full suite"
ctest --test-dir build --output-on-failure -j"$jobs"

section "installed library, consumers, pip package"
"${with_ccache[@]}" bash scripts/test-install.sh build

section "server: the OpenAI SDK against gptoss-server (SQLite and PostgreSQL stores), load test"
bash scripts/test-server.sh

section "server under faults: crash, signals, clients, PostgreSQL and disk outages, memory, short soak"
bash scripts/faults.sh  # docs/reliability.md, "Faults"

section "fuzzing and ThreadSanitizer"
bash scripts/reliability.sh  # fuzz harnesses and ThreadSanitizer (docs/reliability.md)
section "all passed"
