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


if __name__ == "__main__":
    unittest.main()
