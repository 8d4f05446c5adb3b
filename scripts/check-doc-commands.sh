#!/usr/bin/env bash
# Every script that README.md and docs/*.md name (scripts/NAME) exists in the checkout, and
# every shell script they show without `bash` in front (`scripts/x.sh`, `./scripts/x.sh`) has
# its executable bit in git (mode 100755), so it runs exactly as shown.
#
#   scripts/check-doc-commands.sh [ROOT]    checks ROOT (default: this checkout)
#   scripts/check-doc-commands.sh --self-test
#                                           also shows that it fails on a missing script and
#                                           on a shell script committed without its run bit
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

check() {
  local root="$1" bad=0 ref file mode
  cd "$root"
  local docs=(README.md docs/*.md)
  while IFS= read -r ref; do
    file="scripts/${ref##*scripts/}"
    if [ ! -f "$file" ]; then
      echo "check-doc-commands: $file is named in the docs ($ref) but does not exist"
      bad=1
      continue
    fi
    case "$ref" in bash\ * | sh\ * | python3\ *) continue ;; esac
    [[ "$file" == *.sh ]] || continue
    if [ -e .git ]; then
      mode="$(git ls-files -s -- "$file" | cut -d' ' -f1)"
    else
      mode=100644
      [ -x "$file" ] && mode=100755
    fi
    if [ -z "$mode" ]; then
      echo "check-doc-commands: $file is named in the docs but not committed"
      bad=1
    elif [ "$mode" != 100755 ]; then
      echo "check-doc-commands: $file is shown as a command ($ref) but is committed without its run bit" \
           "(mode $mode; git update-index --chmod=+x $file)"
      bad=1
    fi
  done < <(grep -ohE '(bash |sh |python3 |\./)?scripts/[A-Za-z0-9_.-]+[A-Za-z0-9]' "${docs[@]}" | sort -u)
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (
    cd "$tmp"
    git init -q .
    mkdir -p scripts docs
    printf '#!/bin/sh\n' >scripts/ok.sh
    printf '#!/bin/sh\n' >scripts/no-bit.sh
    chmod +x scripts/ok.sh
    printf 'Run `scripts/ok.sh` or `bash scripts/no-bit.sh`.\n' >README.md
    printf 'nothing here\n' >docs/x.md
    git add . && git -c user.name=t -c user.email=t@t commit -qm t
  )
  (check "$tmp") >/dev/null || { echo "check-doc-commands: self-test: a correct tree failed"; exit 1; }
  printf 'Then `./scripts/no-bit.sh`.\n' >>"$tmp/docs/x.md"
  out="$(check "$tmp")" && { echo "check-doc-commands: self-test: a script without its run bit passed"; exit 1; }
  grep -q "no-bit.sh is shown as a command" <<<"$out" || { echo "$out"; exit 1; }
  printf 'And `scripts/gone.sh`.\n' >>"$tmp/docs/x.md"
  out="$(check "$tmp")" || true
  grep -q "gone.sh is named in the docs" <<<"$out" || { echo "self-test: a missing script passed"; exit 1; }
  echo "check-doc-commands: self-test passed"
  shift
fi

(check "${1:-$here/..}") || exit 1
echo "check-doc-commands: every script the docs name exists; those shown as commands are executable"
