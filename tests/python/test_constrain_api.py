"""The constrained-decoding classes of the package: Grammar, Constraint, StopStrings, and the
json_schema / tools / max_reasoning_tokens options of generate() and chat()."""

import json
import unittest

from support import gptoss, model

TOOLS = [{"name": "lookup", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}},
                                           "required": ["id"], "additionalProperties": False}},
         {"name": "ping"}]


class ConstraintApiTest(unittest.TestCase):
    def test_errors_are_typed_and_named(self):
        tok = model().tokenizer
        with self.assertRaises(gptoss.UnsupportedArgumentError) as cm:
            gptoss.Grammar.json_schema(tok, {"type": "string", "pattern": "^a"})
        self.assertIn('"pattern"', cm.exception.message)
        with self.assertRaises(gptoss.InvalidArgumentError) as cm:
            gptoss.Grammar.harmony(tok, tools=TOOLS, tool_choice="nope")
        self.assertIn("nope", cm.exception.message)
        with gptoss.Constraint(gptoss.Grammar.json_schema(tok, {"type": "boolean"})) as c:
            self.assertEqual(sorted(set(tok.decode([t])[:1] for t in c.allowed_tokens())), ["f", "t"])
            with self.assertRaises(gptoss.InvalidArgumentError):
                c.accept(tok.encode("1")[0])
            for t in tok.encode("false"):
                c.accept(t)
            c.accept(tok.special_token_id("<|end|>"))
            self.assertTrue(c.finished)
            self.assertEqual(c.allowed_tokens(), [])
        with self.assertRaises(ValueError):
            gptoss.Constraint(gptoss.Grammar.harmony(tok), max_reasoning_tokens=-1)

    def test_parallel_tool_calls_false_ends_the_turn_at_the_call(self):
        tok = model().tokenizer
        end, call = tok.special_token_id("<|end|>"), tok.special_token_id("<|call|>")
        header = tok.encode(" to=functions.ping<|channel|>commentary<|message|>{}", allow_special=True)
        for parallel, ends in ((True, {end, call}), (False, {call})):
            with gptoss.Constraint(gptoss.Grammar.harmony(tok, tools=TOOLS, parallel_tool_calls=parallel)) as c:
                for t in header:
                    c.accept(t)
                self.assertEqual(set(c.allowed_tokens()) & {end, call}, ends)

    def test_stop_strings(self):
        with gptoss.StopStrings(["</a>", "égal"]) as s:
            self.assertEqual(s.push("x </"), ("x ", None))
            self.assertEqual(s.push("b> ég"), ("</b> ", None))
            self.assertEqual(s.push("al!"), ("", 1))
        with self.assertRaises(gptoss.InvalidArgumentError):
            gptoss.StopStrings([""])

    def test_generate_with_json_schema(self):
        schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 3}},
                  "required": ["n"], "additionalProperties": False}
        raw = list(model().generate("JSON:", harmony_format=False, json_schema=schema, seed=3, max_tokens=32))
        self.assertIn(json.loads("".join(t.text for t in raw[:-1]))["n"], (1, 2, 3))
        reply = model().chat([{"role": "user", "content": "n?"}], json_schema=schema, max_reasoning_tokens=3,
                             seed=5, max_tokens=48)
        self.assertIn(json.loads(reply.text)["n"], (1, 2, 3))
        self.assertLessEqual(len(model().tokenizer.encode(reply.reasoning)), 3 + 2)
        call = model().chat([{"role": "user", "content": "?"}], tools=TOOLS, tool_choice="lookup", seed=2,
                            max_reasoning_tokens=2, max_tokens=48)
        self.assertEqual(call.tool_calls[0]["recipient"], "functions.lookup")
        self.assertIn("id", json.loads(call.tool_calls[0]["arguments"]))

    def test_harmony_structure_is_on_by_default(self):
        tok = model().tokenizer
        got = [t.id for t in model().generate("Hi", max_tokens=24, seed=9, max_reasoning_tokens=3)]
        with gptoss.StreamParser(tok, strict=True) as parser:
            for t in got:
                parser.process(t)  # raises on anything malformed
        free = [t.id for t in model().generate("Hi", max_tokens=24, seed=9, constrain=False)]
        self.assertNotEqual(got, free)


NOTE = {"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["s"], "additionalProperties": False}


class TokenBudgetApiTest(unittest.TestCase):
    """Constraint(max_tokens=...), min_tokens, closed_by_budget, and the budget generate() and
    chat() give structured output."""

    def test_min_tokens_and_the_below_minimum_error(self):
        tok = model().tokenizer
        grammar = gptoss.Grammar.json_schema(tok, NOTE)
        with gptoss.Constraint(grammar) as c:
            shortest = c.min_tokens
            self.assertEqual(shortest, len('{"s":""}') + 1)  # a byte a token, then the end token
            for t in tok.encode('{"s":"ab'):
                c.accept(t)
            self.assertEqual(c.min_tokens, len('"}') + 1)
            for t in tok.encode('"}') + [tok.special_token_id("<|end|>")]:
                c.accept(t)
            self.assertEqual(c.min_tokens, 0)
            self.assertFalse(c.closed_by_budget)  # no budget, nothing closed
        with self.assertRaises(gptoss.InvalidArgumentError) as cm:
            gptoss.Constraint(grammar, max_tokens=shortest - 1)
        self.assertIn(f"below the {shortest} tokens", cm.exception.message)
        with self.assertRaises(ValueError):
            gptoss.Constraint(grammar, max_tokens=-1)
        # A Harmony grammar that cannot end (no final channel, no tools) has no minimum.
        with gptoss.Constraint(gptoss.Grammar.harmony(tok, channels=["analysis"])) as c:
            self.assertEqual(c.min_tokens, -1)

    def test_a_budget_steers_a_free_string_to_a_valid_end(self):
        # Always taking the allowed text token of highest id without a quote (when every one
        # has a quote, the shortest), the string would never close: the budget must close it,
        # the object and the document in time.
        tok = model().tokenizer
        grammar = gptoss.Grammar.json_schema(tok, NOTE)
        pieces = [tok.token_bytes(t) for t in range(199998)]  # the text tokens of o200k_harmony
        preference = ([t for t in reversed(range(len(pieces))) if b'"' not in pieces[t]]
                      + sorted((t for t in range(len(pieces)) if b'"' in pieces[t]), key=lambda t: len(pieces[t]))
                      + [tok.special_token_id(n) for n in ("<|end|>", "<|return|>", "<|call|>", "<|endoftext|>")])
        for budget in (9, 10, 16, 40):
            with gptoss.Constraint(grammar, max_tokens=budget) as c:
                taken = []
                while not c.finished:
                    self.assertLessEqual(len(taken) + c.min_tokens, budget)
                    mask = c.mask()
                    taken.append(next((t for t in preference if mask[t >> 5] >> (t & 31) & 1), None))
                    self.assertIsNotNone(taken[-1], f"budget {budget}: nothing allowed after {taken[:-1]}")
                    c.accept(taken[-1])
                self.assertLessEqual(len(taken), budget)
                self.assertGreaterEqual(taken[-1], 199998)  # the end token
                self.assertIn("s", json.loads(tok.decode(taken[:-1])))
                self.assertTrue(c.closed_by_budget, f"budget {budget}")

    def test_generate_and_chat_fit_structured_output_in_max_tokens(self):
        m = model()
        tok = m.tokenizer
        with gptoss.Constraint(gptoss.Grammar.json_schema(tok, NOTE)) as c:
            raw_minimum = c.min_tokens
        for seed in range(1, 6):
            run = m.generate("JSON:", harmony_format=False, json_schema=NOTE, max_tokens=raw_minimum + seed,
                             seed=seed, temperature=1.2)
            tokens = list(run)
            self.assertTrue(run.finished, f"seed {seed}")
            self.assertTrue(run.closed_by_budget, f"seed {seed}: a random model's free string fills any budget")
            self.assertLessEqual(len(tokens), raw_minimum + seed)
            self.assertIn("s", json.loads("".join(t.text for t in tokens[:-1])))
            reply = m.chat([{"role": "user", "content": "Note?"}], json_schema=NOTE, max_tokens=30 + 4 * seed,
                           seed=seed, temperature=1.2)
            self.assertIn("s", json.loads(reply.text), f"seed {seed}")
            self.assertTrue(reply.closed_by_budget, f"seed {seed}")
            self.assertLessEqual(len(reply.tokens), 30 + 4 * seed)
            call = m.chat([{"role": "user", "content": "?"}], tools=TOOLS, tool_choice="lookup", seed=seed,
                          max_tokens=44 + seed)
            self.assertEqual(call.tool_calls[-1]["recipient"], "functions.lookup")
            self.assertIn("id", json.loads(call.tool_calls[-1]["arguments"]))
        # Free text gets no budget: a few tokens of a turn are still fine.
        self.assertEqual(len(list(m.generate("Hi", max_tokens=2, seed=1))), 2)

    def test_max_tokens_below_the_minimum_is_refused_before_generating(self):
        m = model()
        with self.assertRaises(gptoss.InvalidArgumentError) as cm:
            m.generate("JSON:", harmony_format=False, json_schema=NOTE, max_tokens=3)  # not even iterated
        self.assertRegex(cm.exception.message, r"max_tokens=3 is below the \d+ tokens the shortest complete answer")
        with self.assertRaises(ValueError) as cm:
            m.chat([{"role": "user", "content": "?"}], tools=TOOLS, tool_choice="required", max_tokens=5)
        self.assertIn("max_tokens=5 is below the", str(cm.exception))
        question = [{"role": "user", "content": "?"}]
        prompt = gptoss.render(m.tokenizer, gptoss._generate._conversation(question, None, None, None, NOTE))
        with self.assertRaises(ValueError) as cm:
            m.chat(question, json_schema=NOTE, max_tokens=1000, context_length=len(prompt) + 5)
        self.assertIn(f"context_length={len(prompt) + 5} leaves room for 6 tokens", str(cm.exception))

    def test_a_preamble_is_reasoning_not_the_answer(self):
        messages = [{"role": "assistant", "channel": "analysis", "content": [{"type": "text", "text": "think "}]},
                    {"role": "assistant", "channel": "commentary", "content": [{"type": "text", "text": "Checking."}]},
                    {"role": "assistant", "channel": "commentary", "recipient": "functions.lookup",
                     "content": [{"type": "text", "text": "{\"id\": 1}"}]},
                    {"role": "assistant", "channel": "final", "content": [{"type": "text", "text": "Done."}]}]
        text, reasoning, calls = gptoss._generate._split_messages(messages)
        self.assertEqual((text, reasoning), ("Done.", "think Checking."))
        self.assertEqual(calls, [{"recipient": "functions.lookup", "arguments": "{\"id\": 1}"}])


if __name__ == "__main__":
    unittest.main()
