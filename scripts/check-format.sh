#!/usr/bin/env bash
# Checks that the C/C++ lines changed since a base commit are formatted as .clang-format says,
# with clang-format 14, and fails with the diff that would fix them. Only changed lines count:
# the tree as a whole predates .clang-format and is not reformatted wholesale.
#   scripts/check-format.sh [--fix] [BASE]
# BASE defaults to the commit that added .clang-format; the working tree (committed or not) is
# compared with it. --fix formats those lines in place instead. This is the check of
# `git clang-format --diff BASE`, with one difference: a file moved or renamed since BASE counts
# only its edited lines (git clang-format sees every line of a moved file as new).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-format: not a git checkout, no changed lines to find: skipped"
  exit 0
fi
fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
cf="${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}"
if [ -z "$cf" ]; then
  echo "check-format: clang-format-14 not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
case "$("$cf" --version)" in
  *" version 14."*) ;;
  *) echo "check-format: warning: $("$cf" --version) is not clang-format 14; its output may differ" >&2 ;;
esac

base="${1:-$(git log --diff-filter=A --format=%H -- .clang-format | tail -1)}"
base="${base:-HEAD}"  # .clang-format not committed yet: check what is not committed
if ! git rev-parse --verify -q "$base^{commit}" >/dev/null; then
  echo "check-format: no commit '$base' (a shallow clone may lack it: fetch more history)" >&2
  exit 2
fi

# file -> "--lines=a:b ..." of the lines added or changed since base (deletions leave none).
declare -A ranges=()
while read -r file spec; do
  ranges[$file]+=" --lines=$spec"
done < <(git diff -M --no-color --no-ext-diff -U0 --diff-filter=d "$base" -- \
           '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' '*.cu' '*.cuh' ':!third_party' |
         awk '/^\+\+\+ / { file = substr($2, 3); next }
              /^@@ / { split($3, a, ","); start = substr(a[1], 2); n = (2 in a) ? a[2] : 1;
                       if (n > 0 && file != "") print file, start ":" (start + n - 1) }')

if [ "${#ranges[@]}" -eq 0 ]; then
  echo "check-format: no C/C++ lines changed since ${base:0:12}"
  exit 0
fi

bad=0
for file in $(printf '%s\n' "${!ranges[@]}" | sort); do
  # shellcheck disable=SC2086  # the ranges are separate arguments
  if [ $fix -eq 1 ]; then
    "$cf" --style=file -i ${ranges[$file]} "$file"
  elif ! "$cf" --style=file ${ranges[$file]} "$file" |
       diff -u --label "a/$file" --label "b/$file" "$file" -; then
    bad=1
  fi
done

if [ $fix -eq 1 ]; then
  echo "check-format: formatted the lines changed since ${base:0:12} in ${#ranges[@]} file(s)"
elif [ $bad -ne 0 ]; then
  echo "check-format: FAILED: lines changed since ${base:0:12} are not formatted as .clang-format" \
       "says (the diff above fixes them; scripts/check-format.sh --fix${1:+ $1} applies it)" >&2
  exit 1
else
  echo "check-format: the C/C++ lines changed since ${base:0:12} in ${#ranges[@]} file(s) are formatted"
fi
