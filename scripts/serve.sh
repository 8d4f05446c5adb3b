#!/usr/bin/env bash
# Starts gptoss-server in one command: sets up and builds what is missing, and only what the
# server needs (like scripts/run.sh: scripts/build-programs.sh), generates the default tiny
# synthetic model on first use, and prints where it listens. Arguments are gptoss-server's
# (docs/server.md):
#
#   scripts/serve.sh                       foreground on http://127.0.0.1:8000; Ctrl-C drains and stops
#   scripts/serve.sh --model /models/gpt-oss-20b --port 9000
#   scripts/serve.sh start [ARGS]          in the background, log in $GPTOSS_SERVE_DIR/server.log
#   scripts/serve.sh status                its health check
#   scripts/serve.sh stop                  drains it (running requests finish) and waits for its exit
#
# The background server's pid, log and address live in $GPTOSS_SERVE_DIR
# (default ~/.cache/gptoss/serve).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
state="${GPTOSS_SERVE_DIR:-${HOME:-.}/.cache/gptoss/serve}"

case "${1:-}" in
  stop)
    [ -f "$state/pid" ] || { echo "serve: no background server ($state/pid missing)"; exit 1; }
    pid="$(cat "$state/pid")"
    if kill -TERM "$pid" 2>/dev/null; then
      echo "serve: draining gptoss-server (pid $pid)"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    fi
    rm -f "$state/pid" "$state/url"
    echo "serve: stopped"
    exit 0 ;;
  status)
    [ -f "$state/url" ] || { echo "serve: no background server"; exit 1; }
    url="$(cat "$state/url")"
    echo "$url"
    exec curl -sS --max-time 5 "$url/health" ;;
esac

background=0
if [ "${1:-}" = "start" ]; then
  background=1
  shift
fi

bash scripts/build-programs.sh serve gptoss-server
bin="${GPTOSS_BUILD_DIR:-build}/bin"

args=("$@")
has_model=0
for a in "${args[@]}"; do
  case "$a" in --model|--model=*|-m) has_model=1 ;; esac
done
if [ $has_model -eq 0 ]; then
  # The CLI's default model (scripts/run.sh generates the same one in the same place).
  model="${GPTOSS_HOME:-${HOME:-.}/.cache/gptoss}/models/tiny"
  if [ ! -f "$model/config.json" ]; then
    tokenizer="${GPTOSS_TOKENIZER_JSON:-$root/third_party/tokenizer/tokenizer.json}"
    echo "serve: generating the tiny synthetic model in $model" >&2
    staging="$model.tmp-$$"
    rm -rf "$staging"
    mkdir -p "$(dirname "$model")"
    "$bin"/gptoss-make-model --preset tiny --out "$staging" --format hf --tokenizer-json "$tokenizer" >/dev/null
    [ -f "$staging/model-hf/tokenizer.json" ] || cp "$tokenizer" "$staging/model-hf/tokenizer.json"
    mv "$staging/model-hf" "$model" 2>/dev/null || [ -f "$model/config.json" ]
    rm -rf "$staging"
  fi
  echo "serve: the tiny synthetic model (random weights: its output is noise): $model" >&2
  args=(--model "$model" --model-name gpt-oss-tiny "${args[@]}")
fi

if [ $background -eq 0 ]; then
  exec "$bin"/gptoss-server "${args[@]}"
fi

mkdir -p "$state"
if [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null; then
  echo "serve: already running (pid $(cat "$state/pid")) on $(cat "$state/url" 2>/dev/null)"
  exit 1
fi
: > "$state/server.log"
nohup "$bin"/gptoss-server "${args[@]}" >>"$state/server.log" 2>&1 &
echo $! > "$state/pid"
for _ in $(seq 1 600); do
  if url="$(grep -o 'ready on http://[^ ]*' "$state/server.log" | head -1)" && [ -n "$url" ]; then
    echo "${url#ready on }" > "$state/url"
    echo "serve: gptoss-server (pid $(cat "$state/pid")) listening on ${url#ready on }; log $state/server.log"
    echo "serve: scripts/serve.sh status | scripts/serve.sh stop"
    exit 0
  fi
  if ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then
    cat "$state/server.log"
    rm -f "$state/pid"
    echo "serve: gptoss-server exited"
    exit 1
  fi
  sleep 0.2
done
echo "serve: gptoss-server not ready after 120 s; see $state/server.log"
exit 1
