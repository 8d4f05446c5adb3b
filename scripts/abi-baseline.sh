#!/usr/bin/env bash
# Records the ABIs of a build as the baselines in abi/ that scripts/abi-check.sh compares with
# (docs/abi.md). Run it after merging additions to an ABI, or with an intended incompatible
# change once its major is bumped, and commit abi/ in the same change.
#   scripts/abi-baseline.sh [BUILD_DIR] [--allow-incompatible]
# Builds what it needs in BUILD_DIR (default build/; configured when absent). It refuses to
# replace a baseline by an incompatible ABI of the same major unless --allow-incompatible is
# given (only for an ABI that was never released).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/abi-common.sh"
build="$root/build"
allow_incompatible=0
for arg in "$@"; do
  case "$arg" in
    --allow-incompatible) allow_incompatible=1 ;;
    -*) echo "usage: scripts/abi-baseline.sh [BUILD_DIR] [--allow-incompatible]" >&2; exit 2 ;;
    *) build="$arg" ;;
  esac
done

[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target gptoss gptoss-plugin-abi-probe -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
abi_locate "$build"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# record BINARY BASELINE GLOB_OF_ITS_OTHER_MAJORS WHAT_TO_BUMP
record() {
  local bin="$1" baseline="$2" others="$3" bump="$4" rc=0 old
  abi_dump "$bin" "$root/include" "$tmp/new.abi"
  if [ -f "$baseline" ]; then
    abi_compare "$baseline" "$tmp/new.abi" "$root/include" "$tmp/report" || rc=$?
    if ((rc == 2)); then cat "$tmp/report" >&2; exit 1; fi
    if ((rc == 1 && !allow_incompatible)); then
      echo "abi-baseline: ${baseline#"$root"/} is not replaced: the change is incompatible:" >&2
      sed 's/^/  | /' "$tmp/report" >&2
      echo "  $bump first (a new major gets a new baseline), or pass --allow-incompatible" >&2
      echo "  if this ABI was never released." >&2
      exit 1
    fi
  fi
  if [ -f "$baseline" ] && cmp -s "$tmp/new.abi" "$baseline"; then
    echo "unchanged: ${baseline#"$root"/}"
    return
  fi
  cp "$tmp/new.abi" "$baseline"
  echo "recorded:  ${baseline#"$root"/}"
  for old in $others; do
    if [ -f "$old" ] && [ "$old" != "$baseline" ]; then
      rm "$old"
      echo "removed:   ${old#"$root"/} (an older major)"
    fi
  done
}

record "$c_bin" "$c_baseline" "$root/abi/libgptoss.so.*.abi" \
  "bump GPTOSS_ABI_VERSION (the SONAME major) in include/gptoss/version.h"
record "$plugin_bin" "$plugin_baseline" "$root/abi/gptoss-backend-abi-*.abi" \
  "bump GPTOSS_BACKEND_ABI_MAJOR in include/gptoss/backend.h"
echo "Commit abi/ with the change (git add abi/)."
