#!/usr/bin/env bash
# Checks that `scripts/run.sh generate` builds the CLI and what it needs to run, and nothing
# else: no test program, fuzz replay, fake or strict test plugin, benchmark, server, and no
# GPU plugin on a machine without that GPU. scripts/test.sh runs it first, on the fresh build/
# of a clean clone (CI), so the release build that follows reuses everything built here. On a
# checkout whose build/ is already configured it uses build-run-check/ instead (kept, so a
# second run costs only what changed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dir=build
[ ! -e build/CMakeCache.txt ] || dir=build-run-check
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT

echo "check-run: bash scripts/run.sh generate -i Hello --max-tokens 4 (in $dir/)"
# Token ids, not text: four tokens of the random model may all be reasoning, which the text
# output hides.
answer="$(GPTOSS_BUILD_DIR="$dir" GPTOSS_HOME="$home" \
          bash scripts/run.sh generate -i Hello --max-tokens 4 --format ids 2>"$home/stderr")" || {
  cat "$home/stderr"
  echo "check-run: FAILED: scripts/run.sh exited with an error"
  exit 1
}
[ -f "$home/models/tiny/config.json" ] || {
  cat "$home/stderr"
  echo "check-run: FAILED: the default model was not made in $home/models/tiny"
  exit 1
}
grep -Eq '^[0-9]+( [0-9]+)*$' <<<"$answer" || {
  cat "$home/stderr"
  echo "check-run: FAILED: no token ids in the answer: '$answer'"
  exit 1
}
echo "check-run: answered with tokens $answer"

# The check means something only if the unbuilt targets exist in this configuration.
targets="$(cmake --build "$dir" --target help)"
for t in gptoss-tests gptoss-server gptoss-backend-strict; do
  grep -q "\.\.\. $t\$" <<<"$targets" || { echo "check-run: FAILED: no target $t in $dir"; exit 1; }
done

# Every program and library in bin/ and lib/ must be one the CLI runs with.
allowed='^(gptoss|gptoss-make-model|libgptoss\.so(\.[0-9.]+)?|libgptoss-backend-cpu\.so|libgptoss_core\.a|libgptoss-cpu-kernels\.a)$'
if nvidia-smi -L >/dev/null 2>&1; then
  allowed="${allowed%)\$}|libgptoss-backend-cuda\.so)\$"
fi
if [ -e /dev/kfd ] && rocminfo 2>/dev/null | grep -q 'gfx[0-9]'; then
  allowed="${allowed%)\$}|libgptoss-backend-hip\.so)\$"
fi
bad=0
while IFS= read -r f; do
  if ! grep -Eq "$allowed" <<<"$(basename "$f")"; then
    echo "check-run: FAILED: scripts/run.sh built $f, which the CLI does not need"
    bad=1
  fi
done < <(find "$dir/bin" "$dir/lib" -maxdepth 1 \( -type f -o -type l \))
# Nor compiled (without linking) anything of the tests, tools other than the model
# generator, the examples other than the CLI, the server or an unusable GPU backend.
not_needed='/(tests|server|examples/(bench|tokenizer_bench)|tools/conformance|abi)/'
grep -q 'backend-cuda' <<<"$allowed" || not_needed="$not_needed|/backends/cuda/"
grep -q 'backend-hip' <<<"$allowed" || not_needed="$not_needed|/backends/hip/"
while IFS= read -r d; do
  echo "check-run: FAILED: scripts/run.sh compiled objects in $d"
  bad=1
done < <(find "$dir" -name '*.o' -printf '%h\n' | sort -u |
         grep -E "$not_needed" || true)
[ $bad -eq 0 ] || exit 1
echo "check-run: passed: $(find "$dir/bin" "$dir/lib" -maxdepth 1 -type f | wc -l) files built, all needed by the CLI"
