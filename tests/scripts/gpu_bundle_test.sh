#!/usr/bin/env bash
# scripts/gpu-bundle.sh on a build with a GPU backend: the bundle holds what run.sh unpacks
# (the GPU backend's info program and plugin, the ctest files, the libraries beyond the C and
# C++ runtimes, not libgptoss itself), run.sh is valid shell that runs gpu-check.sh prebuilt,
# and a build without a GPU backend or a wrong argument is refused.
set -euo pipefail
build="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "gpu_bundle_test: $*" >&2; exit 1; }
# xz level 0: the contents are under test, not the compression (level 6 takes 30 s more).
GPU_BUNDLE_XZ_LEVEL=0 bash "$root/scripts/gpu-bundle.sh" "$build" "$out/b" >"$out/log" 2>&1 || { cat "$out/log"; fail "bundle failed"; }
list="$(xz -dc "$out/b/build.tar.xz" | tar -tf -)"
for f in ./bin/gptoss-cuda-info ./bin/gptoss-tests ./bin/gptoss-conformance ./lib/libgptoss-backend-cuda.so \
         ./lib/libgptoss-backend-cpu.so ./CTestTestfile.cmake ./tests/CTestTestfile.cmake; do
  grep -qxF "$f" <<<"$list" || fail "build.tar.xz lacks $f"
done
# (Listings into variables first: under pipefail, grep -q closing the pipe early would fail
# the listing command with SIGPIPE whenever it had more to write.)
libs="$(ls "$out/b/lib")"
grep -q '^libfmt' <<<"$libs" || fail "lib/ lacks libfmt"
if grep -q -e '^libgptoss' -e '^libc\.so' -e '^libstdc' <<<"$libs"; then fail "lib/ holds $libs"; fi
grep -qx 'manifest.json' <<<"$(tar -tf "$out/b/logits-small.tar")" || fail "logits-small.tar lacks manifest.json"
[ -s "$out/b/tokenizer.json.xz" ] || fail "no tokenizer.json.xz"
bash -n "$out/b/run.sh" || fail "run.sh is not valid shell"
grep -q 'GPU_CHECK_PREBUILT=1' "$out/b/run.sh" || fail "run.sh does not run gpu-check prebuilt"
mkdir -p "$out/nogpu/bin"
if bash "$root/scripts/gpu-bundle.sh" "$out/nogpu" "$out/c" >"$out/log" 2>&1; then fail "a build without a GPU backend was bundled"; fi
grep -q "has no GPU backend" "$out/log" || fail "unclear refusal: $(cat "$out/log")"
if bash "$root/scripts/gpu-bundle.sh" "$build" >/dev/null 2>&1; then fail "one argument was accepted"; fi
if GPU_BUNDLE_XZ_LEVEL=x bash "$root/scripts/gpu-bundle.sh" "$build" "$out/d" >/dev/null 2>&1; then
  fail "an xz level of x was accepted"
fi
echo "gpu_bundle_test: passed"
