#!/usr/bin/env bash
# Fault injection against gptoss-server on loopback, on the shared tiny conformance model:
# each scenario (tests/server/faults/<name>.py) starts its own servers, injects its fault and
# checks what the server must do (docs/reliability.md, "Faults"). A throwaway PostgreSQL
# cluster is started for the postgres scenario and stopped on exit, even on failure.
#
#   scripts/faults.sh                  the short version (CI, from scripts/test.sh), then a
#                                      1-minute soak (scripts/soak.sh; SOAK_SECONDS=N)
#   scripts/faults.sh --long           longer: more crash rounds, longer outages, a 10-minute soak
#   scripts/faults.sh crash signals    only these scenarios
#   FAULTS_SEED=N scripts/faults.sh    repeat a run's random requests (each run prints its seed)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${GPTOSS_BUILD_DIR:-$root/build}"
server_bin="$build/bin/gptoss-server"
model="${GPTOSS_TEST_MODEL:-${GPTOSS_SHARED_DIR:-$root/../shared}/conformance/logits/model-hf}"
tokenizer="${GPTOSS_TOKENIZER_JSON:-$root/third_party/tokenizer/tokenizer.json}"

[ -x "$server_bin" ] || cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target gptoss-server

args=()
names=()
for a in "$@"; do
  case "$a" in
    --long) args+=(--long) ;;
    *) names+=("$a") ;;
  esac
done

tmp="$(mktemp -d)"
chmod 755 "$tmp"  # the postgres user (PostgreSQL refuses root) reaches its socket here
cleanup() {
  local status=$?
  [ -f "$tmp/pg/pg_ctl" ] && bash "$tmp/pg/pg_ctl" stop -m immediate >/dev/null 2>&1 || true
  [ $status -eq 0 ] || echo "(the scenarios' files were in $tmp)"
  rm -rf "$tmp"
  exit $status
}
trap cleanup EXIT

GPTOSS_SERVER_BIN="$server_bin" GPTOSS_TEST_MODEL="$model" GPTOSS_TEST_TOKENIZER="$tokenizer" \
  GPTOSS_TEST_TMP="$tmp" python3 "$root/tests/server/faults/run.py" "${args[@]}" "${names[@]}"

# Every scenario: then the soak, 1 minute (10 with --long).
if [ ${#names[@]} -eq 0 ]; then
  seconds="${SOAK_SECONDS:-60}"
  [ ${#args[@]} -eq 0 ] || seconds="${SOAK_SECONDS:-600}"
  echo "== soak: ${seconds} s (scripts/soak.sh)"
  GPTOSS_TEST_MODEL="$model" GPTOSS_TOKENIZER_JSON="$tokenizer" GPTOSS_TEST_TMP="$tmp" \
    bash "$root/scripts/soak.sh" "$seconds" --interval "$((seconds >= 600 ? 60 : 10))"
fi
