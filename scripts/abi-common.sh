# ABI dumps and comparisons shared by scripts/abi-check.sh, scripts/abi-baseline.sh and
# tests/abi/test_abi_policy.sh (docs/abi.md). Sourced; needs $root, the checkout.

# abi_dump BINARY HEADERS_DIR OUT [ABIDW_ARGS...]: the public ABI of BINARY as abixml — its
# exported functions and the types of HEADERS_DIR they reach — without paths, line numbers or
# anything else that changes with unrelated edits or from one checkout or machine to another.
abi_dump() {
  local bin="$1" headers="$2" out="$3"
  shift 3
  # (grep -c reads all of readelf's output: grep -q could leave it a SIGPIPE, failing the pipe)
  if ! readelf -S "$bin" | grep -c '\.debug_info' > /dev/null; then
    echo "abi: $bin has no debug information: the ABI of its types cannot be read (the build" >&2
    echo "     compiles the C API layer and the plugin probe with -g; was it stripped?)" >&2
    return 1
  fi
  abidw --headers-dir "$headers" --drop-private-types --exported-interfaces-only \
        --no-corpus-path --no-comp-dir-path --no-elf-needed --no-show-locs --type-id-style hash \
        "$@" --out-file "$out" "$bin"
}

# abi_compare OLD.abi NEW.abi HEADERS_DIR REPORT: returns 0 when NEW keeps every promise of
# OLD, 1 when it breaks one, 2 when the comparison itself failed; REPORT says what changed.
# NEW may add functions, enumerators, and fields at the end of the structs of HEADERS_DIR that
# begin with `size_t struct_size` (abi-as-seen-by-old.py cuts those back before abidiff looks).
abi_compare() {
  local old="$1" new="$2" headers="$3" report="$4" rc=0
  python3 "$root/scripts/abi-as-seen-by-old.py" "$headers" "$old" "$new" "$report.seen.abi" \
    > "$report" 2>&1 || return 2
  abidiff --no-added-syms "$old" "$report.seen.abi" > "$report" 2>&1 || rc=$?
  rm -f "$report.seen.abi"
  ((rc == 0)) && return 0
  ((rc & 3)) && return 2  # ABIDIFF_ERROR, ABIDIFF_USAGE_ERROR
  return 1                # ABIDIFF_ABI_CHANGE, ABIDIFF_ABI_INCOMPATIBLE_CHANGE
}

# abi_locate BUILD_DIR: the two binaries of a build and their baselines (in abi/, or
# $GPTOSS_ABI_DIR for the tests), keyed by their major:
#   c_bin, c_baseline            libgptoss.so; abi/libgptoss.so.<N>.abi (N from its SONAME)
#   plugin_bin, plugin_baseline  the probe (abi/plugin_abi_probe.c);
#                                abi/gptoss-backend-abi-<M>.abi (M = GPTOSS_BACKEND_ABI_MAJOR)
abi_locate() {
  local abi_dir="${GPTOSS_ABI_DIR:-$root/abi}"
  c_bin="$1/lib/libgptoss.so"
  plugin_bin="$1/lib/libgptoss-plugin-abi-probe.so"
  local f
  for f in "$c_bin" "$plugin_bin"; do
    if [ ! -e "$f" ]; then
      echo "abi: $f is missing: build it first (cmake --build $1 --target gptoss gptoss-plugin-abi-probe)" >&2
      return 1
    fi
  done
  local soname major
  soname="$(readelf -d "$c_bin" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')"
  major="$(sed -n 's/^#define GPTOSS_BACKEND_ABI_MAJOR \([0-9][0-9]*\).*/\1/p' "$root/include/gptoss/backend.h")"
  if [ -z "$soname" ] || [ -z "$major" ]; then
    echo "abi: no SONAME in $c_bin or no GPTOSS_BACKEND_ABI_MAJOR in include/gptoss/backend.h" >&2
    return 1
  fi
  c_baseline="$abi_dir/$soname.abi"
  plugin_baseline="$abi_dir/gptoss-backend-abi-$major.abi"
}
