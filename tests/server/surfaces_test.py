"""One request and seed, the same tokens everywhere: the server, the CLI (`gptoss generate`), the
Python package and the C API sample the same tokens with the same log-probabilities.

Two comparisons, because the surfaces render a chat differently:
- Raw tokens (no Harmony, no constraint): the same token ids in, through the C API (the
  gptoss-python-c-reference program), `gptoss generate --raw`, the Python package's low-level
  loop and the server's /v1/completions with a token-id prompt. Token ids out must agree, and the
  log-probabilities of Python and the server bit for bit (as float32).
- A Harmony chat (constrained to Harmony's structure): the server's /v1/chat/completions
  against Python's gptoss.chat() given the system message the server renders (it states
  `--date`), checked to be the same prompt by its token count; and `gptoss generate` against
  gptoss.chat() with the CLI's own system message, which states no date, so the CLI's
  chat cannot be compared with the server's directly.

Environment (scripts/test-server.sh sets it): GPTOSS_SERVER_URL (a running server on
GPTOSS_TEST_MODEL, started with --date 2026-11-26), GPTOSS_CLI, GPTOSS_C_REFERENCE,
GPTOSS_LIBRARY_PATH, GPTOSS_TEST_MODEL, GPTOSS_TEST_TOKENIZER; SURFACES_SEED repeats a run (each
run draws a fresh one and prints it). Every surface must run the same kernels: the script gives
them the server's GPTOSS_CPU_ISA.
"""

import json
import os
import random
import struct
import subprocess
import sys
import unittest
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bindings" / "python"))
os.environ.setdefault("GPTOSS_LIBRARY_PATH", str(REPO / "build" / "lib"))

import gptoss  # noqa: E402

URL = os.environ.get("GPTOSS_SERVER_URL", "")
SERVER_MODEL = os.environ.get("GPTOSS_SERVER_MODEL", "model-hf")
API_KEY = os.environ.get("GPTOSS_SERVER_API_KEY", "unused")
CLI = os.environ.get("GPTOSS_CLI", str(REPO / "build/bin/gptoss"))
C_REFERENCE = os.environ.get("GPTOSS_C_REFERENCE", str(REPO / "build/bin/gptoss-python-c-reference"))
MODEL = os.environ.get("GPTOSS_TEST_MODEL", str(REPO.parent / "shared/conformance/logits/model-hf"))
TOKENIZER = os.environ.get("GPTOSS_TEST_TOKENIZER", str(REPO / "third_party/tokenizer/tokenizer.json"))
DATE = "2026-11-26"  # the server's --date in scripts/test-server.sh
SEED = int(os.environ.get("SURFACES_SEED") or random.SystemRandom().randrange(2**31))
MAX_TOKENS = 24
WORDS = ("river stone lantern quiet orbit maple signal copper harbor violet thunder garden mirror "
         "falcon ember canyon whisper ledger saffron prism").split()

print(f"surfaces test: SURFACES_SEED={SEED} repeats this run", file=sys.stderr)
_model = None


def model():
    global _model
    if _model is None:
        _model = gptoss.Model(MODEL, tokenizer_path=TOKENIZER)
    return _model


def f32(x):
    """x as the float32 it was before JSON widened it."""
    return struct.unpack("f", struct.pack("f", x))[0]


def post(path, body):
    request = urllib.request.Request(f"{URL}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {API_KEY}"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)


def run(*args):
    result = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(args[:3])} ... exited {result.returncode}:\n{result.stderr}")
    return result.stdout


def cases():
    """(prompt, seed, temperature) per case, from SEED: greedy and sampled, short and long."""
    r = random.Random(SEED)
    out = []
    for temperature in (0.0, 1.0):
        for words in (4, 60):
            prompt = "Once " + " ".join(r.choice(WORDS) for _ in range(words))
            out.append((prompt, r.randrange(2**31), temperature))
    return out


def python_raw(ids, seed, temperature, top):
    """The Python package's low-level loop: sampled ids (through the stop token) and the
    log-probabilities of each (chosen, top alternatives)."""
    tok = model().tokenizer
    stop = {tok.special_token_id(n) for n in ("<|return|>", "<|call|>", "<|endoftext|>")}
    tokens, logprobs = [], []
    with gptoss.Context(model(), context_length=1024) as ctx, \
            gptoss.Sampler(temperature=temperature, seed=seed, top_logprobs=top) as sampler:
        ctx.append(ids)
        for _ in range(MAX_TOKENS):
            token = ctx.sample(sampler)
            tokens.append(token)
            logprobs.append(sampler.last_logprobs())
            if token in stop:
                break
            ctx.append([token])
    return tokens, logprobs, stop


class SurfacesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not URL:
            raise unittest.SkipTest("GPTOSS_SERVER_URL is not set (scripts/test-server.sh starts the server)")

    def test_raw_token_ids_agree_everywhere(self):
        tok = model().tokenizer
        for prompt, seed, temperature in cases():
            with self.subTest(prompt=prompt[:40], seed=seed, temperature=temperature):
                ids = tok.encode(prompt)
                py_tokens, py_logprobs, stop = python_raw(ids, seed, temperature, 3)
                # The C API: its program samples MAX_TOKENS without stopping.
                c_tokens = [int(t) for t in run(C_REFERENCE, MODEL, TOKENIZER, str(MAX_TOKENS),
                                                 str(temperature), str(seed),
                                                 *map(str, ids)).splitlines()[0].split()]
                self.assertEqual(c_tokens[:len(py_tokens)], py_tokens, "C API vs Python")
                cli = json.loads(run(CLI, "generate", "--raw", "-i", prompt, "--model", MODEL,
                                     "--tokenizer", TOKENIZER, "--context", "1024", "--seed", str(seed),
                                     "--temperature", str(temperature), "--max-tokens", str(MAX_TOKENS),
                                     "--format", "json", "-q"))
                self.assertEqual(cli["tokens"], py_tokens, "CLI vs Python")
                server = post("/v1/completions", {
                    "model": SERVER_MODEL, "prompt": ids, "seed": seed, "temperature": temperature,
                    "max_tokens": MAX_TOKENS, "logprobs": 3})
                choice = server["choices"][0]
                text_tokens = [t for t in py_tokens if t not in stop]
                self.assertEqual(choice["text"], tok.decode(text_tokens), "server vs Python: text")
                self.assertEqual(server["usage"]["completion_tokens"], len(py_tokens),
                                 "server vs Python: tokens sampled")
                lp = choice["logprobs"]
                self.assertEqual([f32(x) for x in lp["token_logprobs"]],
                                 [chosen.logprob for chosen, _ in py_logprobs[:len(text_tokens)]],
                                 "server vs Python: log-probabilities")
                self.assertEqual([sorted((f32(v) for v in top.values()), reverse=True)
                                  for top in lp["top_logprobs"]],
                                 [sorted((a.logprob for a in alts), reverse=True)
                                  for _, alts in py_logprobs[:len(text_tokens)]],
                                 "server vs Python: top log-probabilities")

    def test_harmony_chat_agrees_with_the_server(self):
        system = {"role": "system", "content": [{
            "type": "system_content",
            "model_identity": "You are ChatGPT, a large language model trained by OpenAI.",
            "reasoning_effort": "medium", "conversation_start_date": DATE, "knowledge_cutoff": "2024-06",
            "channel_config": {"valid_channels": ["analysis", "commentary", "final"],
                               "channel_required": True}}]}
        for prompt, seed, temperature in cases():
            with self.subTest(prompt=prompt[:40], seed=seed, temperature=temperature):
                messages = [system, {"role": "user", "content": prompt}]
                rendered = gptoss.harmony.render(model().tokenizer, {"messages": messages})
                py = gptoss.chat(model(), messages, max_tokens=MAX_TOKENS, temperature=temperature,
                                 seed=seed, context_length=1024)
                server = post("/v1/chat/completions", {
                    "model": SERVER_MODEL, "messages": [{"role": "user", "content": prompt}],
                    "seed": seed, "temperature": temperature, "max_tokens": MAX_TOKENS})
                self.assertEqual(server["usage"]["prompt_tokens"], len(rendered),
                                 "the server renders this prompt differently")
                message = server["choices"][0]["message"]
                self.assertEqual(server["usage"]["completion_tokens"], len(py.tokens), "tokens sampled")
                self.assertEqual(message.get("reasoning_content") or "", py.reasoning, "reasoning")
                self.assertEqual(message.get("content") or "", py.text, "answer")

    def test_harmony_cli_agrees_with_python(self):
        for prompt, seed, temperature in cases():
            with self.subTest(prompt=prompt[:40], seed=seed, temperature=temperature):
                py = gptoss.chat(model(), [{"role": "user", "content": prompt}], max_tokens=MAX_TOKENS,
                                 temperature=temperature, seed=seed, context_length=1024)
                cli = json.loads(run(CLI, "generate", "-i", prompt, "--model", MODEL, "--tokenizer",
                                     TOKENIZER, "--context", "1024", "--seed", str(seed), "--temperature",
                                     str(temperature), "--max-tokens", str(MAX_TOKENS), "--format", "json",
                                     "-q"))
                self.assertEqual(cli["tokens"], py.tokens, "CLI vs Python")


if __name__ == "__main__":
    unittest.main(verbosity=2)
