#!/usr/bin/env bash
# The Python package as its users get it (docs/python.md), with whatever python3 is on PATH:
#  1. `pip install ./bindings/python` in a fresh venv (--system-site-packages) builds libgptoss
#     and its CPU plugin with CMake and ships them in the package: `import gptoss` from another
#     folder, with no environment variable, generates a token on the package's own library;
#  2. a pure wheel (--config-settings native=system) finds a system-installed libgptoss (the
#     install tree PREFIX, through the system loader) and its plugin;
#  3. the pure wheel with no libgptoss anywhere raises LibraryNotFoundError.
# pip may not reach an index (PIP_NO_INDEX): the build needs nothing that is not installed.
#   scripts/test-python-package.sh PREFIX MODEL_DIR    (run by scripts/test-install.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$1"
model="$2"
libdir="$(cd "$prefix" && dirname "$(find . -name 'libgptoss.so.*' -print -quit)")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/elsewhere"
fail() { echo "test-python-package: FAILED: $*" >&2; exit 1; }
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
clean_env=(env -u LD_LIBRARY_PATH -u GPTOSS_BACKEND_PATH -u GPTOSS_LIBRARY_PATH -u PYTHONPATH)

# check VENV WANT_LIBRARY WANT_PLUGIN_DIR [ENV...]: in VENV's python, from another folder:
# the library loaded is WANT_LIBRARY ("package" = the package's own), the CPU plugin mapped
# comes from WANT_PLUGIN_DIR, and a model generates a token.
check() {
  local venv="$1" want_lib="$2" want_plugins="$3"
  shift 3
  (cd "$tmp/elsewhere" && "${clean_env[@]}" "$@" "$venv/bin/python" - "$model" "$want_lib" "$want_plugins" <<'EOF'
import os, sys
import gptoss

model, want_lib, want_plugins = sys.argv[1:]
package = os.path.dirname(gptoss.__file__)
loaded = gptoss.library_path()
if want_lib == "package":
    assert loaded.startswith(package + os.sep), f"loaded {loaded}, not the package's"
else:
    assert loaded == want_lib, f"loaded {loaded}, expected {want_lib}"
assert gptoss.__version__ == gptoss.library_version(), (gptoss.__version__, gptoss.library_version())
with gptoss.Model(model) as m:
    tokens = [t.id for t in m.generate("Hello", max_tokens=1, temperature=0)]
    assert m.info.backend == "cpu" and len(tokens) == 1, (m.info.backend, tokens)
    maps = open("/proc/self/maps").read().split()
    plugins = {p for p in maps if p.endswith("/libgptoss-backend-cpu.so")}
    want = os.path.realpath(want_plugins.replace("PACKAGE", package))
    assert plugins == {os.path.join(want, "libgptoss-backend-cpu.so")}, plugins
print(f"   gptoss {gptoss.__version__} from {loaded}: token {tokens[0]}")
EOF
  ) || fail "$venv: the package does not work as installed"
}

python3="$(command -v python3)"
echo "== python: $python3 ($("$python3" --version 2>&1)); pip install ./bindings/python"
"$python3" -m venv --system-site-packages "$tmp/venv"
start=$SECONDS
# The GPU plugins are built and checked by the main build; here they would only add minutes of
# nvcc/hipcc to a test of the packaging (a user's `pip install` builds them when found).
GPTOSS_PYTHON_CMAKE_ARGS="-DGPTOSS_BUILD_CUDA=OFF -DGPTOSS_HIP=OFF" \
  "$tmp/venv/bin/pip" install --quiet "$root/bindings/python" ||
  fail "pip install ./bindings/python"
echo "   built and installed in $((SECONDS - start)) s"
check "$tmp/venv" package "PACKAGE/_native/gptoss/backends"

echo "== python: a pure wheel (native=system) on a system-installed libgptoss"
"$tmp/venv/bin/pip" wheel --quiet --no-deps --config-settings native=system -w "$tmp/wheels" \
  "$root/bindings/python" || fail "pip wheel --config-settings native=system"
wheel="$(ls "$tmp"/wheels/gptoss-*-py3-none-any.whl)" || fail "no pure wheel was built"
"$python3" -m venv --system-site-packages "$tmp/venv-system"
"$tmp/venv-system/bin/pip" install --quiet "$wheel"
check "$tmp/venv-system" libgptoss.so.0 "$prefix/$libdir/gptoss/backends" \
  LD_LIBRARY_PATH="$prefix/$libdir"
(cd "$tmp/elsewhere" && "${clean_env[@]}" "$tmp/venv-system/bin/python" -c '
import gptoss
try:
    gptoss.Model("unused")
except gptoss.LibraryNotFoundError as e:
    assert "libgptoss.so.0 (system loader)" in str(e), e
else:
    raise SystemExit("no LibraryNotFoundError without a libgptoss")
') || fail "the pure wheel without a libgptoss"
echo "   no libgptoss anywhere: LibraryNotFoundError"
