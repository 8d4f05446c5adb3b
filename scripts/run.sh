#!/usr/bin/env bash
# Sets up whatever is missing, builds, and runs the chat CLI on the default model (the tiny
# synthetic model, generated on first use) — or on the model and mode given:
#   scripts/run.sh                      interactive chat; when stdin is not a terminal, the
#                                       lines it gives (or one greeting if it gives none)
#                                       are the user's turns
#   scripts/run.sh generate -i "Hello"  any arguments are passed to the gptoss CLI
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >&2
export GPTOSS_TOKENIZER_JSON="${GPTOSS_TOKENIZER_JSON:-$root/third_party/tokenizer/tokenizer.json}"
if [ $# -gt 0 ]; then exec build/bin/gptoss "$@"; fi
if [ -t 0 ]; then exec build/bin/gptoss chat; fi
script="$(cat)"
[ -n "$script" ] || script="Hello! What can you do?"
printf '%s\n' "$script" | while IFS= read -r line; do printf '> %s\n' "$line" >&2; done
printf '%s\n' "$script" | exec build/bin/gptoss chat --max-tokens 64
