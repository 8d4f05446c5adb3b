#!/usr/bin/env bash
# End-to-end tests of gptoss-server with the official OpenAI Node SDK (tests/server/sdk), on
# the shared tiny conformance model: the suite against the SQLite store, the same suite against
# a PostgreSQL store (a temporary cluster started here and stopped on exit, even on failure),
# structured output within the token limit on many seeds (tests/server/sdk/budget.test.mjs,
# on a model of fresh random weights), the lifecycle tests (drain on SIGTERM, 429, auth,
# limits), then a load test shortened for CI.
#
#   scripts/test-server.sh                 what CI runs (after scripts/test.sh has built)
#   LOAD_SECONDS=120 scripts/test-server.sh   the full 2-minute, 16-client load test
#   scripts/test-server.sh --load-only     only the load test
#   BUDGET_SEEDS=N BUDGET_BASE=N BUDGET_MODEL_SEED=N scripts/test-server.sh
#                                          the token-limit part's requests per case (20), and
#                                          a run's seeds, which it prints, to repeat it
#   DETERMINISM_ISA=avx2 scripts/test-server.sh
#                                          the deterministic-serving part on that CPU kernel
#                                          level instead of the machine's best one (below);
#                                          DETERMINISM_SEED=N SURFACES_SEED=N repeat a run
#   SPECULATIVE_SEED=N scripts/test-server.sh  repeats the speculative decoding part's requests
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${GPTOSS_BUILD_DIR:-$root/build}"
server_bin="$build/bin/gptoss-server"
model="${GPTOSS_TEST_MODEL:-${GPTOSS_SHARED_DIR:-$root/../shared}/conformance/logits/model-hf}"
tokenizer="${GPTOSS_TOKENIZER_JSON:-$root/third_party/tokenizer/tokenizer.json}"
node_dir="$root/third_party/node"
load_seconds="${LOAD_SECONDS:-20}"
budget_seeds="${BUDGET_SEEDS:-20}"
load_only=0
[ "${1:-}" = "--load-only" ] && load_only=1

[ -x "$server_bin" ] || cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target gptoss-server
[ -x "$build/bin/gptoss" ] && [ -x "$build/bin/gptoss-python-c-reference" ] ||
  cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target gptoss-cli gptoss-python-c-reference
[ -d "$node_dir/node_modules/openai" ] || bash scripts/setup.sh

tmp="$(mktemp -d)"
pids=()
pg_ctl_cmd=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ ${#pg_ctl_cmd[@]} -gt 0 ]; then "${pg_ctl_cmd[@]}" stop -m fast >/dev/null 2>&1 || true; fi
  if [ $status -ne 0 ] && [ -f "$tmp/server.log" ]; then
    echo "---- last server log lines ($tmp/server.log)"; tail -n 40 "$tmp/server.log"
  fi
  rm -rf "$tmp"
  exit $status
}
trap cleanup EXIT

# Starts gptoss-server with the given extra flags; sets server_url and server_pid. The SDK
# suite runs on the scalar reference kernels, whose results do not depend on the batch, so a
# streamed and a plain request with the same seed produce the same tokens whatever else runs.
start_server() {
  : > "$tmp/server.err"
  local env=()
  [ -z "${SERVER_ISA:-}" ] || env=(GPTOSS_CPU_ISA="$SERVER_ISA")
  # --date: the system message states the date, so a seeded generation depends on it; the
  # SDK suite's seeded expectations (one forced call, a schema answer that completes) were
  # taken with this one and would break on other days.
  env "${env[@]}" "$server_bin" --model "${server_model:-$model}" --tokenizer "$tokenizer" --date 2026-11-26 \
    --port 0 --context 2048 --log-file "$tmp/server.log" "$@" 2>"$tmp/server.err" &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 1 300); do
    if grep -q "ready on" "$tmp/server.err"; then break; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then cat "$tmp/server.err"; echo "gptoss-server exited"; return 1; fi
    sleep 0.1
  done
  server_url="$(grep -o 'http://[^ ]*' "$tmp/server.err" | head -1)"
  [ -n "$server_url" ] || { cat "$tmp/server.err"; echo "gptoss-server did not become ready"; return 1; }
}

# SIGTERM, and the exit status must be 0 (a drained shutdown).
stop_server() {
  kill -TERM "$server_pid"
  local status=0
  wait "$server_pid" || status=$?
  [ $status -eq 0 ] || { echo "gptoss-server exited with $status after SIGTERM"; return 1; }
}

# A throwaway PostgreSQL cluster on a Unix socket in $tmp (as the postgres user when root:
# PostgreSQL refuses to run as root). Sets pg_uri.
start_postgres() {
  local bin
  bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  [ -x "$bin/initdb" ] || { echo "PostgreSQL server binaries not found (scripts/setup.sh installs postgresql)"; return 1; }
  local run=() user
  user="$(id -un)"
  if [ "$(id -u)" -eq 0 ]; then
    user=postgres
    run=(runuser -u postgres --)
    chmod 755 "$tmp"
  fi
  mkdir -p "$tmp/pg"
  [ "$(id -u)" -ne 0 ] || chown postgres "$tmp/pg"
  "${run[@]}" "$bin/initdb" -D "$tmp/pg/data" -U "$user" --auth=trust -E UTF8 >"$tmp/pg/initdb.log" 2>&1 \
    || { cat "$tmp/pg/initdb.log"; return 1; }
  pg_ctl_cmd=("${run[@]}" "$bin/pg_ctl" -D "$tmp/pg/data")
  "${pg_ctl_cmd[@]}" start -w -l "$tmp/pg/server.log" \
    -o "-k $tmp/pg -c listen_addresses='' -p 5432" >/dev/null || { cat "$tmp/pg/server.log"; return 1; }
  "${run[@]}" "$bin/createdb" -h "$tmp/pg" -p 5432 -U "$user" gptoss
  pg_uri="postgresql://$user@/gptoss?host=$tmp/pg&port=5432"
}

run_suite() {
  local label="$1"
  shift
  echo "== SDK suite against the $label store"
  SERVER_ISA=scalar start_server --precision exact "$@"
  GPTOSS_SERVER_URL="$server_url" GPTOSS_SERVER_MODEL=model-hf GPTOSS_SERVER_API_KEY=test-key \
    node --test --test-concurrency=1 "$root"/tests/server/sdk/*.test.mjs
  stop_server
}

if [ $load_only -eq 0 ]; then
  run_suite SQLite --store "$tmp/responses.sqlite3" --api-key test-key
  start_postgres
  GPTOSS_TEST_POSTGRES_URI="$pg_uri" "$build/bin/gptoss-server-tests" "[postgres]"
  run_suite PostgreSQL --store "$pg_uri" --api-key test-key

  # The SDK suite runs budget.test.mjs once per case (at the minimum budget); here it runs many
  # seeds per case, budgets from the minimum to 4x. On the default kernels (not the suite's
  # scalar ones: several times faster, and no expectation depends on batch-independent
  # results) and on a tiny model of fresh random weights each run, so every run also meets
  # weights no earlier run has. BUDGET_MODEL_SEED and BUDGET_BASE repeat a run's model and
  # requests; the tokens can still differ, as the default kernels' rounding depends on what is
  # batched together.
  model_seed="${BUDGET_MODEL_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
  budget_base="${BUDGET_BASE:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
  echo "== structured output within the token limit: $budget_seeds seeds per case" \
    "(BUDGET_MODEL_SEED=$model_seed BUDGET_BASE=$budget_base repeat this run)"
  "$build/bin/gptoss-make-model" --preset tiny --seed "$model_seed" --out "$tmp/budget-model" --format hf \
    --tokenizer-json "$tokenizer" >/dev/null
  server_model="$tmp/budget-model/model-hf" start_server --store "$tmp/budget.sqlite3" --api-key test-key
  GPTOSS_SERVER_URL="$server_url" GPTOSS_SERVER_MODEL=model-hf GPTOSS_SERVER_API_KEY=test-key \
    GPTOSS_BUDGET_SEEDS="$budget_seeds" GPTOSS_BUDGET_BASE="$budget_base" \
    node --test --test-concurrency=1 "$root"/tests/server/sdk/budget.test.mjs
  stop_server

  echo "== lifecycle: drain on SIGTERM, queue limits, auth, loading"
  GPTOSS_SERVER_BIN="$server_bin" GPTOSS_TEST_MODEL="$model" GPTOSS_TEST_TOKENIZER="$tokenizer" \
    GPTOSS_TEST_TMP="$tmp" node --test --test-concurrency=1 "$root"/tests/server/lifecycle/*.test.mjs

  # Deterministic serving: 16 concurrent streaming clients, each answer then asked alone
  # (tests/server/determinism_test.mjs), and one request through the server, the CLI, Python and
  # the C API (tests/server/surfaces_test.py), every surface on the same kernels. DETERMINISM_ISA
  # names a CPU kernel level (GPTOSS_CPU_ISA); `default`, the default, is the machine's best,
  # which /health must declare batch invariant. At the default precision (fast), as most
  # servers run.
  determinism_isa="${DETERMINISM_ISA:-default}"
  [ "$determinism_isa" != default ] || determinism_isa=""
  echo "== deterministic serving on the ${determinism_isa:-default} CPU kernels"
  SERVER_ISA="$determinism_isa" start_server --store "$tmp/determinism.sqlite3" --max-running 16
  node "$root/tests/server/determinism_test.mjs" --url "$server_url" --model model-hf --clients 16 \
    ${DETERMINISM_SEED:+--seed "$DETERMINISM_SEED"}
  env ${determinism_isa:+GPTOSS_CPU_ISA="$determinism_isa"} GPTOSS_SERVER_URL="$server_url" \
    GPTOSS_CLI="$build/bin/gptoss" GPTOSS_C_REFERENCE="$build/bin/gptoss-python-c-reference" \
    GPTOSS_LIBRARY_PATH="$build/lib" GPTOSS_TEST_MODEL="$model" GPTOSS_TEST_TOKENIZER="$tokenizer" \
    python3 "$root/tests/server/surfaces_test.py"
  stop_server

  # Speculative decoding is exact (tests/server/speculative_test.mjs): a server with the default
  # drafting (prompt lookup and jump-forward) and one with a draft model (a one-layer model of
  # the same tokenizer) answer as one started with --draft none, one by one and all at once;
  # usage.speculative and /metrics' counters agree. SPECULATIVE_SEED=N repeats a run. Both
  # draft without the cost bound: on this tiny model a drafted token costs about a plain step,
  # so the bound would hold most drafts back, and the test is of the answers drafts give.
  echo "== speculative decoding: drafted answers equal --draft none's"
  "$build/bin/gptoss-make-model" --preset conformance --layers 1 --out "$tmp/draft-model" --format hf \
    --tokenizer-json "$tokenizer" >/dev/null
  start_server --store "$tmp/spec-off.sqlite3" --draft none
  off_url="$server_url" off_pid="$server_pid"
  start_server --store "$tmp/spec-model.sqlite3" --draft-model "$tmp/draft-model/model-hf" \
    --draft-cost-bound off
  model_url="$server_url" model_pid="$server_pid"
  start_server --store "$tmp/spec-on.sqlite3" --draft-cost-bound off
  node "$root/tests/server/speculative_test.mjs" --on "$server_url" --off "$off_url" \
    --draft-model-url "$model_url" --model model-hf ${SPECULATIVE_SEED:+--seed "$SPECULATIVE_SEED"}
  stop_server
  server_pid="$model_pid" stop_server
  server_pid="$off_pid" stop_server
fi

echo "== load test: 16 streaming clients for ${load_seconds} s"
start_server --store "$tmp/load.sqlite3" --max-running 16
node "$root/tests/server/load_test.mjs" --url "$server_url" --model model-hf --clients 16 \
  --seconds "$load_seconds" --pid "$server_pid"
stop_server
