"""Constrained decoding: grammars (a JSON Schema, or the Harmony structure of an assistant
turn with its tools, tool choice and response format), per-sequence constraints that give
the allowed-token mask, and stop strings. See docs/constrained-decoding.md.

    grammar = Grammar.json_schema(model.tokenizer, {"type": "object", ...})
    with Constraint(grammar) as c, Sampler(seed=1) as s:
        s.set_constraint(c)          # ctx.sample(s) now only returns allowed tokens
"""

import ctypes
import json

from ._errors import check
from ._handle import Handle
from ._library import ConstraintOptions, lib


def _json_bytes(value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


class Grammar(Handle):
    """A compiled grammar: immutable, shareable between constraints (and threads)."""

    _release_name = "gptoss_grammar_release"

    def __init__(self, handle, tokenizer):
        super().__init__(handle)
        self.tokenizer = tokenizer

    @classmethod
    def json_schema(cls, tokenizer, schema):
        """JSON documents valid against `schema` (a dict or JSON text), then an end token.
        Keywords outside the supported subset raise UnsupportedArgumentError."""
        out = ctypes.c_void_p()
        check(lib.gptoss_grammar_create_json_schema(tokenizer, _json_bytes(schema), ctypes.byref(out)),
              "gptoss_grammar_create_json_schema")
        return cls(out, tokenizer)

    @classmethod
    def harmony(cls, tokenizer, tools=None, tool_choice=None, response_format=None, channels=None,
                start=None, parallel_tool_calls=None):
        """The Harmony structure of an assistant turn. `tools`: the Namespace map of
        gptoss_harmony_render ({"functions": {"tools": [{"name", "parameters"}, ...]}}) or a
        list of function tools; `tool_choice`: "auto", "none", "required" or a tool name;
        `response_format`: a JSON Schema dict for the final answer, or {"type": ...};
        `parallel_tool_calls=False`: at most one call, ended by <|call|>."""
        spec = {}
        if tools:
            spec["tools"] = {"functions": {"tools": list(tools)}} if isinstance(tools, (list, tuple)) else tools
        if tool_choice is not None:
            named = tool_choice not in ("auto", "none", "required") and isinstance(tool_choice, str)
            spec["tool_choice"] = {"type": "function", "name": tool_choice} if named else tool_choice
        if response_format is not None:
            is_format = isinstance(response_format, dict) and response_format.get("type") in (
                "text", "json_object", "json_schema") and not _looks_like_schema(response_format)
            spec["response_format"] = response_format if is_format else {"type": "json_schema",
                                                                          "schema": response_format}
        if channels is not None:
            spec["channels"] = list(channels)
        if start is not None:
            spec["start"] = start
        if parallel_tool_calls is not None:
            spec["parallel_tool_calls"] = bool(parallel_tool_calls)
        out = ctypes.c_void_p()
        check(lib.gptoss_grammar_create_harmony(tokenizer, _json_bytes(spec), ctypes.byref(out)),
              "gptoss_grammar_create_harmony")
        return cls(out, tokenizer)


def _looks_like_schema(d):
    return any(k in d for k in ("properties", "items", "enum", "const", "anyOf", "oneOf", "$ref"))


class Constraint(Handle):
    """One sequence's position in a grammar. max_reasoning_tokens (Harmony grammars): tokens
    of reasoning (analysis, and commentary preambles) allowed before the answer is forced open
    (None: no limit). max_tokens: tokens the constraint may accept in all, its end token
    included (None: no limit); the mask then steers the output to a complete valid end within
    it. A max_tokens below min_tokens at the start raises InvalidArgumentError naming that
    minimum."""

    _release_name = "gptoss_constraint_release"

    def __init__(self, grammar, max_reasoning_tokens=None, max_tokens=None):
        opts = ConstraintOptions()
        check(lib.gptoss_constraint_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)), "gptoss_constraint_options_init_sized")
        if max_reasoning_tokens is not None:
            if max_reasoning_tokens < 0:
                raise ValueError(f"max_reasoning_tokens must not be negative, got {max_reasoning_tokens}")
            opts.max_reasoning_tokens = max_reasoning_tokens
        if max_tokens is not None:
            if max_tokens < 0:
                raise ValueError(f"max_tokens must not be negative, got {max_tokens}")
            opts.max_tokens = max_tokens
        out = ctypes.c_void_p()
        check(lib.gptoss_constraint_create(grammar, ctypes.byref(opts), ctypes.byref(out)),
              "gptoss_constraint_create")
        super().__init__(out)
        self.grammar = grammar
        self._words = None

    def accept(self, token):
        """Advances by one token; raises InvalidArgumentError if it is not allowed here."""
        check(lib.gptoss_constraint_accept_token(self, token), "gptoss_constraint_accept_token")

    def mask(self):
        """The allowed-token mask: a memoryview of uint32 words, bit i = token i."""
        n = ctypes.c_size_t()
        if self._words is None:
            lib.gptoss_constraint_fill_mask(self, None, 0, ctypes.byref(n))
            self._words = (ctypes.c_uint32 * n.value)()
        check(lib.gptoss_constraint_fill_mask(self, self._words, len(self._words), ctypes.byref(n)),
              "gptoss_constraint_fill_mask")
        return memoryview(self._words).cast("B").cast("I")

    def allowed_tokens(self):
        """The allowed token ids, ascending."""
        out = []
        for w, bits in enumerate(self.mask()):
            while bits:
                low = bits & -bits
                out.append(w * 32 + low.bit_length() - 1)
                bits ^= low
        return out

    @property
    def finished(self):
        """True once the grammar's terminating token was accepted."""
        flag = ctypes.c_int32()
        check(lib.gptoss_constraint_is_finished(self, ctypes.byref(flag)), "gptoss_constraint_is_finished")
        return bool(flag.value)

    @property
    def min_tokens(self):
        """Tokens the shortest way to finish takes from here (at most: one per byte of the
        shortest completion, one per special token); 0 once finished; -1 if the grammar
        cannot be finished from here."""
        n = ctypes.c_int64()
        check(lib.gptoss_constraint_min_tokens(self, ctypes.byref(n)), "gptoss_constraint_min_tokens")
        return n.value

    @property
    def closed_by_budget(self):
        """True once max_tokens forbade a token the grammar allowed: the output was steered to
        its shortest completion to end within the limit."""
        flag = ctypes.c_int32()
        check(lib.gptoss_constraint_closed_by_budget(self, ctypes.byref(flag)),
              "gptoss_constraint_closed_by_budget")
        return bool(flag.value)

    def reset(self):
        check(lib.gptoss_constraint_reset(self), "gptoss_constraint_reset")


class StopStrings(Handle):
    """Stop strings over streamed text: push() returns (text safe to show, index of the stop
    string that completed or None); the stop string itself is never returned."""

    _release_name = "gptoss_stop_strings_release"

    def __init__(self, stops):
        encoded = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in stops]
        array = (ctypes.c_char_p * max(len(encoded), 1))(*encoded)
        out = ctypes.c_void_p()
        check(lib.gptoss_stop_strings_create(array, len(encoded), ctypes.byref(out)),
              "gptoss_stop_strings_create")
        super().__init__(out)

    def push(self, text):
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        emit, size, index = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_int32()
        check(lib.gptoss_stop_strings_push(self, data, len(data), ctypes.byref(emit), ctypes.byref(size),
                                           ctypes.byref(index)), "gptoss_stop_strings_push")
        out = ctypes.string_at(emit, size.value) if size.value else b""
        return out.decode("utf-8", "replace"), (index.value if index.value >= 0 else None)

    def flush(self):
        emit, size = ctypes.c_void_p(), ctypes.c_size_t()
        check(lib.gptoss_stop_strings_flush(self, ctypes.byref(emit), ctypes.byref(size)),
              "gptoss_stop_strings_flush")
        return (ctypes.string_at(emit, size.value) if size.value else b"").decode("utf-8", "replace")

    def reset(self):
        check(lib.gptoss_stop_strings_reset(self), "gptoss_stop_strings_reset")
