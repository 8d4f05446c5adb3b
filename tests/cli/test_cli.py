"""End-to-end tests of the `gptoss` CLI: runs the built executable on the shared conformance
model (greedy unless a test says otherwise).

Environment (set by CTest): GPTOSS_CLI (the executable), GPTOSS_TEST_MODEL (HF directory),
GPTOSS_TEST_TOKENIZER (tokenizer.json; the model directory has none), GPTOSS_TEST_BACKEND
(optional: every model-running test on that backend, e.g. cuda)."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

try:
    import jsonschema
except ImportError as e:  # a dependency, not an optional extra
    raise ImportError("these tests validate with the jsonschema package: run scripts/setup.sh "
                      "(it installs Debian's python3-jsonschema)") from e

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("GPTOSS_CLI", str(REPO / "build/bin/gptoss"))
MODEL = os.environ.get("GPTOSS_TEST_MODEL", str(REPO.parent / "shared/conformance/logits/model-hf"))
TOKENIZER = os.environ.get("GPTOSS_TEST_TOKENIZER", str(REPO / "third_party/tokenizer/tokenizer.json"))
MODEL_ARGS = ["--model", MODEL, "--tokenizer", TOKENIZER, "--context", "512"]
if os.environ.get("GPTOSS_TEST_BACKEND"):
    MODEL_ARGS += ["--backend", os.environ["GPTOSS_TEST_BACKEND"]]
GREEDY = ["--temperature", "0"]
STATS = re.compile(r"\[prompt (\d+) tok, prefill [\d.]+ tok/s \| generated (\d+) tok, "
                   r"decode [\d.]+ tok/s \| first token [\d.]+ s")
PROMPTS = ["What is 2 + 2?", "Tell me a story about a fox.", "", "Ünïcode ✓ and a \\ backslash"]


def run(*args, stdin=None, env=None, timeout=120):
    return subprocess.run([CLI, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=env)


def ok(*args, **kw):
    result = run(*args, **kw)
    if result.returncode != 0:
        raise AssertionError(f"gptoss {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result


class FlagsTest(unittest.TestCase):
    def test_help_and_version(self):
        self.assertIn("usage: gptoss", ok("--help").stdout)
        self.assertRegex(ok("--version").stdout, r"^gptoss \d+\.\d+\.\d+")

    def test_bad_flags_are_one_line_errors(self):
        cases = [
            (["generate", "-i", "x", "--top-p", "1.5"], "--top-p"),
            (["generate", "-i", "x", "--temperature", "-1"], "--temperature"),
            (["generate", "-i", "x", "--max-tokens", "abc"], "--max-tokens"),
            (["generate", "-i", "x", "--reasoning-effort", "extreme"], "--reasoning-effort"),
            (["generate", "-i", "x", "--layers", "0"], "--layers"),
            (["generate", "-i", "x", "--no-such-flag"], "--no-such-flag"),
            (["generate"], "-i"),
            (["getp"], "-i"),
            (["dance"], "dance"),
            (["generate", "-i", "x", "--seed"], "--seed"),
            (["generate", "-i", "x", "--precision", "half"], "--precision"),
            (["generate", "-i", "x", "--kv", "f16"], "--kv"),
        ]
        for args, mention in cases:
            result = run(*args)
            self.assertEqual(result.returncode, 2, args)
            lines = result.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, (args, result.stderr))
            self.assertTrue(lines[0].startswith("gptoss: "), lines[0])
            self.assertIn(mention, lines[0])

    def test_unknown_flag_suggests_the_nearest(self):
        cases = [
            (["generate", "-i", "x", "--max-token", "4"],
             "gptoss: unknown option --max-token; did you mean --max-tokens? (see --help)"),
            (["generate", "-i", "x", "--temprature=0"], "did you mean --temperature?"),
            (["chat", "--modle", "m"], "did you mean --model?"),
            (["chat", "-max-tokens", "4"], "did you mean --max-tokens?"),
            (["genrate", "-i", "x"], "gptoss: unknown mode 'genrate'; did you mean generate?"),
            (["generate", "-i", "x", "--frobnicate"], "gptoss: unknown option --frobnicate (see --help)"),
        ]
        for args, expected in cases:
            result = run(*args)
            self.assertEqual(result.returncode, 2, args)
            lines = result.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, (args, result.stderr))
            self.assertIn(expected, lines[0])
            if "did you mean" not in expected:
                self.assertNotIn("did you mean", lines[0])

    def test_help_ends_with_the_first_commands(self):
        last = ok("--help").stdout.rstrip("\n").splitlines()[-4:]
        self.assertEqual(last[0], "first steps:")
        self.assertTrue(last[1].lstrip().startswith('gptoss generate -i "Hello"'), last)
        self.assertTrue(last[2].lstrip().startswith("gptoss chat --model"), last)
        self.assertTrue(last[3].lstrip().startswith("gptoss-server --model"), last)

    def test_precision_flag(self):
        # Both modes run; greedy answers may differ in a token or two, never crash.
        for precision in ("fast", "exact"):
            out = ok("generate", "-i", "What is 2 + 2?", *MODEL_ARGS, "-q", *GREEDY,
                     "--max-tokens", "4", "--format", "ids", "--precision", precision).stdout
            self.assertTrue(1 <= len(out.split()) <= 4, (precision, out))

    def test_missing_model_is_one_line_error(self):
        result = run("generate", "-i", "hi", "--model", "/nonexistent/model")
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(result.stderr.strip().splitlines(),
                         ["gptoss: model not found: /nonexistent/model"])
        result = run("generate", "-i", "hi", "--model", MODEL, "--tokenizer", "/nonexistent.json")
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)

    def test_library_errors_are_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "config.json").write_text("{not json")
            result = run("generate", "-i", "hi", "--model", d, "--tokenizer", TOKENIZER)
            self.assertEqual(result.returncode, 1)
            lines = result.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, result.stderr)
            self.assertIn("loading the model", lines[0])


class GenerateTest(unittest.TestCase):
    def test_json_output_and_stats(self):
        result = ok("generate", "-i", "What is 2 + 2?", *MODEL_ARGS, *GREEDY,
                    "--max-tokens", "6", "--format", "json")
        out = json.loads(result.stdout)
        self.assertTrue(1 <= len(out["tokens"]) <= 6)
        self.assertEqual(out["generated_tokens"], len(out["tokens"]))
        self.assertIsInstance(out["messages"], list)
        self.assertGreater(out["prompt_tokens"], 10)  # system + user message, Harmony-rendered
        stats = STATS.search(result.stderr)
        self.assertIsNotNone(stats, result.stderr)
        self.assertEqual(int(stats.group(1)), out["prompt_tokens"])
        self.assertEqual(int(stats.group(2)), len(out["tokens"]))

    def test_raw_sends_text_as_is(self):
        harmony = json.loads(ok("generate", "-i", "Hello", *MODEL_ARGS, *GREEDY, "-q",
                                "--max-tokens", "2", "--format", "json").stdout)
        raw = json.loads(ok("generate", "-i", "Hello", *MODEL_ARGS, *GREEDY, "-q", "--raw",
                            "--max-tokens", "4", "--format", "json").stdout)
        self.assertEqual(raw["prompt_tokens"], 1)  # "Hello" is one token
        self.assertGreater(harmony["prompt_tokens"], raw["prompt_tokens"])
        # Raw text is every generated token's bytes.
        text = ok("generate", "-i", "Hello", *MODEL_ARGS, *GREEDY, "-q", "--raw",
                  "--max-tokens", "4").stdout
        self.assertEqual(text.rstrip("\n"), raw["text"].rstrip("\n"))

    def test_verbose_diagnostics_per_token(self):
        # The diagnostics describe the model's own distribution: sampled freely, greedy picks
        # its top-1.
        result = ok("generate", "-i", "Hi", *MODEL_ARGS, *GREEDY, "--max-tokens", "5",
                    "--verbose", "--format", "ids", "--no-constrain", "--draft", "none")
        ids = [int(t) for t in result.stdout.split()]
        lines = re.findall(r'\[token (\d+) ".*" p=([\d.]+) \| entropy ([\d.]+) nats \| '
                           r'top-1 (\d+) ".*" p=([\d.]+)\]', result.stderr)
        self.assertEqual([int(l[0]) for l in lines], ids)
        for token, p, entropy, top1, p_top1 in lines:
            self.assertEqual(token, top1)  # greedy picks the top-1 candidate
            self.assertEqual(p, p_top1)
            self.assertGreater(float(entropy), 0.0)

    def test_draft_gives_the_same_tokens(self):
        """--draft ngram and --draft MODEL (the model drafting for itself) print the tokens of
        plain decoding (scalar kernels: one token's logits are the same in any step) and, with
        --verbose, the drafted and accepted counts (docs/speculative.md)."""
        env = dict(os.environ, GPTOSS_CPU_ISA="scalar")
        args = ["generate", "-i", "one two three one two three one two", *MODEL_ARGS, "--raw",
                "--no-constrain", "--format", "ids", "--max-tokens", "16", "--quiet"]
        for temperature in ("0", "1"):
            plain = ok(*args, "--temperature", temperature, "--seed", "3", "--draft", "none",
                       env=env).stdout
            for draft in ("ngram", MODEL):
                # -v prints token bytes, not always UTF-8 on their own: read them as bytes.
                got = subprocess.run([CLI, *args, "--temperature", temperature, "--seed", "3",
                                      "--draft", draft, "--draft-max", "4", "-v"],
                                     capture_output=True, env=env, timeout=120)
                self.assertEqual(got.returncode, 0, got.stderr.decode("utf-8", "replace"))
                self.assertEqual(got.stdout.decode(), plain, draft)
                self.assertRegex(got.stderr.decode("utf-8", "replace"),
                                 r"\[speculative: \d+ steps, drafted \d+, accepted \d+")
        bad = run(*args, "--draft-max", "0")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--draft-max", bad.stderr)

    def test_stdin_prompt_and_seeded_sampling(self):
        a = ok("generate", "-i", "-", *MODEL_ARGS, "--seed", "42", "--max-tokens", "6",
               "--format", "ids", "-q", stdin="Hello there").stdout
        b = ok("generate", "-i", "Hello there", *MODEL_ARGS, "--seed", "42", "--max-tokens", "6",
               "--format", "ids", "-q").stdout
        self.assertEqual(a, b)

    def test_partial_model_and_shared_kv(self):
        full = ok("generate", "-i", "Hi", *MODEL_ARGS, *GREEDY, "--max-tokens", "3",
                  "--format", "ids", "-q").stdout
        shared_kv = ok("generate", "-i", "Hi", *MODEL_ARGS, *GREEDY, "--max-tokens", "3",
                       "--format", "ids", "-q", "--max-kv", "512").stdout
        self.assertEqual(full, shared_kv)
        # A bf16 cache (private and shared pools) runs; its greedy answer may differ from f32's.
        for extra in ([], ["--max-kv", "512"]):
            out = ok("generate", "-i", "Hi", *MODEL_ARGS, *GREEDY, "--max-tokens", "3",
                     "--format", "ids", "-q", "--kv", "bf16", *extra).stdout
            self.assertTrue(1 <= len(out.split()) <= 3, (extra, out))
        ok("generate", "-i", "Hi", *MODEL_ARGS, *GREEDY, "--max-tokens", "3", "--layers", "2", "-q")


class GetpTest(unittest.TestCase):
    """Batched contexts must give what one-at-a-time runs give."""

    def getp(self, prompts, *args):
        with tempfile.TemporaryDirectory() as d:
            inp, outp = Path(d) / "prompts.txt", Path(d) / "outputs.txt"
            inp.write_text("".join(p + "\n" for p in prompts))
            result = ok("getp", "-i", str(inp), "-o", str(outp), *MODEL_ARGS, *args)
            # Raw completions may hold bytes that are not UTF-8: compare bytes.
            return outp.read_bytes().split(b"\n")[:-1], result.stderr

    def one_at_a_time(self, prompts, *args):
        return [ok("generate", "-i", p, *MODEL_ARGS, "-q", *args).stdout.rstrip("\n")
                for p in prompts]

    def test_batched_ids_equal_one_at_a_time_greedy(self):
        args = [*GREEDY, "--max-tokens", "8", "--format", "ids"]
        lines, stderr = self.getp(PROMPTS, *args)
        self.assertEqual(len(lines), len(PROMPTS))
        self.assertEqual([l.decode() for l in lines], self.one_at_a_time(PROMPTS, *args))
        summary = re.search(r"\[getp: (\d+) prompts in batches of (\d+) \| (\d+) tokens "
                            r"\((\d+) prompt, (\d+) generated\) in [\d.]+ s, [\d.]+ tok/s", stderr)
        self.assertIsNotNone(summary, stderr)
        self.assertEqual(int(summary.group(1)), len(PROMPTS))
        self.assertEqual(int(summary.group(5)), sum(len(l.split()) for l in lines))

    def test_harmony_text_equals_one_at_a_time(self):
        args = [*GREEDY, "--max-tokens", "8"]
        lines, _ = self.getp(PROMPTS[:2], *args)
        expected = [json.loads(l)["text"].replace("\\", "\\\\").replace("\n", "\\n")
                    for l in self.one_at_a_time(PROMPTS[:2], *args, "--format", "json")]
        self.assertEqual([l.decode("utf-8", "replace") for l in lines], expected)

    def test_raw_text_batch_sizes_and_shared_pool(self):
        # --batch 1 runs the prompts one after another: the batched runs must match it.
        prompts = [p for p in PROMPTS if p] + ["Line one\\nline two"]
        args = ["--raw", *GREEDY, "--max-tokens", "6"]
        alone, _ = self.getp(prompts, *args, "--batch", "1")
        self.assertEqual(len(alone), len(prompts))
        for extra in (["--batch", "2"], ["--max-kv", "256"]):
            lines, _ = self.getp(prompts, *args, *extra)
            self.assertEqual(lines, alone, extra)

    def test_empty_raw_prompt_is_an_error(self):
        result = run("generate", "-i", "", "--raw", *MODEL_ARGS)
        self.assertEqual(result.returncode, 2)
        self.assertIn("empty prompt", result.stderr)

    def test_missing_prompts_file(self):
        result = run("getp", "-i", "/nonexistent/prompts.txt", *MODEL_ARGS)
        self.assertEqual(result.returncode, 2)
        self.assertIn("cannot read prompts file", result.stderr)


class ChatTest(unittest.TestCase):
    def test_scripted_conversation_save_reset_load(self):
        with tempfile.TemporaryDirectory() as d:
            saved = Path(d) / "conversation.json"
            script = (f"Hello there\n/save {saved}\n/reset\n/load {saved}\nAnd again?\n"
                      f"/save {saved}\n/load /nonexistent.json\n/quit\n")
            result = ok("chat", *MODEL_ARGS, *GREEDY, "--max-tokens", "4", "--developer",
                        "Answer briefly.", "--reasoning-effort", "low", stdin=script)
            self.assertEqual(len(STATS.findall(result.stderr)), 2, result.stderr)
            self.assertIn("[conversation reset]", result.stderr)
            self.assertIn("cannot read /nonexistent.json", result.stderr)
            conversation = json.loads(saved.read_text())["messages"]
            roles = [m["role"] for m in conversation]
            self.assertEqual(roles[:2], ["system", "developer"])
            users = [m for m in conversation if m["role"] == "user"]
            self.assertEqual([u["content"][0]["text"] for u in users], ["Hello there", "And again?"])
            self.assertEqual(conversation[0]["content"][0]["reasoning_effort"], "low")
            # The second turn's prompt holds the first turn: it is longer than a fresh one.
            prompts = [int(m.group(1)) for m in STATS.finditer(result.stderr)]
            self.assertGreater(prompts[1], 0)

    def test_first_turn_equals_generate(self):
        args = [*MODEL_ARGS, *GREEDY, "--max-tokens", "6", "-q", "--raw"]
        chat = ok("chat", *args, stdin="Once upon a time\n").stdout
        gen = ok("generate", "-i", "Once upon a time\n", *args).stdout
        self.assertEqual(chat, gen)

    def test_ctrl_c_stops_the_answer_not_the_chat(self):
        proc = subprocess.Popen([CLI, "chat", *MODEL_ARGS, "--raw", "--max-tokens", "100000",
                                 "--context", "4096", "--seed", "1"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        received = []
        reader = threading.Thread(target=lambda: received.extend(iter(lambda: proc.stdout.read(1), "")))
        reader.start()
        proc.stdin.write("Once upon a time\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not received and time.monotonic() < deadline:  # the answer has started
            time.sleep(0.05)
        self.assertTrue(received, "no output before the deadline")
        proc.send_signal(signal.SIGINT)
        proc.stdin.write("/quit\n")
        proc.stdin.flush()
        stderr = proc.stderr.read()
        reader.join(timeout=60)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()
        self.assertEqual(proc.wait(timeout=60), 0, stderr)
        self.assertIn("[interrupted]", stderr)
        stats = STATS.search(stderr)
        self.assertIsNotNone(stats, stderr)
        self.assertLess(int(stats.group(2)), 100000)


@unittest.skipUnless((Path(CLI).parent / "gptoss-make-model").exists()
                     and Path(os.environ.get("GPTOSS_TOKENIZER_JSON", TOKENIZER)).exists(),
                     "gptoss-make-model or tokenizer.json missing")
class DefaultModelTest(unittest.TestCase):
    def test_generated_on_first_use_with_notice(self):
        with tempfile.TemporaryDirectory() as home:
            env = dict(os.environ, GPTOSS_HOME=home, GPTOSS_TOKENIZER_JSON=TOKENIZER)
            first = ok("generate", "-i", "Hi", "--max-tokens", "2", env=env, timeout=300)
            self.assertTrue((Path(home) / "models/tiny/config.json").exists())
            self.assertIn("generating the tiny synthetic model", first.stderr)
            self.assertIn("random weights", first.stderr)
            second = ok("generate", "-i", "Hi", "--max-tokens", "2", env=env)
            self.assertNotIn("generating", second.stderr)
            self.assertIn("random weights", second.stderr)


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9},
                                           "tag": {"enum": ["a", "b"]}},
          "required": ["n", "tag"], "additionalProperties": False}
CHANNEL, MESSAGE, END, RETURN = 200005, 200008, 200007, 200002


class MemoryCheckTest(unittest.TestCase):
    """The model and its KV cache are compared with the available memory before loading
    (GPTOSS_MEMORY_AVAILABLE stands in for the machine's)."""

    @staticmethod
    def needed(context, kv):
        weights = sum(f.stat().st_size for f in Path(MODEL).glob("*.safetensors"))
        config = json.loads((Path(MODEL) / "config.json").read_text())
        full_layers = sum(t == "full_attention" for t in config["layer_types"])
        per_token = full_layers * 2 * config["num_key_value_heads"] * config["head_dim"] * (4 if kv == "f32" else 2)
        return weights, weights + context * per_token

    def generate(self, available, *args):
        env = dict(os.environ, GPTOSS_MEMORY_AVAILABLE=str(available))
        return run("generate", "-i", "Hi", *MODEL_ARGS, "--max-tokens", "2", "-q", *args, env=env)

    def assert_refused(self, result, *mentions):
        self.assertEqual(result.returncode, 1, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("gptoss: not enough memory for "), lines[0])
        for mention in (*mentions, "available (GPTOSS_MEMORY_AVAILABLE)", "--no-memory-check"):
            self.assertIn(mention, lines[0])

    def test_refused_at_one_byte_short_and_loaded_at_exactly_enough(self):
        seed = random.randrange(2**32)
        print(f"memory check: seed {seed}", file=sys.stderr)
        rng = random.Random(seed)
        for _ in range(3):
            # At least 64 tokens: "Hi" rendered as a Harmony conversation is 57, and the
            # generation must fit once the memory check lets it load.
            context, kv = rng.randrange(64, 8192), rng.choice(["f32", "bf16"])
            with self.subTest(seed=seed, context=context, kv=kv):
                weights, needed = self.needed(context, kv)
                args = ("--context", str(context), "--kv", kv)
                self.assert_refused(self.generate(needed - 1, *args), f"KV cache", f"for {context} tokens in {kv}")
                result = self.generate(needed, *args)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assert_refused(self.generate(weights - 1, *args), "its weights alone take")

    def test_refused_before_the_files_are_read(self):
        # A 1 TiB sparse file that is no safetensors at all: loading it would be an io error.
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "config.json").write_text((Path(MODEL) / "config.json").read_text())
            with open(Path(d) / "model.safetensors", "wb") as f:
                f.truncate(1 << 40)
            env = dict(os.environ, GPTOSS_MEMORY_AVAILABLE=str(1 << 39))
            result = run("generate", "-i", "Hi", "--model", d, "--tokenizer", TOKENIZER, env=env)
            self.assert_refused(result, "its weights alone take 1024.0 GiB", "nothing was loaded")

    def test_escape_hatch_and_bad_override(self):
        result = self.generate(1, "--no-memory-check")
        self.assertEqual(result.returncode, 0, result.stderr)
        result = self.generate("12G")
        self.assertEqual(result.returncode, 2)
        self.assertIn("GPTOSS_MEMORY_AVAILABLE must be a number of bytes", result.stderr)


class ConstrainedTest(unittest.TestCase):
    """--json-schema, --max-reasoning-tokens, --no-constrain (docs/constrained-decoding.md)."""

    def schema_file(self, schema):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(schema, f)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def check_doc(self, text):
        doc = json.loads(text)
        self.assertEqual(set(doc), {"n", "tag"})
        self.assertIn(doc["n"], range(1, 10))
        self.assertIn(doc["tag"], ("a", "b"))

    def test_json_schema_answer_and_reasoning_budget(self):
        path = self.schema_file(SCHEMA)
        for seed in ("1", "2", "3"):
            out = json.loads(ok("generate", "-i", "Numbers?", *MODEL_ARGS, "--seed", seed, "-q",
                                "--json-schema", path, "--max-reasoning-tokens", "5", "--max-tokens", "64",
                                "--format", "json").stdout)
            self.check_doc(out["text"])
            tokens = out["tokens"]
            self.assertEqual(tokens[-1], RETURN)
            self.assertEqual(tokens[0], CHANNEL)  # the Harmony header, from the first token
            # An analysis message holds at most 5 content tokens.
            for m, start in zip(out["messages"], [i for i, t in enumerate(tokens) if t == MESSAGE]):
                if m["channel"] == "analysis":
                    self.assertLessEqual(tokens.index(END, start) - start - 1, 5)

    def test_draft_under_constraints_keeps_every_token(self):
        """Speculative decoding under the Harmony grammar and a schema gives plain decoding's
        tokens, the closing <|return|> included (the grammar finishes at a step's last token)."""
        path = self.schema_file(SCHEMA)
        for seed in ("1", "2"):
            outs = [json.loads(ok("generate", "-i", "Numbers?", *MODEL_ARGS, "--seed", seed, "-q",
                                  "--json-schema", path, "--max-tokens", "64", "--format", "json",
                                  "--draft", draft).stdout)["tokens"]
                    for draft in ("none", "ngram")]
            self.assertEqual(outs[1], outs[0], seed)
            self.assertEqual(outs[1][-1], RETURN, seed)

    def test_raw_json_schema_is_the_whole_output(self):
        path = self.schema_file(SCHEMA)
        out = json.loads(ok("generate", "-i", "JSON:", "--raw", *MODEL_ARGS, "--seed", "4", "-q",
                            "--json-schema", path, "--format", "json").stdout)
        self.check_doc(out["text"][:out["text"].index("<|")])
        text = ok("generate", "-i", "JSON:", "--raw", *MODEL_ARGS, "--seed", "4", "-q",
                  "--json-schema", path).stdout
        self.assertTrue(text.startswith(out["text"][:out["text"].index("<|")]))

    def test_getp_matches_generate_under_constraints(self):
        path = self.schema_file(SCHEMA)
        with tempfile.TemporaryDirectory() as d:
            prompts = Path(d) / "p.txt"
            prompts.write_text("One\nTwo\n")
            lines = ok("getp", "-i", str(prompts), *MODEL_ARGS, "--seed", "5", "-q", "--json-schema", path,
                       "--max-reasoning-tokens", "3", "--format", "ids").stdout.splitlines()
        for prompt, line in zip(("One", "Two"), lines):
            alone = ok("generate", "-i", prompt, *MODEL_ARGS, "--seed", "5", "-q", "--json-schema", path,
                       "--max-reasoning-tokens", "3", "--format", "ids").stdout.strip()
            self.assertEqual(line, alone)

    def test_no_constrain_samples_freely(self):
        free = ok("generate", "-i", "Hi", *MODEL_ARGS, *GREEDY, "-q", "--max-tokens", "3", "--format", "ids",
                  "--no-constrain").stdout.split()
        constrained = ok("generate", "-i", "Hi", *MODEL_ARGS, *GREEDY, "-q", "--max-tokens", "3",
                         "--format", "ids").stdout.split()
        self.assertNotEqual(free[0], str(CHANNEL))  # the random model never writes a header itself
        self.assertEqual(constrained[0], str(CHANNEL))

    def test_bad_constraint_flags_are_one_line_errors(self):
        bad_json = self.schema_file({})
        Path(bad_json).write_text("{not json")
        unsupported = self.schema_file({"type": "string", "pattern": "^x"})
        cases = [
            (["--json-schema", "/nonexistent.json"], "cannot read"),
            (["--json-schema", bad_json], "not valid JSON"),
            (["--json-schema", unsupported], '"pattern"'),
            (["--max-reasoning-tokens", "-1"], "--max-reasoning-tokens"),
            (["--max-reasoning-tokens", "x"], "--max-reasoning-tokens"),
            (["--raw", "--max-reasoning-tokens", "2"], "needs Harmony"),
            (["--no-constrain", "--json-schema", unsupported], "--no-constrain"),
        ]
        for args, mention in cases:
            result = run("generate", "-i", "x", *MODEL_ARGS, *args)
            self.assertEqual(result.returncode, 2, (args, result.stderr))
            lines = result.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, (args, result.stderr))
            self.assertIn(mention, lines[0])


# Nested object, array, enum, free string, number: a random model fills the free string until
# the budget closes it.
BUDGET_SCHEMA = {"type": "object", "properties": {
    "s": {"type": "string"}, "n": {"type": "integer", "minimum": 1, "maximum": 9},
    "l": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
    "o": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
    "required": ["s", "n", "l", "o"], "additionalProperties": False}
BELOW = re.compile(r"^gptoss: --max-tokens (\d+)( \(the default\))? is below the (\d+) tokens the shortest "
                   r"complete answer takes$")


@unittest.skipUnless((Path(CLI).parent / "gptoss-make-model").exists(), "gptoss-make-model missing")
class TokenBudgetTest(unittest.TestCase):
    """--json-schema with --max-tokens: the answer is steered to a complete, valid end within
    the limit, on a model made from a fresh random seed (printed), every document validated by
    the jsonschema package."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        seed = int(os.environ.get("GPTOSS_TEST_MODEL_SEED") or random.SystemRandom().randrange(1, 2**31))
        print(f"\nfresh random model: gptoss-make-model --preset tiny --seed {seed} "
              f"(GPTOSS_TEST_MODEL_SEED={seed} replays it)", file=sys.stderr, flush=True)
        subprocess.run([str(Path(CLI).parent / "gptoss-make-model"), "--preset", "tiny", "--format", "hf",
                        "--seed", str(seed), "--tokenizer-json", TOKENIZER, "--out", cls.tmp.name],
                       check=True, capture_output=True)
        cls.model = ["--model", str(Path(cls.tmp.name) / "model-hf"), "--context", "512"]
        if os.environ.get("GPTOSS_TEST_BACKEND"):
            cls.model += ["--backend", os.environ["GPTOSS_TEST_BACKEND"]]
        cls.schema = Path(cls.tmp.name) / "schema.json"
        cls.schema.write_text(json.dumps(BUDGET_SCHEMA))
        cls.minimum = {}
        for raw in ([], ["--raw"]):  # the shortest complete answer, from the error below it
            result = run("generate", "-i", "x", *cls.model, "--json-schema", str(cls.schema), "--max-tokens", "1",
                         *raw)
            below = BELOW.match(result.stderr.strip())
            assert result.returncode == 2 and below, result.stderr
            cls.minimum[bool(raw)] = int(below.group(3))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def validate(self, text, where):
        try:
            jsonschema.validate(json.loads(text), BUDGET_SCHEMA)
        except Exception as e:
            raise AssertionError(f"{where}: {text!r}: {e}") from e

    def test_below_the_minimum_is_a_one_line_error_before_generating(self):
        shortest = self.minimum[False]
        self.assertGreater(shortest, self.minimum[True])  # the Harmony header comes on top
        prompts = Path(self.tmp.name) / "prompts.txt"
        prompts.write_text("a\nb\n")
        for mode in (["generate", "-i", "x"], ["getp", "-i", str(prompts)], ["chat"]):
            result = run(*mode, *self.model, "--json-schema", str(self.schema), "--max-tokens", str(shortest - 1),
                         stdin="Hi\n")
            self.assertEqual(result.returncode, 2, (mode, result.stderr))
            self.assertEqual(result.stdout, "", mode)  # nothing generated
            self.assertEqual(result.stderr.strip().splitlines(),
                             [f"gptoss: --max-tokens {shortest - 1} is below the {shortest} tokens the shortest "
                              f"complete answer takes"], mode)
        # A context too small for the answer after the prompt says so too.
        result = run("generate", "-i", "x", *self.model, "--json-schema", str(self.schema), "--context", "170")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertRegex(result.stderr, r"the context leaves room for \d+ tokens, below the "
                                        rf"{shortest} tokens the shortest complete answer takes \(raise --context\)")

    def test_answers_at_and_above_the_minimum_are_complete_and_valid(self):
        # 20 seeds at budgets from the minimum to 4x it, temperatures 0.7-1.5; then getp's
        # batches: 12 prompts at the minimum, and raw documents.
        shortest = self.minimum[False]
        for seed in range(1, 21):
            budget = shortest + (seed - 1) * 3 * shortest // 19
            temperature = f"{0.7 + 0.8 * ((seed * 7) % 20) / 19:.2f}"
            where = f"seed {seed}, --max-tokens {budget} (minimum {shortest}), --temperature {temperature}"
            result = ok("generate", "-i", f"Record {seed}?", *self.model, "--json-schema", str(self.schema),
                        "--max-tokens", str(budget), "--seed", str(seed), "--temperature", temperature,
                        "--format", "json")
            out = json.loads(result.stdout)
            self.assertEqual(out["tokens"][-1], RETURN, where)
            self.assertLessEqual(len(out["tokens"]), budget, where)
            self.validate(out["text"], where)
            finals = [m for m in out["messages"] if m["channel"] == "final"]
            self.assertEqual([m["content"][0]["text"] for m in finals], [out["text"]], where)
            notice = f"gptoss: the token budget closed the answer (--max-tokens {budget})\n"
            self.assertEqual(notice in result.stderr, out["closed_by_budget"], (where, result.stderr))
        with tempfile.TemporaryDirectory() as d:
            prompts = Path(d) / "prompts.txt"
            prompts.write_text("".join(f"Record {i}?\n" for i in range(12)))
            for raw in (False, True):
                budget = self.minimum[raw]
                result = ok("getp", "-i", str(prompts), *self.model, "--json-schema", str(self.schema),
                            "--max-tokens", str(budget), "--seed", "7", "--temperature", "1.3", "--format", "json",
                            *(["--raw"] if raw else []))
                lines = result.stdout.splitlines()
                self.assertEqual(len(lines), 12)
                closed = 0
                for i, line in enumerate(lines):
                    out = json.loads(line)
                    where = f"getp prompt {i}, --max-tokens {budget} (the minimum){', --raw' if raw else ''}"
                    self.assertLessEqual(len(out["tokens"]), budget, where)
                    # At a Harmony turn's minimum the budget always forbids the analysis channel; a
                    # raw document at its byte-counted minimum fits unsteered when the sampled
                    # tokens carry several bytes each.
                    if not raw:
                        self.assertTrue(out["closed_by_budget"], where)
                    closed += out["closed_by_budget"]
                    self.validate(out["text"][:out["text"].index("<|")] if raw else out["text"], where)
                notice = f"gptoss: the token budget closed {closed} of 12 answers (--max-tokens {budget})"
                if closed:
                    self.assertIn(notice, result.stderr)
                else:
                    self.assertNotIn("token budget", result.stderr)

    def test_notice_only_when_the_budget_closed_the_answer(self):
        shortest = self.minimum[False]
        args = ["generate", "-i", "Hi", *self.model, "--json-schema", str(self.schema), "--seed", "3"]
        closed = ok(*args, "--max-tokens", str(shortest))
        self.validate(closed.stdout, "at the minimum")
        self.assertIn(f"gptoss: the token budget closed the answer (--max-tokens {shortest})", closed.stderr)
        self.assertNotIn("token budget", ok(*args, "--max-tokens", str(shortest), "-q").stderr)  # -q: no notices
        # A bounded answer with room to spare, no reasoning: nothing to close.
        bounded = Path(self.tmp.name) / "bounded.json"
        bounded.write_text(json.dumps(SCHEMA))
        free = ok("generate", "-i", "Hi", *self.model, "--json-schema", str(bounded), "--max-reasoning-tokens", "0",
                  "--max-tokens", "200", "--seed", "3", "--format", "json")
        self.assertFalse(json.loads(free.stdout)["closed_by_budget"])
        self.assertNotIn("token budget", free.stderr)
        # Chat: every turn fits; /save shows the answers.
        with tempfile.TemporaryDirectory() as d:
            saved = Path(d) / "chat.json"
            result = ok("chat", *self.model, "--json-schema", str(self.schema), "--max-tokens", str(2 * shortest),
                        "--seed", "5", stdin=f"One\nTwo\n/save {saved}\n")
            finals = [m for m in json.loads(saved.read_text())["messages"] if m.get("channel") == "final"]
            self.assertEqual(len(finals), 2, result.stderr)
            for m in finals:
                self.validate(m["content"][0]["text"], "chat")
            # At twice the minimum a turn may finish unsteered: at most one notice per turn.
            self.assertLessEqual(result.stderr.count("the token budget closed the answer"), 2, result.stderr)


if __name__ == "__main__":
    unittest.main()
