#!/usr/bin/env bash
# Checks the C ABI (libgptoss.so, include/gptoss.h) and the plugin ABI (include/gptoss/backend.h)
# of a build against the baselines in abi/ (docs/abi.md). Added functions and fields appended to
# structs that begin with struct_size pass; any other change fails and says how to proceed.
#   scripts/abi-check.sh [BUILD_DIR]      (default build/; CTest runs it as abi.check)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/abi-common.sh"
build="$(cd "${1:-$root/build}" && pwd)"
abi_locate "$build"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failed=0
# check LABEL BINARY BASELINE WHAT_TO_BUMP
check() {
  local label="$1" bin="$2" baseline="$3" bump="$4" rc=0
  if [ ! -f "$baseline" ]; then
    echo "ABI check FAILED ($label): there is no baseline ${baseline#"$root"/} for this major."
    echo "  After an intended incompatible change ($bump), record the new ABI with"
    echo "  scripts/abi-baseline.sh and commit abi/ with the change."
    failed=1
    return
  fi
  abi_dump "$bin" "$root/include" "$tmp/new.abi"
  abi_compare "$baseline" "$tmp/new.abi" "$root/include" "$tmp/report" || rc=$?
  case $rc in
    0)
      echo "ABI check passed ($label, against ${baseline#"$root"/})"
      if ! abidiff "$baseline" "$tmp/new.abi" > "$tmp/added"; then
        echo "  with compatible additions, not yet in the baseline (scripts/abi-baseline.sh records them):"
        sed 's/^/  | /' "$tmp/added"
      fi
      ;;
    1)
      echo "ABI check FAILED ($label): an incompatible change against ${baseline#"$root"/}:"
      sed 's/^/  | /' "$tmp/report"
      echo "  Programs (or plugins) built against the baseline would break: only add functions, and"
      echo "  only append fields to structs that begin with size_t struct_size. If the break is"
      echo "  intended, $bump,"
      echo "  then run scripts/abi-baseline.sh and commit abi/ in the same change (docs/abi.md)."
      failed=1
      ;;
    *)
      echo "ABI check ERROR ($label): abidiff failed:"
      cat "$tmp/report"
      failed=1
      ;;
  esac
}

check "C ABI, $(basename "$c_baseline" .abi)" "$c_bin" "$c_baseline" \
  "bump GPTOSS_ABI_VERSION (the SONAME major) and the version in include/gptoss/version.h"
check "plugin ABI, $(basename "$plugin_baseline" .abi)" "$plugin_bin" "$plugin_baseline" \
  "bump GPTOSS_BACKEND_ABI_MAJOR in include/gptoss/backend.h"
exit $failed
