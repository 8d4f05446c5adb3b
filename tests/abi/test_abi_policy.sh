#!/usr/bin/env bash
# The ABI check's own test (docs/abi.md): which changes it refuses and which it lets through,
# judged on stand-ins built from edited copies of the real headers (tests/abi/c_api_mock.c for
# gptoss.h, abi/plugin_abi_probe.c for gptoss/backend.h), on the real libgptoss.so, and through
# scripts/abi-check.sh itself.
#   tests/abi/test_abi_policy.sh BUILD_DIR        (CTest: abi.policy)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/scripts/abi-common.sh"
build="$(cd "$1" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
wrong=0

# headers NAME [FILE PERL_EDIT]: $tmp/NAME, a copy of the public headers with one edit.
headers() {
  local dir="$tmp/$1"
  mkdir -p "$dir/gptoss"
  cp "$root/include/gptoss.h" "$dir/"
  cp "$root/include/gptoss/backend.h" "$root/include/gptoss/version.h" "$dir/gptoss/"
  if [ $# -gt 1 ]; then
    cp "$dir/$2" "$dir/$2.orig"
    perl -0pi -e "$3" "$dir/$2"
    if cmp -s "$dir/$2" "$dir/$2.orig"; then echo "test bug: the edit of $1 changed nothing" >&2; exit 1; fi
    rm "$dir/$2.orig"
  fi
}

# compile_dump NAME SOURCE [CFLAGS...]: SOURCE compiled against $tmp/NAME's headers, dumped to
# $tmp/NAME.abi.
compile_dump() {
  local name="$1" src="$2"
  shift 2
  cc -std=c99 -g -shared -fPIC -fvisibility=hidden -I"$tmp/$name" "$@" "$src" -o "$tmp/$name/lib.so"
  abi_dump "$tmp/$name/lib.so" "$tmp/$name" "$tmp/$name.abi"
}

# expect pass|fail WHAT OLD NEW [HEADERS_DIR]: abi_compare of $tmp/OLD.abi -> $tmp/NEW.abi,
# with NEW's headers ($tmp/NEW unless given).
expect() {
  local want="$1" what="$2" rc=0
  abi_compare "$tmp/$3.abi" "$tmp/$4.abi" "${5:-$tmp/$4}" "$tmp/report" || rc=$?
  case "$want/$rc" in
    pass/0 | fail/1) echo "ok    $want: $what" ;;
    *)
      echo "WRONG $what: expected $want, abi_compare returned $rc"
      sed 's/^/  | /' "$tmp/report"
      wrong=1
      ;;
  esac
}

mock="$root/tests/abi/c_api_mock.c"
probe="$root/abi/plugin_abi_probe.c"

# --- the C ABI (gptoss.h) -------------------------------------------------------------------
headers c_base
compile_dump c_base "$mock"
headers c_append gptoss.h 's/(struct gptoss_model_options \{.*?)(\n\};)/$1\n  uint64_t appended;$2/s'
compile_dump c_append "$mock"
expect pass "a field appended to a struct that begins with struct_size" c_base c_append
headers c_insert gptoss.h 's/(struct gptoss_model_options \{\n[^\n]*\n)/$1  int32_t inserted;\n/'
compile_dump c_insert "$mock"
expect fail "a field inserted at the start of gptoss_model_options" c_base c_insert
headers c_retype gptoss.h 's/int32_t device;/int64_t device;/'
compile_dump c_retype "$mock"
expect fail "a field of gptoss_model_options retyped" c_base c_retype
headers c_array gptoss.h 's/(  float logprob;[^\n]*\n)/$1  float appended;\n/'
compile_dump c_array "$mock"
expect fail "a field appended to gptoss_token_logprob (arrays of it; no struct_size)" c_base c_array
headers c_enum gptoss.h 's/(gptoss_status_internal = 10)/$1,\n  gptoss_status_appended = 11/'
compile_dump c_enum "$mock"
expect pass "a status code added" c_base c_enum
headers c_removed
compile_dump c_removed "$mock" -DMOCK_WITHOUT_RESET
expect fail "a function removed" c_base c_removed
headers c_added
compile_dump c_added "$mock" -DMOCK_WITH_EXTRA
expect pass "a function added" c_base c_added

# --- the plugin ABI (gptoss/backend.h) ------------------------------------------------------
headers p_base
compile_dump p_base "$probe"
headers p_append gptoss/backend.h \
  's/(struct gptoss_backend_api \{.*?)(\n\};)/$1\n  void (*appended_slot)(void* dev);$2/s'
compile_dump p_append "$probe"
expect pass "a slot appended to gptoss_backend_api" p_base p_append
headers p_insert gptoss/backend.h 's/(  const char\* name;[^\n]*"cpu"[^\n]*\n)/$1  void* inserted;\n/'
compile_dump p_insert "$probe"
expect fail "a field inserted in the middle of gptoss_backend_api" p_base p_insert
headers p_attn gptoss/backend.h 's/(  int32_t page_table_offset;\n)/$1  int32_t appended;\n/'
compile_dump p_attn "$probe"
expect fail "a field appended to gptoss_attn_seq (arrays of it; no struct_size)" p_base p_attn

# --- the real libgptoss.so: a function it no longer exports, or exports anew ----------------
abi_dump "$build/lib/libgptoss.so" "$root/include" "$tmp/real.abi"
# The same dump less one function: its ELF symbol and its declaration.
perl -0pe "s/^ *<elf-symbol name='gptoss_context_truncate'[^\n]*\n//m;
           s/^ *<function-decl name='gptoss_context_truncate'.*?<\/function-decl>\n//ms" \
  "$tmp/real.abi" > "$tmp/real_without.abi"
if grep -q gptoss_context_truncate "$tmp/real_without.abi"; then echo "test bug: not removed" >&2; exit 1; fi
expect fail "libgptoss.so without gptoss_context_truncate" real real_without "$root/include"
expect pass "libgptoss.so with gptoss_context_truncate added" real_without real "$root/include"
abi_dump "$build/lib/libgptoss.so" "$root/include" "$tmp/real_again.abi"
if cmp -s "$tmp/real.abi" "$tmp/real_again.abi"; then
  echo "ok    the dump of libgptoss.so is the same twice (a stable baseline)"
else
  echo "WRONG two dumps of libgptoss.so differ"
  wrong=1
fi

# --- scripts/abi-check.sh end to end: a build of stand-ins against baselines of them ----------
# check_script pass|fail WHAT PATTERN: abi-check.sh's verdict, and a line of its output.
check_script() {
  local want="$1" what="$2" pattern="$3" rc=0
  GPTOSS_ABI_DIR="$tmp/baselines" bash "$root/scripts/abi-check.sh" "$tmp/fakebuild" > "$tmp/out" 2>&1 || rc=$?
  if { [ "$want" = pass ] && ((rc == 0)); } || { [ "$want" = fail ] && ((rc == 1)); }; then
    if grep -q -- "$pattern" "$tmp/out"; then
      echo "ok    abi-check.sh $want: $what"
      return
    fi
  fi
  echo "WRONG abi-check.sh ($what): exit $rc, expected $want with a line matching '$pattern':"
  sed 's/^/  | /' "$tmp/out"
  wrong=1
}
soname_flags=(-Wl,-soname,libgptoss.so.0)
compile_dump c_base "$mock" "${soname_flags[@]}"
compile_dump c_removed "$mock" -DMOCK_WITHOUT_RESET "${soname_flags[@]}"
compile_dump c_added "$mock" -DMOCK_WITH_EXTRA "${soname_flags[@]}"
major="$(sed -n 's/^#define GPTOSS_BACKEND_ABI_MAJOR \([0-9]*\).*/\1/p' "$root/include/gptoss/backend.h")"
mkdir -p "$tmp/fakebuild/lib" "$tmp/baselines"
cp "$tmp/p_base/lib.so" "$tmp/fakebuild/lib/libgptoss-plugin-abi-probe.so"
cp "$tmp/c_base/lib.so" "$tmp/fakebuild/lib/libgptoss.so"
check_script fail "no baselines" "there is no baseline"
cp "$tmp/c_base.abi" "$tmp/baselines/libgptoss.so.0.abi"
cp "$tmp/p_base.abi" "$tmp/baselines/gptoss-backend-abi-$major.abi"
check_script pass "the baseline itself" "ABI check passed (C ABI"
cp "$tmp/c_added/lib.so" "$tmp/fakebuild/lib/libgptoss.so"
check_script pass "an added function, reported as not yet recorded" "gptoss_context_mock_added"
cp "$tmp/c_removed/lib.so" "$tmp/fakebuild/lib/libgptoss.so"
check_script fail "a removed function, and how to update the baseline" "scripts/abi-baseline.sh"

exit $wrong
