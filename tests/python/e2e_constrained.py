"""Constrained decoding end to end on the random-weight conformance model, 200 seeds per case,
every output judged by independent tools: Python's json module parses it and the
`jsonschema` package (Debian python3-jsonschema) validates it; Harmony output goes through the
library's strict parser. Generation runs 200 sequences at a time in one KV pool so each step
is one batched forward pass. Token budgets (max_tokens) are checked there too, and on a model
made from a fresh random seed each run (printed; GPTOSS_TEST_MODEL_SEED replays it). CTest
`python.constrained` (a few minutes: each token is sampled from 201,088 logits)."""

import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

from support import REPO, TOKENIZER, gptoss, model

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
    with gptoss.KVCache(m, capacity_tokens=gptoss.KVCache.capacity_for([length] * len(SEEDS)),
                        max_sequences=len(SEEDS)) as pool:
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


# Token budgets (max_tokens): every output must come out complete — its end token sampled —
# and valid, whatever its budget from the shortest complete output up to 4x it. Free strings
# and free reasoning fill whatever budget they get on a random model (it almost never closes
# them), so these cases also steer most outputs to their end; they cost about 200 x 2 x the
# minimum sampled tokens each, which is why keys and tool names are one letter.

RECORD = {  # nested objects, an array of objects, an enum, free strings, numbers
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "e": {"enum": ["a", "b c", "d"]},
        "o": {"type": "object", "properties": {"x": {"type": "number", "minimum": -2, "maximum": 2},
                                               "t": {"type": ["string", "null"]}},
              "required": ["x"], "additionalProperties": False},
        "l": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "integer"}, "w": {"type": "string"}},
                                         "required": ["v"], "additionalProperties": False},
              "maxItems": 3},
        "f": {"type": "boolean"},
    },
    "required": ["s", "o", "l"],  # the others when the model opens them (kept off the minimum)
    "additionalProperties": False,
}
F_TOOLS = [
    {"name": "f", "description": "Files a note.", "parameters": {
        "type": "object", "properties": {"t": {"type": "string"}, "g": {"type": "array", "items": {"enum": ["x", "y"]}}},
        "required": ["t"], "additionalProperties": False}},
    {"name": "g", "description": "Goes to a place.", "parameters": {
        "type": "object", "properties": {"to": {"enum": ["Paris", "Lima"]}, "at": {"type": "number", "minimum": 0}},
        "required": ["to", "at"], "additionalProperties": False}},
]


def budgets_and_temperatures(shortest, at_minimum=0):
    """(budget, temperature) per seed: the first `at_minimum` seeds exactly at the minimum,
    the others over [shortest, 4 * shortest], denser near the minimum (where the budget steers
    hardest; cheaper than an even spread, too); temperatures over [0.7, 1.5]. Both are spread
    by coprime strides, so budgets and temperatures do not rise together."""
    n = len(SEEDS)
    out = []
    for i in range(n):
        u = ((i * 37) % n) / (n - 1)
        budget = shortest if i < at_minimum else round(shortest + 3 * shortest * u * u)
        out.append((budget, round(0.7 + 0.8 * ((i * 53) % n) / (n - 1), 3)))
    return out


def run_budgeted(m, grammar, prompt_ids, plan, max_reasoning_tokens=None):
    """Samples one sequence per seed with its (budget, temperature) under a constraint given
    that budget, all in one KV pool, one forward pass per step. Returns [(tokens, finished,
    closed_by_budget)] in seed order. Nothing cuts a sequence here but its budget: the
    constraint must have ended it by then."""
    runs = []
    with gptoss.KVCache(m, capacity_tokens=gptoss.KVCache.capacity_for(len(prompt_ids) + b + 1 for b, _ in plan),
                        max_sequences=len(plan)) as pool:
        for seed, (budget, temperature) in zip(SEEDS, plan):
            ctx = gptoss.Context(m, context_length=len(prompt_ids) + budget + 1, kvcache=pool)
            ctx.append(prompt_ids)
            sampler = gptoss.Sampler(seed=seed, temperature=temperature)
            constraint = gptoss.Constraint(grammar, max_reasoning_tokens=max_reasoning_tokens, max_tokens=budget)
            sampler.set_constraint(constraint)
            runs.append((ctx, sampler, constraint, budget, []))
        active = list(runs)
        while active:
            gptoss.Context.process_all([r[0] for r in active])
            still = []
            for run in active:
                ctx, sampler, constraint, budget, tokens = run
                tokens.append(ctx.sample(sampler))
                if not constraint.finished and len(tokens) < budget:
                    ctx.append(tokens[-1:])
                    still.append(run)
            active = still
        results = [(tokens, c.finished, c.closed_by_budget) for _, _, c, _, tokens in runs]
        for ctx, sampler, constraint, _, _ in runs:
            sampler.close()
            constraint.close()
            ctx.close()
    return results


def content_lengths(tok, tokens):
    """The content tokens of each message of a Harmony turn, in order: those between its
    <|message|> and its end token."""
    message = tok.special_token_id("<|message|>")
    ends = {tok.special_token_id(n) for n in ("<|end|>", "<|return|>", "<|call|>")}
    lengths, start = [], None
    for i, t in enumerate(tokens):
        if t == message:
            start = i + 1
        elif t in ends:
            lengths.append(i - start)
    return lengths


def shortest_output(grammar, max_reasoning_tokens=None):
    with gptoss.Constraint(grammar, max_reasoning_tokens=max_reasoning_tokens) as c:
        return c.min_tokens


class BudgetChecks:
    """Runs 200 seeds of one grammar under budgets and judges every output."""

    def check_json(self, m, schema, at_minimum=0):
        tok = m.tokenizer
        grammar = gptoss.Grammar.json_schema(tok, schema)
        shortest = shortest_output(grammar)
        plan = budgets_and_temperatures(shortest, at_minimum)
        closed = 0
        for seed, (budget, temperature), (tokens, done, by_budget) in zip(
                SEEDS, plan, run_budgeted(m, grammar, tok.encode("Reply with JSON:"), plan)):
            where = f"seed {seed}, budget {budget} (minimum {shortest}), temperature {temperature}"
            self.assertTrue(done, f"{where}: not finished in {len(tokens)} tokens")
            self.assertLessEqual(len(tokens), budget, where)
            self.assertTrue(tok.token_bytes(tokens[-1]).startswith(b"<|"), f"{where}: no end token")
            text = tok.decode(tokens[:-1])
            try:
                validate(json.loads(text), schema)
            except Exception as e:
                raise AssertionError(f"{where}: {text!r}: {e}") from e
            closed += by_budget
        # Outputs that end of themselves within their budget never meet it; a case where
        # (almost) none met it would test nothing.
        self.assertGreater(closed, len(SEEDS) // 10, "the budgets steered (almost) no output")

    def check_harmony(self, m, tools, tool_choice, response_format, max_reasoning_tokens, at_minimum=0):
        """Harmony turns under a budget: the strict parser reads every one; the turn ends with
        <|return|> after a final answer valid against the response format (json_object: any
        object) or with <|call|> after a call whose arguments fit its tool (the named one, for
        a named tool_choice); earlier calls fit theirs; reasoning (analysis and preambles)
        stays within max_reasoning_tokens."""
        tok = m.tokenizer
        grammar = gptoss.Grammar.harmony(tok, tools=tools, tool_choice=tool_choice, response_format=response_format)
        shortest = shortest_output(grammar, max_reasoning_tokens)
        plan = budgets_and_temperatures(shortest, at_minimum)
        answer_schema = None if response_format == {"type": "json_object"} else response_format
        conv = gptoss._generate._conversation([{"role": "user", "content": "Go."}], "low", None, tools,
                                              answer_schema)
        schemas = {"functions." + t["name"]: t["parameters"] for t in tools or []}
        ret, call = tok.special_token_id("<|return|>"), tok.special_token_id("<|call|>")
        forced = tool_choice not in (None, "auto", "none")
        closed = 0
        for seed, (budget, temperature), (tokens, done, by_budget) in zip(
                SEEDS, plan, run_budgeted(m, grammar, gptoss.render(tok, conv), plan, max_reasoning_tokens)):
            where = f"seed {seed}, budget {budget} (minimum {shortest}), temperature {temperature}"
            self.assertTrue(done, f"{where}: not finished in {len(tokens)} tokens")
            self.assertLessEqual(len(tokens), budget, where)
            with gptoss.StreamParser(tok, strict=True) as parser:
                for t in tokens:
                    parser.process(t)
                messages = parser.finish()
            if max_reasoning_tokens is not None:
                reasoning = sum(n for m, n in zip(messages, content_lengths(tok, tokens))
                                if m["recipient"] is None and m["channel"] != "final")
                self.assertLessEqual(reasoning, max_reasoning_tokens, where)
            last = messages[-1]
            try:
                text = last["content"][0]["text"]
                if forced or last["recipient"] is not None:
                    self.assertEqual(tokens[-1], call, where)
                    if forced and tool_choice != "required":
                        self.assertEqual(last["recipient"], "functions." + tool_choice, where)
                    validate(json.loads(text), schemas[last["recipient"]])
                else:
                    self.assertEqual((tokens[-1], last["channel"]), (ret, "final"), where)
                    document = json.loads(text)
                    self.assertIsInstance(document, dict, where)
                    if answer_schema is not None:
                        validate(document, answer_schema)
                for earlier in messages[:-1]:
                    self.assertNotEqual(earlier["channel"], "final", where)
                    if earlier["recipient"] is not None:
                        validate(json.loads(earlier["content"][0]["text"]), schemas[earlier["recipient"]])
            except Exception as e:
                raise AssertionError(f"{where}: {messages!r}: {e}") from e
            closed += by_budget
        # Outputs that end of themselves within their budget never meet it; a case where
        # (almost) none met it would test nothing.
        self.assertGreater(closed, len(SEEDS) // 10, "the budgets steered (almost) no output")


class TokenBudgetTest(unittest.TestCase, BudgetChecks):
    """max_tokens from the shortest complete output to 4x it, temperatures 0.7-1.5, 200 seeds
    per case on the conformance model: every output finished within its budget and valid.
    (Reasoning without a limit fills the budget: FreshModelTokenBudgetTest has that case.)"""

    def test_json_schema_nested(self):
        self.check_json(model(), RECORD)

    def test_harmony_json_object_with_small_reasoning_budget(self):
        self.check_harmony(model(), None, None, {"type": "json_object"}, 3)

    def test_required_tool_call_with_small_reasoning_budget(self):
        self.check_harmony(model(), F_TOOLS, "required", None, 2)

    def test_named_tool_call(self):
        self.check_harmony(model(), F_TOOLS, "f", None, 4)


def make_fresh_model(directory):
    """A random-weight model from a fresh seed (GPTOSS_TEST_MODEL_SEED replays one), made by
    gptoss-make-model with the tiny preset (2 layers); the seed is printed first."""
    maker = os.environ.get("GPTOSS_MAKE_MODEL", str(REPO / "build/bin/gptoss-make-model"))
    seed = int(os.environ.get("GPTOSS_TEST_MODEL_SEED") or random.SystemRandom().randrange(1, 2**31))
    print(f"\nfresh random model: gptoss-make-model --preset tiny --seed {seed} "
          f"(GPTOSS_TEST_MODEL_SEED={seed} replays it)", file=sys.stderr, flush=True)
    subprocess.run([maker, "--preset", "tiny", "--format", "hf", "--seed", str(seed), "--tokenizer-json",
                    TOKENIZER, "--out", directory], check=True, capture_output=True)
    return gptoss.Model(os.path.join(directory, "model-hf"))


class FreshModelTokenBudgetTest(unittest.TestCase, BudgetChecks):
    """The budget on a model no test was tuned on, made from a fresh seed each run: a JSON
    Schema answer beside tools the model may call, free reasoning, a quarter of the seeds at
    exactly the minimum."""

    def test_json_schema_answer_or_tool_call(self):
        with tempfile.TemporaryDirectory() as directory, make_fresh_model(directory) as m:
            self.check_harmony(m, F_TOOLS, "auto", RECORD, None, at_minimum=50)


if __name__ == "__main__":
    unittest.main()
