#!/usr/bin/env bash
# Packs a GPU build made on this machine for a GPU machine that cannot install packages or
# build (no package registry, no network), and writes the script that runs
# scripts/gpu-check.sh there from it.
#
#   bash scripts/gpu-bundle.sh BUILD_DIR OUT_DIR [--with-model]
#
# BUILD_DIR: a build with the cuda (or hip) backend for the target GPU's architecture, e.g.
#   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a
#   cmake --build build-gpu
# OUT_DIR gets (xz-compressed, so that the bundle and a checkout fit in tens of MB):
#   build.tar.xz        the programs, libraries and ctest files of BUILD_DIR (stripped)
#   lib/                the shared libraries they need beyond glibc and libstdc++ (fmt, ...)
#   tokenizer.json.xz   third_party/tokenizer/tokenizer.json
#   logits-small.tar    the conformance set's manifest and prompts (no reference rows: the
#                       check compares the GPU with the CPU backend's exact logits instead)
#   model-hf.tar.xz     with --with-model: the conformance model (38 MB); without it the
#                       GPU machine writes a synthetic model of the same shape
#   run.sh              on the GPU machine, from a checkout of the same commit:
#                       bash OUT_DIR/run.sh [SECONDS]  (SECONDS bounds the whole check)
# GPU_BUNDLE_XZ_LEVEL (default 6): the build's and tokenizer's xz level; the test uses 0.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { echo "usage: bash scripts/gpu-bundle.sh BUILD_DIR OUT_DIR [--with-model]" >&2; exit 2; }
[ $# -ge 2 ] || usage
build="$(cd "$1" && pwd)" || usage
out="$2"
with_model=0
case "${3:-}" in "") ;; --with-model) with_model=1 ;; *) usage ;; esac
level="${GPU_BUNDLE_XZ_LEVEL:-6}"
case "$level" in [0-9]) ;; *) echo "GPU_BUNDLE_XZ_LEVEL must be 0-9, not '$level'" >&2; exit 2 ;; esac
be=""
for b in cuda hip; do [ -x "$build/bin/gptoss-$b-info" ] && be=$b && break; done
[ -n "$be" ] || { echo "gpu-bundle: $build has no GPU backend (bin/gptoss-cuda-info or gptoss-hip-info)" >&2; exit 1; }
cache="$build/CMakeCache.txt"
src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")"
shared="$(sed -n 's/^GPTOSS_SHARED_DIR:PATH=//p' "$cache")"
cli_python="$(sed -n 's/^GPTOSS_CLI_TEST_PYTHON:[A-Z]*=//p' "$cache")"
tok="$root/third_party/tokenizer/tokenizer.json"
logits="$shared/conformance/logits"
[ -f "$tok" ] || { echo "gpu-bundle: no $tok (scripts/setup.sh fetches it)" >&2; exit 1; }
[ -f "$logits/manifest.json" ] || { echo "gpu-bundle: no conformance set at $logits" >&2; exit 1; }
rm -rf "$out/lib"
mkdir -p "$out/lib"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# The programs gpu-check.sh and the $be.* tests run, every plugin, and the ctest files.
mkdir -p "$stage/bin" "$stage/lib"
for p in gptoss gptoss-bench gptoss-conformance "gptoss-$be-info" gptoss-make-model gptoss-tests; do
  [ -x "$build/bin/$p" ] && cp -a "$build/bin/$p" "$stage/bin/"
done
cp -a "$build"/lib/*.so* "$stage/lib/"
(cd "$build" && find . -name CTestTestfile.cmake | tar -cf - -T -) | tar -C "$stage" -xf -
find "$stage/bin" "$stage/lib" -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
tar -C "$stage" -cf - . | xz -"$level" -T0 >"$out/build.tar.xz"

# Shared libraries beyond the C and C++ runtimes, which the GPU machine has in newer versions.
deps="$(ldd "$stage"/bin/* "$stage"/lib/*.so 2>/dev/null | awk '/=> \//{print $3}' | sort -u || true)"
for l in $deps; do
  case "$(basename "$l")" in
    libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | ld-linux* | libpthread.so* | libdl.so* | librt.so* | libgptoss*) ;;
    *) cp -L "$l" "$out/lib/" ;;
  esac
done

xz -"$level" -T0 -c "$tok" >"$out/tokenizer.json.xz"
(cd "$logits" && tar -cf - manifest.json ./*.ids.txt) >"$out/logits-small.tar"
rm -f "$out/model-hf.tar.xz"
[ "$with_model" = 1 ] && tar -C "$logits" -cf - model-hf | xz -9 -T0 >"$out/model-hf.tar.xz"

cat >"$out/run.sh" <<EOF
#!/usr/bin/env bash
# Made by scripts/gpu-bundle.sh: runs scripts/gpu-check.sh from this bundle, on a GPU machine
# that has Python 3 and, as root, may create the build's paths ($src, $shared).
# Run from a checkout of the commit the build was made from: bash BUNDLE/run.sh [SECONDS]
set -u
bundle="\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
repo="\$(pwd)"
limit="\${1:-3600}"
unxz_to() {
  if command -v xz >/dev/null; then xz -dc "\$1" >"\$2"
  else python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "\$1" "\$2"; fi
}
# The build reads its sources, data and tests at the paths it was configured with.
if [ "\$repo" != "$src" ]; then mkdir -p "\$(dirname "$src")" && ln -sfn "\$repo" "$src"; fi
cd "$src" || exit 1
mkdir -p "$build" && unxz_to "\$bundle/build.tar.xz" /tmp/gptoss-build.tar && tar -C "$build" -xf /tmp/gptoss-build.tar
mkdir -p "\$(dirname "$tok")" && unxz_to "\$bundle/tokenizer.json.xz" "$tok"
mkdir -p "$logits" && tar -C "$logits" -xf "\$bundle/logits-small.tar"
export LD_LIBRARY_PATH="\$bundle/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
# The CLI tests' interpreter, as configured (e.g. a pyenv shim), if this machine lacks it.
if [ -n "$cli_python" ] && [ ! -x "$cli_python" ] && command -v python3 >/dev/null; then
  mkdir -p "\$(dirname "$cli_python")" && ln -sf "\$(command -v python3)" "$cli_python"
fi
if [ ! -f "$logits/model-hf/config.json" ]; then
  if [ -f "\$bundle/model-hf.tar.xz" ]; then
    unxz_to "\$bundle/model-hf.tar.xz" /tmp/gptoss-model-hf.tar && tar -C "$logits" -xf /tmp/gptoss-model-hf.tar
  else
    echo "run.sh: the conformance model was not bundled: a synthetic model of its shape instead"
    "$build/bin/gptoss-make-model" --preset conformance --out /tmp/gptoss-conformance --format hf \\
      --tokenizer-json "$tok" >/dev/null && mv /tmp/gptoss-conformance/model-hf "$logits/model-hf"
  fi
fi
GPU_CHECK_BUILD="$build" GPU_CHECK_PREBUILT=1 GPU_CHECK_REFERENCE_BACKEND=cpu \\
  GPU_CHECK_STEP_TIMEOUT="\${GPU_CHECK_STEP_TIMEOUT:-300}" timeout "\$limit" bash scripts/gpu-check.sh
EOF
chmod +x "$out/run.sh"
echo "gpu-bundle: $be build of $src in $out ($(du -sh "$out" | cut -f1)); on the GPU machine, from a checkout:"
echo "  bash $out/run.sh [SECONDS]"
