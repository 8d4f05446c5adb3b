"""Memory pressure: a KV pool too small for the clients' long prompts (they queue, none fails),
a prompt that alone cannot fit (a clear 400), and an address-space limit (ulimit -v) below what
the KV pool needs (refused at start with the numbers, never killed)."""
import os
import resource

from common import MODEL_NAME, Server, check, log, run_threads


def kv_exhausted(tmp):
    dir = os.path.join(tmp, "memory-kv")
    # Room for two long prompts at a time, eight clients.
    server = Server(dir, ["--store", os.path.join(dir, "r.sqlite3"), "--max-running", "8", "--context", "2048",
                          "--kv-tokens", "4096"])
    prompt = " ".join(f"word{i}" for i in range(600))  # about 1,500 tokens

    def client(i):
        return server.request("POST", "/v1/completions",
                              {"model": MODEL_NAME, "prompt": prompt, "max_tokens": 200, "seed": i}, timeout=300)

    try:
        results = run_threads(8, client)
        statuses = [r[0] for r in results]
        check(statuses == [200] * 8, f"long prompts on a small KV pool: {statuses} {[r[2] for r in results if r[0] != 200][:1]}")
        tokens = results[0][2]["usage"]["prompt_tokens"]
        check(tokens > 1024, f"the prompt is only {tokens} tokens")
        m = server.metrics()
        log(f"8 clients x {tokens}-token prompts on a 4,096-token KV pool: all 200 "
            f"(preemptions {int(m.get('gptoss_preemptions_total', 0))})")

        status, _, body = server.request("POST", "/v1/completions", {"model": MODEL_NAME, "prompt": prompt * 2,
                                                                     "max_tokens": 8})
        check(status == 400 and "context" in json_text(body), f"a prompt longer than the context: {status} {body}")
        log(f"a prompt longer than --context: 400 ({body['error'].get('code')}: {body['error']['message'][:80]}...)")
    finally:
        server.stop()


def json_text(body):
    return str(body).lower()


def address_space_limit(tmp):
    dir = os.path.join(tmp, "memory-ulimit")
    # Far more KV than 1.5 GiB of address space holds.
    limit = 1536 << 20

    def preexec():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    server = Server(dir, ["--store", os.path.join(dir, "r.sqlite3"), "--max-running", "64", "--context", "8192",
                          "--kv-tokens", "1048576"], wait_ready=False, preexec=preexec)
    status = server.wait(120)
    text = server.stderr()
    check(status == 1, f"under ulimit -v the server exited with {status} (1 expected, a refusal):\n{text[-1500:]}")
    check("KV cache of 1048576 tokens" in text and "MiB" in text and f"ulimit -v) of {limit >> 20} MiB" in text,
          f"the refusal does not give the numbers:\n{text[-1500:]}")
    log(f"ulimit -v {limit >> 20} MiB, --kv-tokens 1048576: exit 1: {text.strip().splitlines()[-1][:200]}")


def run(tmp, long):
    kv_exhausted(tmp)
    address_space_limit(tmp)
