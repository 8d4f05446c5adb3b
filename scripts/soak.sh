#!/usr/bin/env bash
# Soak: gptoss-server on loopback under clients mixing every endpoint for DURATION seconds, every
# answer checked; RSS, descriptors, store size, p50/p99 latency and errors each interval; a leak
# (growth after the warm-up) fails it (tests/server/faults/soak.py, docs/reliability.md).
#
#   scripts/soak.sh 120                           CI: 2 minutes on the tiny conformance model
#   GPTOSS_TEST_MODEL=/path/to/gpt-oss-20b scripts/soak.sh 600 --clients 2 --timeout 600
#   scripts/soak.sh 3600 --interval 60 --server-args "--max-running 8"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ $# -ge 1 ] || { echo "usage: scripts/soak.sh SECONDS [--clients N] [--interval S] [--timeout S] [--leak-mib M] [--server-args '...']"; exit 2; }
build="${GPTOSS_BUILD_DIR:-$root/build}"
[ -x "$build/bin/gptoss-server" ] || cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target gptoss-server
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
GPTOSS_SERVER_BIN="$build/bin/gptoss-server" \
  GPTOSS_TEST_MODEL="${GPTOSS_TEST_MODEL:-${GPTOSS_SHARED_DIR:-$root/../shared}/conformance/logits/model-hf}" \
  GPTOSS_TEST_TOKENIZER="${GPTOSS_TOKENIZER_JSON:-$root/third_party/tokenizer/tokenizer.json}" \
  GPTOSS_TEST_TMP="$tmp" python3 "$root/tests/server/faults/soak.py" "$@"
