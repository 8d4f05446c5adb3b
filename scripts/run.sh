#!/usr/bin/env bash
# Sets up whatever is missing, builds, and runs the chat CLI on the default model (the tiny
# synthetic model, generated on first use) — or on the model and mode given:
#   scripts/run.sh                      interactive chat (one scripted exchange if stdin is not a terminal)
#   scripts/run.sh generate -i "Hello"  any arguments are passed to the gptoss CLI
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >&2
export GPTOSS_TOKENIZER_JSON="${GPTOSS_TOKENIZER_JSON:-$root/third_party/tokenizer/tokenizer.json}"
if [ $# -eq 0 ]; then set -- chat; fi
exec build/bin/gptoss "$@"
