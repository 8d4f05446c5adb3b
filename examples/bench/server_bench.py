#!/usr/bin/env python3
"""Throughput and latency of a running gptoss-server under N concurrent streaming users.

For each concurrency level, N users each send R streaming requests one after another
(max_tokens each) and the script reports aggregate output tokens per second over the level's
wall time, time to first token (p50/p99), inter-token latency (p50/p99, the gaps between
streamed chunks of one request) and the share of prompt tokens the server's prefix cache
served. Every request of the run, the warm-up included, has a prompt of its own from its first
words on (the same text after a tag naming the run, level, user and request; the run is a random
word, so two runs against one server do not share prompts either): a repeated prompt would be
served from the prefix cache and skip its prefill in one level but not another.

/v1/completions streams every token as it is sampled (raw text); --endpoint chat measures
/v1/chat/completions instead (with a real model: on random weights, unconstrained Harmony
output streams nothing until it ends).

With speculative decoding on (the server's default) the table adds the drafted and accepted
tokens of the level's requests (their usage.speculative). Random weights never repeat their
prompt, so prompt lookup finds little to draft; --frequency-penalty -1.5 makes them repeat what
they have seen (an answer that restates its input, as agent loops and code edits do), the case
prompt lookup is for. Compare a server with and one without (--draft none) in alternation.

  python3 examples/bench/server_bench.py --url http://127.0.0.1:8000 --model NAME \
      [--users 1,2,4,8,16] [--requests 2] [--max-tokens 64] [--prompt-tokens 128] [--json]

Only the Python standard library; any number of users (one thread each).
"""
import argparse
import http.client
import json
import secrets
import sys
import threading
import time
import urllib.parse

PROMPT_WORDS = ("the history of computing is a story of machines that grew smaller and faster while "
                "the problems they were asked to solve grew larger ").split()


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stream_once(url, headers, body, endpoint, speculative=None):
    """One streaming request: (first-token delay, gaps between chunks, output tokens, prompt
    tokens, prompt tokens served from the prefix cache). `speculative`, a dict, gets the
    usage's drafted_tokens and accepted_tokens added when the server reports them."""
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)
    path = "/v1/completions" if endpoint == "completions" else "/v1/chat/completions"
    start = time.perf_counter()
    conn.request("POST", path, body=json.dumps(body), headers=headers)
    res = conn.getresponse()
    if res.status != 200:
        raise RuntimeError(f"HTTP {res.status}: {res.read()[:300]!r}")
    first, last, gaps, tokens, prompt, cached = None, None, [], 0, 0, 0
    for raw in res:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if "error" in chunk:
            raise RuntimeError(f"stream error: {chunk['error']}")
        if chunk.get("usage"):
            usage = chunk["usage"]
            tokens, prompt = usage["completion_tokens"], usage["prompt_tokens"]
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
            if speculative is not None and usage.get("speculative"):
                for k in ("drafted_tokens", "accepted_tokens"):
                    speculative[k] = speculative.get(k, 0) + usage["speculative"][k]
        choices = chunk.get("choices") or []
        if not choices:
            continue
        delta = choices[0].get("text") if endpoint == "completions" else choices[0].get("delta", {})
        has_text = bool(delta) if endpoint == "completions" else bool(
            delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"))
        if not has_text:
            continue
        now = time.perf_counter()
        if first is None:
            first = now - start
        else:
            gaps.append(now - last)
        last = now
    conn.close()
    return first, gaps, tokens, prompt, cached


def run_level(args, users, tag):
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = f"Bearer {args.api_key}"
    prompt = " ".join(PROMPT_WORDS[i % len(PROMPT_WORDS)] for i in range(args.prompt_tokens))
    ttft, itl, errors = [], [], []
    counts = {"output": 0, "prompt": 0, "cached": 0}
    speculative = {}
    lock = threading.Lock()

    def user(index):
        for r in range(args.requests):
            body = {"model": args.model, "max_tokens": args.max_tokens, "stream": True,
                    "stream_options": {"include_usage": True}, "seed": index * 1000 + r,
                    "temperature": args.temperature}
            if args.frequency_penalty:
                body["frequency_penalty"] = args.frequency_penalty
            if args.endpoint == "completions":
                body["prompt"] = f"{tag} {index} {r} {prompt}"
            else:
                body["messages"] = [{"role": "user", "content": f"{tag} {index} {r} {prompt}"}]
            try:
                spec = {}
                first, gaps, n, n_prompt, n_cached = stream_once(args.url, headers, body, args.endpoint, spec)
            except Exception as e:  # reported, and the run fails
                with lock:
                    errors.append(str(e))
                continue
            with lock:
                if first is not None:
                    ttft.append(first)
                itl.extend(gaps)
                counts["output"] += n
                counts["prompt"] += n_prompt
                counts["cached"] += n_cached
                for k, v in spec.items():
                    speculative[k] = speculative.get(k, 0) + v

    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {"users": users, "requests": users * args.requests, "output_tokens": counts["output"],
            "prompt_tokens": counts["prompt"], "cached_prompt_tokens": counts["cached"],
            "wall_seconds": wall,
            "aggregate_tokens_per_second": counts["output"] / wall if wall > 0 else 0.0,
            "ttft_p50_ms": 1000 * percentile(ttft, 50), "ttft_p99_ms": 1000 * percentile(ttft, 99),
            "itl_p50_ms": 1000 * percentile(itl, 50), "itl_p99_ms": 1000 * percentile(itl, 99),
            "drafted_tokens": speculative.get("drafted_tokens"),
            "accepted_tokens": speculative.get("accepted_tokens"), "errors": errors}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--model", required=True)
    p.add_argument("--api-key", default="")
    p.add_argument("--users", default="1,2,4,8,16", help="comma-separated concurrency levels")
    p.add_argument("--requests", type=int, default=2, help="requests per user, one after another")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=128, help="prompt length in words (about tokens)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--frequency-penalty", type=float, default=0.0,
                   help="negative: random weights repeat what they have seen (prompt lookup drafts it)")
    p.add_argument("--endpoint", choices=["completions", "chat"], default="completions")
    p.add_argument("--json", action="store_true", help="print JSON instead of a markdown table")
    args = p.parse_args()

    levels = [int(x) for x in args.users.split(",") if x]
    # One request first, not counted: the model's pages and the server's threads warm up.
    run = secrets.token_hex(3)
    warm = run_level(argparse.Namespace(**{**vars(args), "requests": 1}), 1, f"{run} warm-up")
    if warm["errors"]:
        print(f"error: {warm['errors'][0]}", file=sys.stderr)
        return 1
    results = []
    for i, users in enumerate(levels):
        results.append(run_level(args, users, f"{run} pass {i}"))
        if not args.json:
            r = results[-1]
            print(f"  {users} users: {r['aggregate_tokens_per_second']:.1f} tok/s", file=sys.stderr)
    base = results[0]["aggregate_tokens_per_second"] if results else 0
    for r in results:
        r["speedup_vs_first"] = r["aggregate_tokens_per_second"] / base if base else 0.0
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print("| users | aggregate tok/s | x first | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms "
              "| prompt tokens cached | drafted / accepted | errors |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in results:
            cached = f"{r['cached_prompt_tokens']} of {r['prompt_tokens']}"
            spec = ("off" if r["drafted_tokens"] is None
                    else f"{r['drafted_tokens']} / {r['accepted_tokens']} of {r['output_tokens']}")
            print(f"| {r['users']} | {r['aggregate_tokens_per_second']:.1f} | {r['speedup_vs_first']:.2f} | "
                  f"{r['ttft_p50_ms']:.0f} | {r['ttft_p99_ms']:.0f} | {r['itl_p50_ms']:.0f} | "
                  f"{r['itl_p99_ms']:.0f} | {cached} | {spec} | {len(r['errors'])} |")
    errors = [e for r in results for e in r["errors"]]
    for e in errors[:5]:
        print(f"error: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
