"""Speculative decoding through the bindings: generate(draft=...) gives plain decoding's tokens.

Identical tokens need identical logits for a token whatever step computes it: the model here
is loaded with the CPU backend's scalar kernels (GPTOSS_CPU_ISA=scalar, read at load)."""

import os
import unittest

from support import MODEL, TOKENIZER, gptoss

_scalar = None


def scalar_model():
    global _scalar
    if _scalar is None:
        os.environ["GPTOSS_CPU_ISA"] = "scalar"
        try:
            _scalar = gptoss.Model(MODEL, tokenizer_path=TOKENIZER, backend="cpu")
        finally:
            del os.environ["GPTOSS_CPU_ISA"]
    return _scalar


# Text that repeats itself, so prompt lookup has continuations to propose.
REPEATED = "The quick brown fox jumps over the lazy dog. " * 6


class SpeculativeGenerateTest(unittest.TestCase):
    def ids(self, draft, **kw):
        gen = scalar_model().generate(REPEATED, max_tokens=24, harmony_format=False, draft=draft, **kw)
        return [t.id for t in gen], gen.speculator

    def test_ngram_and_draft_model_match_plain_decoding(self):
        for sampling in ({"temperature": 0}, {"temperature": 1.0, "seed": 11, "top_k": 4}):
            with self.subTest(**sampling):
                plain, _ = self.ids(None, **sampling)
                ngram, spec = self.ids("ngram", **sampling)
                self.assertEqual(ngram, plain)
                self.assertGreater(spec.stats().steps, 0)
                own, spec = self.ids(scalar_model(), **sampling)  # the model drafts for itself
                self.assertEqual(own, plain)
                if sampling["temperature"] == 0:
                    counts = spec.stats()
                    self.assertEqual(counts.accepted, counts.drafted)
                    self.assertLess(counts.steps, len(plain))

    def test_prompt_lookup_is_the_default(self):
        # Without the trailing space the prompt's last token occurs earlier: lookup drafts.
        prompt = REPEATED.rstrip()
        gen = scalar_model().generate(prompt, max_tokens=24, harmony_format=False)
        tokens = [t.id for t in gen]
        self.assertIsNotNone(gen.speculator)
        self.assertGreater(gen.speculator.stats().drafted, 0)
        plain = scalar_model().generate(prompt, max_tokens=24, harmony_format=False, draft=None)
        self.assertEqual(tokens, [t.id for t in plain])

    def test_sample_draft_low_level(self):
        m = scalar_model()
        with gptoss.Context(m, context_length=256) as ctx, gptoss.Sampler(temperature=0) as s:
            ctx.append(m.tokenizer.encode(REPEATED))
            before = ctx.num_tokens
            out = gptoss.sample_draft(ctx, s, [1, 2, 3])
            self.assertTrue(1 <= len(out) <= 4)
            self.assertEqual(ctx.num_tokens, before + len(out) - 1)
            with self.assertRaises(gptoss.InvalidArgumentError):
                gptoss.sample_draft(ctx, s, [5, 10**6])

    def test_cost_bound_off_lets_the_model_draft_for_itself(self):
        # Drafting with the model itself costs a plain step per drafted token, which the cost
        # bound (the default) holds back; without it the always-kept drafts make long steps.
        m = scalar_model()
        prompt = m.tokenizer.encode(REPEATED)
        plain = [t.id for t in m.generate(REPEATED, max_tokens=24, harmony_format=False,
                                         draft=None, temperature=0)]
        for bound in (True, False):
            with self.subTest(cost_bound=bound), \
                    gptoss.Context(m, context_length=256) as ctx, \
                    gptoss.Sampler(temperature=0) as s:
                spec = gptoss.Speculator(draft_model=m, max_draft=6, cost_bound=bound)
                ctx.append(prompt)
                got = []
                while len(got) < len(plain):
                    step = spec.step(ctx, s, len(plain) - len(got))
                    got += step
                    ctx.append([step[-1]])
                self.assertEqual(got, plain)
                counts = spec.stats()
                self.assertEqual(counts.accepted, counts.drafted)
                if not bound:
                    self.assertLess(counts.steps, len(plain) // 2)

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            list(scalar_model().generate("Hi", max_tokens=2, draft="ngram", draft_max=0))
        with self.assertRaises(gptoss.GptossIOError):
            list(scalar_model().generate("Hi", max_tokens=2, draft="/no/such/model"))
        with self.assertRaises(ValueError):
            gptoss.Speculator(max_draft=-1)


if __name__ == "__main__":
    unittest.main()
