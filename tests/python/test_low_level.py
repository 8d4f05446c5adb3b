"""The low-level objects: Tokenizer, Model, Context, Sampler, KVCache, and their errors."""

import array
import gc
import math
import os
import subprocess
import unittest

from support import C_REFERENCE, MODEL, PROMPT_TEXT, TOKENIZER, gptoss, model


class TokenizerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tok = model().tokenizer

    def test_round_trip(self):
        text = "Hello, world! Ünïcödé and emoji 🎉 ok"
        ids = self.tok.encode(text)
        self.assertTrue(all(isinstance(i, int) for i in ids))
        self.assertLess(len(ids), len(text.encode()))
        self.assertEqual(self.tok.decode(ids), text)
        self.assertEqual(b"".join(self.tok.token_bytes(i) for i in ids), text.encode())

    def test_special_tokens_only_when_allowed(self):
        start = self.tok.special_token_id("<|start|>")
        self.assertEqual(self.tok.encode("<|start|>", allow_special=True), [start])
        plain = self.tok.encode("<|start|>")
        self.assertNotIn(start, plain)
        self.assertEqual(self.tok.decode(plain), "<|start|>")
        self.assertEqual(self.tok.special_token_id("<|return|>"), 200002)  # header comment

    def test_counts(self):
        self.assertEqual(self.tok.num_text_tokens + self.tok.num_special_tokens, len(self.tok))
        self.assertEqual(len(self.tok), model().info.vocab_size)

    def test_standalone_tokenizer_matches_model_tokenizer(self):
        with gptoss.Tokenizer(TOKENIZER) as standalone:
            self.assertEqual(standalone.encode(PROMPT_TEXT, allow_special=True),
                             self.tok.encode(PROMPT_TEXT, allow_special=True))

    def test_errors(self):
        with self.assertRaises(gptoss.GptossIOError) as cm:
            gptoss.Tokenizer("/nonexistent/tokenizer.json")
        self.assertIsInstance(cm.exception, OSError)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(gptoss.InvalidArgumentError):
            self.tok.token_bytes(len(self.tok) + 5)
        with self.assertRaises(gptoss.InvalidArgumentError):
            self.tok.special_token_id("<|no_such_token|>")


class ModelTest(unittest.TestCase):
    def test_info(self):
        info = model().info
        self.assertEqual(info.num_layers, info.num_layers_total)
        self.assertGreater(info.vocab_size, 0)
        self.assertEqual(info.format, "safetensors")
        self.assertTrue(info.backend)
        self.assertTrue(info.kernels)  # the CPU backend names its kernel level
        self.assertIs(info.batch_invariant, True)  # every CPU kernel level declares it
        self.assertEqual(model().max_context_length, info.max_context_length)
        self.assertGreater(model().kv_bytes_per_token("f32"), model().kv_bytes_per_token("bf16"))

    def test_scalar_kernels_declare_batch_invariance(self):
        # The CPU backend reads GPTOSS_CPU_ISA when a model opens its device.
        saved = os.environ.get("GPTOSS_CPU_ISA")
        os.environ["GPTOSS_CPU_ISA"] = "scalar"
        try:
            with gptoss.Model(MODEL, tokenizer_path=TOKENIZER, num_layers=1) as m:
                self.assertEqual((m.info.kernels, m.info.batch_invariant), ("scalar", True))
        finally:
            if saved is None:
                del os.environ["GPTOSS_CPU_ISA"]
            else:
                os.environ["GPTOSS_CPU_ISA"] = saved

    def test_precision(self):
        # Both precisions load and predict; "exact" is the fp32 path the conformance
        # tolerance applies to.
        outs = []
        for precision in ("fast", "exact"):
            with gptoss.Model(MODEL, tokenizer_path=TOKENIZER, precision=precision) as m:
                with gptoss.Context(m, context_length=32) as c:
                    c.append([200006, 1428, 200008])
                    c.process()
                    outs.append(c.logits())
        self.assertEqual(len(outs[0]), len(outs[1]))
        self.assertLess(max(abs(a - b) for a, b in zip(outs[0], outs[1])), 2.0)
        with self.assertRaises(ValueError):
            gptoss.Model(MODEL, tokenizer_path=TOKENIZER, precision="half")

    def test_partial_model(self):
        with gptoss.Model(MODEL, tokenizer_path=TOKENIZER, num_layers=1) as m:
            self.assertEqual(m.info.num_layers, 1)

    def test_bad_input_raises(self):
        with self.assertRaises(gptoss.GptossIOError) as cm:
            gptoss.Model("/nonexistent/model")
        self.assertIn("gptoss_model_create_with_options", str(cm.exception))
        with self.assertRaises(TypeError):
            gptoss.Model(MODEL, no_such_option=1)
        with self.assertRaises(gptoss.GptossError):
            gptoss.Model(MODEL, tokenizer_path=TOKENIZER, backend="no-such-backend")
        with self.assertRaises(ValueError):
            model().kv_bytes_per_token("f16")


class ContextTest(unittest.TestCase):
    def setUp(self):
        self.tok = model().tokenizer
        self.prompt = self.tok.encode(PROMPT_TEXT, allow_special=True)

    def test_append_process_logits(self):
        with gptoss.Context(model(), context_length=256) as ctx:
            self.assertEqual(ctx.append(self.prompt), len(self.prompt))
            self.assertEqual(ctx.num_tokens, len(self.prompt))
            self.assertEqual(ctx.num_processed_tokens, 0)
            ctx.process()
            self.assertEqual(ctx.num_processed_tokens, len(self.prompt))
            logits = ctx.logits()
            self.assertIsInstance(logits, memoryview)
            self.assertEqual(logits.format, "f")
            self.assertEqual(len(logits), model().info.vocab_size)
            self.assertTrue(all(math.isfinite(x) for x in logits[:1000]))
            self.assertGreater(max(logits) - min(logits), 0.0)
            self.assertEqual(ctx.tokens, self.prompt)
            self.assertEqual(ctx.max_tokens, 256)

    def test_text_append_equals_token_append(self):
        with gptoss.Context(model(), context_length=256) as a, \
                gptoss.Context(model(), context_length=256) as b:
            a.append(PROMPT_TEXT)
            b.append(self.prompt)
            self.assertEqual(a.tokens, b.tokens)

    def test_truncate_keeps_prefix_state(self):
        with gptoss.Context(model(), context_length=256) as ctx, \
                gptoss.Context(model(), context_length=256) as fresh:
            ctx.append(self.prompt)
            ctx.process()
            ctx.append([1000, 2000, 3000])
            ctx.process()
            ctx.truncate(len(self.prompt) - 1)
            ctx.append(self.prompt[-1:])
            ctx.process()
            fresh.append(self.prompt)
            fresh.process()
            for x, y in zip(ctx.logits(), fresh.logits()):
                self.assertAlmostEqual(x, y, delta=1e-4)

    def test_batched_equals_one_at_a_time(self):
        prompts = [self.prompt, self.tok.encode("Once upon a time"), self.tok.encode("1 2 3 4 5 6")]
        alone = []
        for p in prompts:
            with gptoss.Context(model(), context_length=128) as ctx:
                ctx.append(p)
                ctx.process()
                alone.append(array.array("f", ctx.logits()))
        contexts = [gptoss.Context(model(), context_length=128) for _ in prompts]
        for ctx, p in zip(contexts, prompts):
            ctx.append(p)
        gptoss.Context.process_all(contexts)
        for ctx, expected in zip(contexts, alone):
            got = ctx.logits()
            worst = max(abs(a - b) for a, b in zip(got, expected))
            self.assertLess(worst, 1e-3)
            ctx.close()

    def test_errors(self):
        with gptoss.Context(model(), context_length=8) as ctx:
            with self.assertRaises(gptoss.InvalidStateError):
                ctx.logits()  # nothing processed yet
            with self.assertRaises(gptoss.InvalidArgumentError):
                ctx.append([model().info.vocab_size])  # id outside the vocabulary
            with self.assertRaises(ValueError):
                ctx.append([-1])
            with self.assertRaises(gptoss.ContextOverflowError) as cm:
                ctx.append(list(range(9)))
            self.assertTrue(cm.exception.message)
            self.assertEqual(ctx.num_tokens, 0)  # nothing appended on failure
        with self.assertRaises(ValueError):
            ctx.process()  # closed

    def test_kvcache_shared_pool(self):
        with gptoss.KVCache(model(), capacity_tokens=64, max_sequences=2) as pool:
            free = pool.free_tokens
            self.assertGreaterEqual(free, 64)
            with gptoss.Context(model(), context_length=64, kvcache=pool) as ctx:
                ctx.append(self.prompt)
                ctx.process()
                self.assertLess(pool.free_tokens, free)
        with self.assertRaises(gptoss.InvalidArgumentError):
            gptoss.KVCache(model(), capacity_tokens=0)

    def test_kvcache_capacity_for_whole_pages(self):
        # Three contexts of 17 tokens take two pages each: 96 tokens of capacity, not 51.
        lengths = [17, 17, 17]
        self.assertEqual(gptoss.KV_PAGE_SIZE, 16)
        self.assertEqual(gptoss.KVCache.capacity_for(lengths), 96)
        self.assertEqual(gptoss.KVCache.capacity_for([16, 1, 0]), 32)

        def fill(capacity):
            with gptoss.KVCache(model(), capacity_tokens=capacity, max_sequences=3) as pool:
                contexts = [gptoss.Context(model(), context_length=n, kvcache=pool) for n in lengths]
                try:
                    for ctx in contexts:
                        ctx.append(list(range(1, 18)))
                    gptoss.Context.process_all(contexts)
                    return pool.free_tokens
                finally:
                    for ctx in contexts:
                        ctx.close()

        self.assertEqual(fill(gptoss.KVCache.capacity_for(lengths)), 0)
        with self.assertRaises(gptoss.InsufficientResourcesError) as cm:
            fill(sum(lengths))  # the plain sum is two pages short
        self.assertIn("KV cache is full", cm.exception.message)


class SamplerTest(unittest.TestCase):
    def test_greedy_is_argmax(self):
        with gptoss.Context(model(), context_length=64) as ctx, gptoss.Sampler(temperature=0) as s:
            ctx.append(model().tokenizer.encode(PROMPT_TEXT, allow_special=True))
            ctx.process()
            logits = ctx.logits()
            self.assertEqual(ctx.sample(s), max(range(len(logits)), key=logits.__getitem__))

    def test_logprobs(self):
        with gptoss.Context(model(), context_length=64) as ctx, \
                gptoss.Sampler(temperature=0, top_logprobs=3) as s:
            ctx.append(model().tokenizer.encode("Hello"))
            token = ctx.sample(s)
            chosen, alternatives = s.last_logprobs()
            self.assertEqual(chosen.token, token)
            self.assertLessEqual(chosen.logprob, 0.0)
            self.assertEqual(len(alternatives), 3)
            self.assertEqual(alternatives[0].token, token)

    def test_bad_options_raise(self):
        for options in ({"top_p": 2.0}, {"temperature": -1.0}, {"min_p": 1.5}, {"top_logprobs": 99}):
            with self.assertRaises(gptoss.InvalidArgumentError, msg=str(options)):
                gptoss.Sampler(**options)
        with self.assertRaises(TypeError):
            gptoss.Sampler(no_such_option=1)
        with self.assertRaises(gptoss.InvalidStateError):
            gptoss.Sampler().last_logprobs()


def c_reference(n, temperature, seed, prompt):
    out = subprocess.run([C_REFERENCE, MODEL, TOKENIZER, str(n), str(temperature), str(seed)]
                         + [str(t) for t in prompt], capture_output=True, text=True, check=True)
    return [int(t) for t in out.stdout.split()]


@unittest.skipUnless(C_REFERENCE, "GPTOSS_C_REFERENCE not set")
class SameTokensAsCTest(unittest.TestCase):
    """The bindings add nothing: the same calls give the same tokens as C."""

    def run_python(self, n, temperature, seed, prompt):
        with gptoss.Context(model(), context_length=1024) as ctx, \
                gptoss.Sampler(temperature=temperature, seed=seed) as sampler:
            ctx.append(prompt)
            out = []
            for _ in range(n):
                out.append(ctx.sample(sampler))
                ctx.append(out[-1:])
            return out

    def test_greedy(self):
        prompt = model().tokenizer.encode(PROMPT_TEXT, allow_special=True)
        expected = c_reference(12, 0, 0, prompt)
        self.assertEqual(len(expected), 12)
        self.assertEqual(self.run_python(12, 0.0, 0, prompt), expected)
        tokens = [t.id for t in model().generate(prompt, max_tokens=12, temperature=0,
                                                 harmony_format=False)]
        self.assertEqual(tokens, expected[:len(tokens)])

    def test_seeded_sampling(self):
        prompt = model().tokenizer.encode("The quick brown fox")
        expected = c_reference(12, 1.0, 1234, prompt)
        self.assertEqual(self.run_python(12, 1.0, 1234, prompt), expected)


class HandleLifetimeTest(unittest.TestCase):
    def test_close_is_idempotent_and_context_outlives_python_model(self):
        m = gptoss.Model(MODEL, tokenizer_path=TOKENIZER)
        ctx = gptoss.Context(m, context_length=32)
        tok = m.tokenizer
        ids = tok.encode("hi")
        vocab = m.info.vocab_size
        m.close()
        m.close()
        self.assertTrue(m.closed)
        with self.assertRaises(ValueError):
            m.info  # noqa: B018
        ctx.append(ids)  # the C context holds its own reference to the model
        ctx.process()
        self.assertEqual(len(ctx.logits()), vocab)
        ctx.close()

    def test_garbage_collection_releases(self):
        for _ in range(3):
            ctx = gptoss.Context(model(), context_length=16)
            ctx.append([1, 2, 3])
            del ctx
            gc.collect()


if __name__ == "__main__":
    unittest.main()
