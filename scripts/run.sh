#!/usr/bin/env bash
# Sets up whatever is missing, builds, and runs the chat CLI on the default model (the tiny
# synthetic model, generated on first use) — or on the model and mode given:
#   scripts/run.sh                      interactive chat; when stdin is not a terminal, the
#                                       lines it gives (or one greeting if it gives none)
#                                       are the user's turns
#   scripts/run.sh generate -i "Hello"  any arguments are passed to the gptoss CLI (on the
#                                       tiny model, with a short answer unless they say how long)
# It builds the CLI and what it needs, nothing else (scripts/build-programs.sh: progress on
# stderr, the compiler's output in build/build-programs.log); a second run starts at once.
# GPTOSS_BUILD_DIR=DIR builds in DIR instead of build/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build-programs.sh run gptoss-cli
cli="${GPTOSS_BUILD_DIR:-build}/bin/gptoss"
export GPTOSS_TOKENIZER_JSON="${GPTOSS_TOKENIZER_JSON:-$root/third_party/tokenizer/tokenizer.json}"
# The tiny model's answers are noise: a short one (16 tokens of reasoning, then the answer,
# 64 in all) shows that everything works, where the CLI's default of 1024 tokens takes
# seconds and may be all reasoning, which generate does not print. Not with a real --model,
# nor where the arguments say otherwise.
extra=()
args=" $* "
if [[ "$args" != *" --model"* && "$args" != *" -m "* ]]; then
  [[ "$args" == *" --max-tokens"* ]] || extra+=(--max-tokens 64)
  [[ "$args" =~ \ --(max-reasoning-tokens|raw|no-harmony|no-constrain) ]] || extra+=(--max-reasoning-tokens 16)
fi
if [ $# -gt 0 ]; then exec "$cli" "$@" "${extra[@]}"; fi
if [ -t 0 ]; then exec "$cli" chat "${extra[@]}"; fi
script="$(cat)"
[ -n "$script" ] || script="Hello! What can you do?"
printf '%s\n' "$script" | while IFS= read -r line; do printf '> %s\n' "$line" >&2; done
printf '%s\n' "$script" | exec "$cli" chat "${extra[@]}"
