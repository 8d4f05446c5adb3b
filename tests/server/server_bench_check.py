#!/usr/bin/env python3
"""Checks examples/bench/server_bench.py against a running gptoss-server (run by the lifecycle
tests, tests/server/lifecycle).

The benchmark is only worth its table if it measures what it says: every request pays its own
prefill (no prompt shared with another request of the run, or with an earlier run against the
same server) and the prefix-cache column is read from the server's usage. So: the same request
twice must read as cached the second time (the column can show a hit), then two short runs must
complete without errors, produce tokens and report no cached prompt token.

  python3 tests/server/server_bench_check.py --url URL --model NAME
"""
import argparse
import importlib.util
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "bench" / "server_bench.py"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--model", required=True)
    args = p.parse_args()

    spec = importlib.util.spec_from_file_location("server_bench", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    headers = {"Content-Type": "application/json"}
    body = {"model": args.model, "prompt": "server bench check: the same prompt twice " * 4, "max_tokens": 4,
            "stream": True, "stream_options": {"include_usage": True}, "seed": 1}
    _, _, out1, prompt1, _ = bench.stream_once(args.url, headers, body, "completions")
    _, _, out2, prompt2, cached2 = bench.stream_once(args.url, headers, body, "completions")
    assert out1 > 0 and out2 > 0 and prompt1 == prompt2 > 0, (out1, out2, prompt1, prompt2)
    assert 0 < cached2 <= prompt2, f"a repeated prompt should read as cached: {cached2} of {prompt2}"

    for run in range(2):  # the second run must not find the first run's prompts cached either
        res = subprocess.run([sys.executable, str(SCRIPT), "--url", args.url, "--model", args.model,
                              "--users", "1,2", "--requests", "2", "--max-tokens", "4",
                              "--prompt-tokens", "16", "--json"], capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"server_bench.py exited {res.returncode}: {res.stderr[-2000:]}"
        levels = json.loads(res.stdout)
        assert [lv["users"] for lv in levels] == [1, 2], levels
        for lv in levels:
            assert not lv["errors"], lv["errors"]
            assert lv["requests"] == 2 * lv["users"], lv
            assert 0 < lv["output_tokens"] <= 4 * lv["requests"], lv
            assert lv["prompt_tokens"] >= 16 * lv["requests"], lv
            assert lv["aggregate_tokens_per_second"] > 0 and lv["ttft_p50_ms"] > 0, lv
            assert lv["cached_prompt_tokens"] == 0, f"run {run}: prompts served from the prefix cache: {lv}"
    print("server_bench.py: a repeated prompt reads as cached; two runs of 1 and 2 users, no prompt cached")


if __name__ == "__main__":
    main()
