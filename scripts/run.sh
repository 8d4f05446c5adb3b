#!/usr/bin/env bash
# Sets up whatever is missing, builds, and runs the chat CLI on the default model (the tiny
# synthetic model, generated on first use) — or on the model and mode given:
#   scripts/run.sh                      interactive chat; when stdin is not a terminal, the
#                                       lines it gives (or one greeting if it gives none)
#                                       are the user's turns
#   scripts/run.sh generate -i "Hello"  any arguments are passed to the gptoss CLI
# It builds the CLI and what it needs, nothing else (scripts/build-programs.sh: progress on
# stderr, the compiler's output in build/build-programs.log); a second run starts at once.
# GPTOSS_BUILD_DIR=DIR builds in DIR instead of build/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build-programs.sh run gptoss-cli
cli="${GPTOSS_BUILD_DIR:-build}/bin/gptoss"
export GPTOSS_TOKENIZER_JSON="${GPTOSS_TOKENIZER_JSON:-$root/third_party/tokenizer/tokenizer.json}"
if [ $# -gt 0 ]; then exec "$cli" "$@"; fi
if [ -t 0 ]; then exec "$cli" chat; fi
script="$(cat)"
[ -n "$script" ] || script="Hello! What can you do?"
printf '%s\n' "$script" | while IFS= read -r line; do printf '> %s\n' "$line" >&2; done
printf '%s\n' "$script" | exec "$cli" chat --max-tokens 64
