#!/usr/bin/env bash
# Builds one or more programs and only what they need to run, in build/ (the directory
# scripts/test.sh builds everything in, so nothing built here is built twice; another one
# with GPTOSS_BUILD_DIR=DIR):
#
#   scripts/build-programs.sh NAME TARGET...     e.g. run gptoss-cli
#
# NAME prefixes the progress lines (one per stage, on stderr): installing packages (only what
# building needs: scripts/setup.sh --build-only), configuring (only when build/ has no CMake
# cache), building N% (the compiler's output goes to build/build-programs.log, whose tail is
# printed if the build fails). The targets bring the library, the CPU backend plugin and the
# default model's generator with them (their CMake dependencies). A GPU backend plugin is
# added only where its toolkit was found at configure time and a device is present: no test
# program and no plugin the machine cannot run is compiled.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
name="$1"
shift
say() { echo "$name: $*" >&2; }
build="${GPTOSS_BUILD_DIR:-build}"
log="$build/build-programs.log"
stamp="$build/.build-programs-$(echo "$*" | tr ' ' '+')"

bash scripts/setup.sh --build-only >&2

fail() {
  echo >&2
  tail -n 40 "$log" >&2 || true
  say "$1 failed; the whole log: $root/$log"
  exit 1
}

configured=0
if [ ! -f "$build/CMakeCache.txt" ]; then
  say "configuring ($build/, Release)"
  mkdir -p "$build"
  # The same configuration as scripts/test.sh's, so the suite reuses this directory as is.
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 || fail "configuring"
  configured=1
fi

targets=("$@")
# A GPU plugin only where it can run: its target exists (the toolkit was found) and the
# machine has a device of that kind.
has_target() { grep -q "/$1.dir\$" "$build/CMakeFiles/TargetDirectories.txt" 2>/dev/null; }
if has_target gptoss-backend-cuda && nvidia-smi -L >/dev/null 2>&1; then
  targets+=(gptoss-backend-cuda)
fi
if has_target gptoss-backend-hip && [ -e /dev/kfd ] && rocminfo 2>/dev/null | grep -q 'gfx[0-9]'; then
  targets+=(gptoss-backend-hip)
fi

# Nothing to do when no file of the checkout (outside .git and the build directories), no
# installed package (dpkg's status) and not the CMake cache changed since the last successful
# build of these targets began, and the programs and libraries are the files that build left
# (same names and times): the modification-time rule make applies, checked here in a few
# milliseconds instead of make's walk over every target's dependencies (seconds on a busy
# 2-core machine).
outputs() {
  echo "${targets[*]}"
  find "$build/bin" "$build/lib" -maxdepth 1 -printf '%p %T@\n' 2>/dev/null | sort
}
up_to_date() {
  [ -f "$stamp" ] || return 1
  [ "$(cat "$stamp")" = "$(outputs)" ] || return 1
  [ "$build/CMakeCache.txt" -nt "$stamp" ] && return 1
  [ -f /var/lib/dpkg/status ] && [ /var/lib/dpkg/status -nt "$stamp" ] && return 1
  local newer
  newer="$(find . \( -path ./.git -o -path './build*' -o -path ./third_party/node \) -prune \
                -o -newer "$stamp" -print -quit)"
  [ -z "$newer" ]
}
if up_to_date; then exit 0; fi

jobs="$(nproc 2>/dev/null || echo 2)"
start=$SECONDS
say "building ${targets[*]} (log: $log)"
rm -f "$stamp"
[ $configured -eq 1 ] || : >"$log"
# The stamp gets the build's start time: a file changed while it runs is newer than it.
touch "$stamp.start"
tty=0
[ -t 2 ] && tty=1
# Make prints "[ 45%] Building ...", Ninja "[12/80] Building ...": one percentage, shown in
# place on a terminal.
set +e
cmake --build "$build" -j"$jobs" --target "${targets[@]}" >>"$log" 2>&1 &
builder=$!
if [ $tty -eq 1 ]; then
  shown=-1
  while kill -0 $builder 2>/dev/null; do
    pct="$(tail -c 4096 "$log" | grep -o '^\[ *[0-9]*%\]\|^\[[0-9]*/[0-9]*\]' | tail -1 |
           awk -F'[][/% ]+' '{ if (NF >= 4 && $3 > 0) print int(100 * $2 / $3); else print $2 }')"
    if [ -n "$pct" ] && [ "$pct" != "$shown" ]; then
      printf '\r%s: building %s%%' "$name" "$pct" >&2
      shown="$pct"
    fi
    sleep 0.5
  done
  printf '\r\033[K' >&2
fi
wait $builder
rc=$?
set -e
[ $rc -eq 0 ] || fail "building"
say "built in $((SECONDS - start)) s"
outputs >"$stamp.new"
touch -r "$stamp.start" "$stamp.new"
mv "$stamp.new" "$stamp"
rm -f "$stamp.start"
