"""Constrained decoding end to end on the random-weight conformance model, 200 seeds per case,
every output judged by independent tools: Python's json module parses it and the
`jsonschema` package (Debian python3-jsonschema) validates it; Harmony output goes through the
library's strict parser. Generation runs 200 sequences at a time in one KV pool so each step
is one batched forward pass. CTest `python.constrained` (a few minutes: each token is sampled
from 201,088 logits)."""

import json
import unittest

from support import gptoss, model

try:
    import jsonschema
except ImportError as e:  # a dependency, not an optional extra
    raise ImportError("these tests validate with the jsonschema package: run scripts/setup.sh "
                      "(it installs Debian's python3-jsonschema)") from e

SEEDS = range(1, 201)

NESTED = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": -20, "maximum": 300},
        "kind": {"enum": ["a", "b", "c d"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "zz"]}, "minItems": 1,
                 "maxItems": 3},
        "pos": {"type": "object", "properties": {"x": {"type": "number", "minimum": -1.5, "maximum": 2.5},
                                                 "y": {"type": "integer", "exclusiveMinimum": 0,
                                                       "exclusiveMaximum": 9}},
                "required": ["x", "y"], "additionalProperties": False},
        "flag": {"type": ["boolean", "null"]},
    },
    "required": ["id", "kind", "tags", "pos"],
    "additionalProperties": False,
}

RECURSIVE = {
    "$defs": {"tree": {"type": "object",
                       "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 9},
                                      "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}, "maxItems": 2}},
                       "required": ["v"], "additionalProperties": False}},
    "anyOf": [{"$ref": "#/$defs/tree"}, {"type": "null"},
              {"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 2}],
}

SHAPES = {
    "oneOf": [
        {"type": "object", "properties": {"type": {"const": "circle"},
                                          "r": {"type": "number", "exclusiveMinimum": 0, "maximum": 10}},
         "required": ["type", "r"], "additionalProperties": False},
        {"type": "object", "properties": {"type": {"const": "rect"}, "w": {"type": "integer", "minimum": 1, "maximum": 5},
                                          "h": {"type": "integer", "minimum": 1, "maximum": 5}},
         "required": ["type", "w", "h"], "additionalProperties": False},
    ],
}

STRINGS = {  # free strings: unbounded, so a token cap may cut them (incomplete, never invalid)
    "type": "object",
    "properties": {"name": {"type": "string"}, "note": {"type": ["string", "null"]},
                   "meta": {"type": "object", "additionalProperties": {"type": "integer", "maximum": 99}}},
    "required": ["name", "meta"],
}

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
                                            "unit": {"enum": ["c", "f"]}},
           "required": ["city"], "additionalProperties": False}
LOOKUP = {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1, "maximum": 1000}},
          "required": ["id"], "additionalProperties": False}
TOOLS = [{"name": "get_weather", "description": "Weather in a city.", "parameters": WEATHER},
         {"name": "lookup", "description": "Looks up a record.", "parameters": LOOKUP}]
ANSWER = {"type": "object", "properties": {"answer": {"type": "integer", "minimum": 0, "maximum": 42},
                                           "sure": {"type": "boolean"}},
          "required": ["answer", "sure"], "additionalProperties": False}


def validate(instance, schema):
    jsonschema.validators.validator_for(schema)(schema).validate(instance)


def run_batch(grammar, prompt_ids, cap, max_reasoning_tokens=None):
    """Samples every seed's sequence under its own constraint, all in one KV pool and one
    forward pass per step. Returns [(tokens, finished)] in seed order."""
    m = model()
    length = len(prompt_ids) + cap + 8
    runs = []
    with gptoss.KVCache(m, capacity_tokens=len(SEEDS) * length, max_sequences=len(SEEDS)) as pool:
        for seed in SEEDS:
            ctx = gptoss.Context(m, context_length=length, kvcache=pool)
            ctx.append(prompt_ids)
            sampler = gptoss.Sampler(seed=seed)
            constraint = gptoss.Constraint(grammar, max_reasoning_tokens=max_reasoning_tokens)
            sampler.set_constraint(constraint)
            runs.append((ctx, sampler, constraint, []))
        active = list(runs)
        for _ in range(cap):
            gptoss.Context.process_all([r[0] for r in active])
            still = []
            for ctx, sampler, constraint, tokens in active:
                tokens.append(ctx.sample(sampler))
                if not constraint.finished:
                    ctx.append(tokens[-1:])
                    still.append((ctx, sampler, constraint, tokens))
            active = still
            if not active:
                break
        results = [(tokens, constraint.finished) for _, _, constraint, tokens in runs]
        for ctx, sampler, constraint, _ in runs:
            sampler.close()
            constraint.close()
            ctx.close()
    return results


class JsonSchemaOutputsTest(unittest.TestCase):
    def check_schema(self, schema, cap, bounded):
        tok = model().tokenizer
        grammar = gptoss.Grammar.json_schema(tok, schema)
        prompt = tok.encode("Reply with JSON:")
        finished = 0
        for seed, (tokens, done) in zip(SEEDS, run_batch(grammar, prompt, cap)):
            if not done:
                self.assertFalse(bounded, f"seed {seed}: a bounded schema did not finish in {cap} tokens")
                self.assertEqual(len(tokens), cap)  # cut by the cap: incomplete
                continue
            finished += 1
            self.assertTrue(tok.token_bytes(tokens[-1]).startswith(b"<|"), f"seed {seed}: no end token")
            text = tok.decode(tokens[:-1])
            validate(json.loads(text), schema)  # raises with the seed's document if invalid
        # Unbounded schemas: some documents complete, the others are cut (never invalid).
        self.assertGreater(finished, 5 if not bounded else len(SEEDS) - 1)
        return finished

    def test_nested_objects_arrays_enums_and_ranges(self):
        self.check_schema(NESTED, 96, bounded=True)

    def test_oneof_with_discriminator(self):
        self.check_schema(SHAPES, 64, bounded=True)

    def test_anyof_and_recursive_refs(self):
        self.check_schema(RECURSIVE, 48, bounded=False)

    def test_free_strings_and_maps(self):
        self.check_schema(STRINGS, 40, bounded=False)


class HarmonyOutputsTest(unittest.TestCase):
    def conversation_prompt(self):
        conv = gptoss._generate._conversation([{"role": "user", "content": "Weather in Paris?"}], "low", None,
                                              TOOLS, ANSWER)
        return gptoss.render(model().tokenizer, conv)

    def parse_strictly(self, tokens, finished):
        """Messages of one output by the strict parser, and the analysis content tokens."""
        tok = model().tokenizer
        with gptoss.StreamParser(tok, strict=True) as parser:
            analysis = 0
            for t in tokens:
                state = parser.process(t)
                if state.channel == "analysis" and state.recipient is None and t < 199998:
                    analysis += 1
            return (parser.finish() if finished else parser.messages), analysis

    def check_turns(self, tool_choice, budget, cap):
        tok = model().tokenizer
        grammar = gptoss.Grammar.harmony(tok, tools=TOOLS, tool_choice=tool_choice, response_format=ANSWER)
        schemas = {"functions." + t["name"]: t["parameters"] for t in TOOLS}
        ends = {tok.special_token_id("<|call|>"), tok.special_token_id("<|return|>")}
        finished = calls = 0
        for seed, (tokens, done) in zip(SEEDS, run_batch(grammar, self.conversation_prompt(), cap, budget)):
            messages, analysis = self.parse_strictly(tokens, done)
            self.assertLessEqual(analysis, budget, f"seed {seed}")
            for i, m in enumerate(messages):
                text = m["content"][0]["text"]
                if m["recipient"] is not None:
                    self.assertIn(m["recipient"], schemas, f"seed {seed}")
                    validate(json.loads(text), schemas[m["recipient"]])
                elif m["channel"] == "final":
                    validate(json.loads(text), ANSWER)
                self.assertIn(m["channel"], ("analysis", "commentary", "final"))
            if not done:
                continue
            finished += 1
            self.assertIn(tokens[-1], ends, f"seed {seed}")
            last = messages[-1]
            if tool_choice in ("required",) or isinstance(tool_choice, str) and tool_choice not in ("auto", "none"):
                self.assertEqual(tokens[-1], tok.special_token_id("<|call|>"), f"seed {seed}")
                self.assertIsNotNone(last["recipient"], f"seed {seed}")
            if tool_choice not in ("auto", "none", "required"):
                self.assertEqual(last["recipient"], "functions." + tool_choice)
            if tool_choice == "none":
                self.assertTrue(all(m["recipient"] is None for m in messages))
            calls += last["recipient"] is not None
        self.assertGreater(finished, len(SEEDS) // 2, "most turns should complete within the cap")
        return finished, calls

    def test_auto_with_json_answer_and_reasoning_budget(self):
        finished, calls = self.check_turns("auto", 6, 56)
        self.assertGreater(calls, 0)
        self.assertLess(calls, finished)

    def test_required_tool_call(self):
        self.check_turns("required", 6, 56)

    def test_named_tool_call(self):
        self.check_turns("lookup", 4, 48)




if __name__ == "__main__":
    unittest.main()
