"""High-level generation: model.generate(prompt) streams tokens, model.chat(messages) runs one
assistant turn. Both use only the low-level objects of this package."""

import codecs
from dataclasses import dataclass, field
from typing import List, Optional

from . import harmony
from ._errors import InvalidArgumentError
from .constrain import Constraint, Grammar
from .context import Context
from .sampler import Sampler
from .speculative import Speculator

DEFAULT_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."


@dataclass(frozen=True)
class Token:
    """One generated token: its id, the text it adds, and (Harmony) where that text goes."""
    id: int
    text: str
    channel: Optional[str] = None
    recipient: Optional[str] = None

    def __str__(self):
        return self.text


@dataclass
class ChatResponse:
    text: str                     # the final answer
    reasoning: str                # the analysis channel and commentary preambles (no recipient)
    messages: List[dict]          # every parsed assistant message (append them to the history)
    tokens: List[int] = field(default_factory=list)
    tool_calls: List[dict] = field(default_factory=list)  # {"recipient", "arguments"} per call
    closed_by_budget: bool = False  # max_tokens steered the structured output to its end


class Generation:
    """What generate() returns: an iterator of Token. `.finished`: the constraint's end token
    was sampled (False without a constraint); `.closed_by_budget`: max_tokens steered the
    output to that end (a structured answer closed early to fit). Both can be read while
    iterating and are final once the iteration ends."""

    def __init__(self, tokens, constraint):
        self._tokens = tokens
        self.constraint = constraint  # None when nothing is enforced
        self.speculator = None  # with generate(draft=...): the Speculator (its stats())

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._tokens)

    def close(self):
        """Stops the generation early (frees its context)."""
        self._tokens.close()

    @property
    def finished(self):
        return self.constraint is not None and self.constraint.finished

    @property
    def closed_by_budget(self):
        return self.constraint is not None and self.constraint.closed_by_budget


def system_message(reasoning_effort="medium", model_identity=DEFAULT_IDENTITY):
    """The Harmony system message, every field spelled out."""
    return {"role": "system", "content": [{
        "type": "system_content", "model_identity": model_identity,
        "reasoning_effort": reasoning_effort, "knowledge_cutoff": "2024-06",
        "channel_config": {"valid_channels": ["analysis", "commentary", "final"],
                           "channel_required": True}}]}


def _conversation(messages, reasoning_effort, developer, tools=None, json_schema=None):
    """Adds the system message (and a developer message with the instructions, function
    tools and response format) unless the messages bring their own system message."""
    messages = list(messages)
    if not any(m.get("role") == "system" for m in messages):
        head = [system_message(reasoning_effort or "medium")]
        content = {"type": "developer_content"}
        if developer:
            content["instructions"] = developer
        if tools:
            content["tools"] = {"functions": {"tools": list(tools)}}
        if json_schema is not None:
            content["response_formats"] = [{"name": "response", "schema": json_schema}]
        if len(content) > 1:
            head.append({"role": "developer", "content": [content]})
        messages = head + messages
    return {"messages": messages}


def _harmony_grammar(tokenizer, constrain, tools, tool_choice, json_schema):
    """The Harmony structure to enforce (None when constrain is False)."""
    if not constrain:
        return None
    return Grammar.harmony(tokenizer, tools=tools or None, tool_choice=tool_choice,
                           response_format=json_schema)


def _structured(json_schema, tools, tool_choice):
    """Whether the output holds JSON a token limit would cut into an invalid document: an
    answer format, or tool calls' arguments."""
    return json_schema is not None or (bool(tools) and tool_choice != "none")


def _answer_constraint(model, grammar, prompt_length, *, structured, max_tokens, context_length,
                       max_reasoning_tokens, caller):
    """The constraint of one answer (None without a grammar). A structured answer gets the
    turn's token budget: the tokens _run may sample, which max_tokens and the context's room
    bound (the last token is sampled, never appended, hence the + 1). A budget below the
    shortest complete answer raises InvalidArgumentError naming that minimum."""
    if grammar is None:
        return None
    if not structured:
        return Constraint(grammar, max_reasoning_tokens)
    longest = model.max_context_length
    capacity = min(context_length, longest) if context_length > 0 else longest
    room = capacity - prompt_length + 1
    with Constraint(grammar, max_reasoning_tokens) as probe:
        shortest = probe.min_tokens
    if shortest < 0:  # an output that cannot end cannot be steered to its end
        return Constraint(grammar, max_reasoning_tokens)
    budget = min(max_tokens, room)
    if budget < shortest:
        limit = (f"max_tokens={max_tokens} is" if max_tokens <= room else
                 f"context_length={context_length} leaves room for {room} tokens after the "
                 f"{prompt_length}-token prompt,")
        raise InvalidArgumentError(f"{caller}: {limit} below the {shortest} tokens the shortest "
                                   f"complete answer takes", caller)
    return Constraint(grammar, max_reasoning_tokens, max_tokens=budget)


def _check_max_tokens(max_tokens):
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")


def _stop_tokens(tokenizer, use_harmony):
    names = ["<|return|>", "<|call|>"] + ([] if use_harmony else ["<|endoftext|>"])
    return {tokenizer.special_token_id(n) for n in names}


def _speculator(model, draft, draft_max):
    """The speculator for generate(draft=...): None (plain decoding), "ngram" (prompt lookup),
    a path of a model with the same tokenizer, or a Model."""
    if draft is None or draft == "none":
        return None
    if draft_max < 1:
        raise ValueError(f"draft_max must be at least 1, got {draft_max}")
    if draft == "ngram":
        return Speculator(max_draft=draft_max)
    from .model import Model
    draft_model = draft if isinstance(draft, Model) else Model(str(draft))
    return Speculator(draft_model=draft_model, max_draft=draft_max)


def _run(model, prompt_tokens, *, max_tokens, use_harmony, context_length, sampler_options,
         constraint=None, speculator=None):
    """Yields Token after Token; the parser (if any) is returned via StopIteration.value.
    With a constraint, only tokens it allows are sampled and generation ends when it is done.
    With a speculator, each step verifies a draft and yields the tokens it gives (the same)."""
    tokenizer = model.tokenizer
    stop = _stop_tokens(tokenizer, use_harmony)
    with Context(model, context_length=context_length) as ctx, \
            Sampler(**sampler_options) as sampler:
        if constraint is not None:
            sampler.set_constraint(constraint)
        parser = harmony.StreamParser(tokenizer) if use_harmony else None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        ctx.append(prompt_tokens)
        i = 0
        while i < max_tokens:
            if speculator is not None:
                step = speculator.step(ctx, sampler, max_tokens - i, sorted(stop))
            else:
                step = [ctx.sample(sampler)]
            for token in step:  # the step's tokens but the last are appended already
                if parser is not None:
                    state = parser.process(token)
                    yield Token(token, state.content_delta, state.channel, state.recipient)
                else:
                    yield Token(token, decoder.decode(tokenizer.token_bytes(token)))
                i += 1
            token = step[-1]
            done = constraint is not None and constraint.finished
            if token in stop or done or i >= max_tokens or ctx.num_tokens >= ctx.max_tokens:
                break
            ctx.append([token])
        return parser


def generate(model, prompt, *, max_tokens=256, harmony_format=True, reasoning_effort=None,
             developer=None, context_length=8192, json_schema=None, tools=None, tool_choice=None,
             max_reasoning_tokens=None, constrain=True, draft="ngram", draft_max=8,
             **sampler_options):
    """Yields Token objects as they are sampled.

    `prompt` is a str (Harmony-wrapped as one user message unless harmony_format=False, when
    it is sent as is) or a list of token ids (sent as is; the output is still parsed as
    Harmony unless harmony_format=False). Sampler options (temperature,
    top_p, top_k, min_p, seed, ...) are passed to Sampler. Stops at <|return|>, <|call|>
    (and <|endoftext|> without Harmony) or after max_tokens. Returns a Generation (an
    iterator of Token with .finished and .closed_by_budget).

    Constrained decoding (constrain=True, the default): with Harmony the output always has
    the Harmony structure; `json_schema` (a dict) constrains the final answer to it (and is
    shown to the model as the response format), `tools` (function tools: dicts with name,
    description, parameters) are offered and their arguments constrained, `tool_choice` is
    "auto", "none", "required" or a tool name, `max_reasoning_tokens` caps the analysis
    channel. Without Harmony, `json_schema` makes the whole output one JSON document.
    Structured output (a json_schema, or tools that may be called) is steered to end complete
    and valid within max_tokens (and the context); a max_tokens below the shortest complete
    answer raises InvalidArgumentError (a ValueError) naming that minimum.

    Speculative decoding (docs/speculative.md): `draft` "ngram" (the default) drafts by prompt
    lookup, a path (or a Model) with the same tokenizer drafts with that model, None decodes
    plainly; up to `draft_max` tokens are verified per forward step. The tokens are those of
    plain decoding (draft=None).
    """
    _check_max_tokens(max_tokens)
    tokenizer = model.tokenizer
    speculator = _speculator(model, draft, draft_max)
    if not harmony_format and (tools or tool_choice is not None or max_reasoning_tokens is not None):
        raise ValueError("tools, tool_choice and max_reasoning_tokens need harmony_format=True")
    if isinstance(prompt, str):
        if harmony_format:
            conversation = _conversation([{"role": "user", "content": prompt}], reasoning_effort,
                                         developer, tools, json_schema)
            ids = harmony.render(tokenizer, conversation)
        else:
            ids = tokenizer.encode(prompt, allow_special=True)
    else:
        ids = list(prompt)
    if harmony_format:
        grammar = _harmony_grammar(tokenizer, constrain, tools, tool_choice, json_schema)
    else:
        grammar = Grammar.json_schema(tokenizer, json_schema) if constrain and json_schema is not None else None
    constraint = _answer_constraint(model, grammar, len(ids),
                                    structured=_structured(json_schema, tools, tool_choice),
                                    max_tokens=max_tokens, context_length=context_length,
                                    max_reasoning_tokens=max_reasoning_tokens, caller="generate")
    generation = Generation(_run(model, ids, max_tokens=max_tokens, use_harmony=harmony_format,
                                 context_length=context_length, sampler_options=sampler_options,
                                 constraint=constraint, speculator=speculator), constraint)
    generation.speculator = speculator  # its stats(): drafted and accepted tokens
    return generation


def chat(model, messages, *, max_tokens=1024, reasoning_effort=None, developer=None,
         context_length=8192, on_token=None, json_schema=None, tools=None, tool_choice=None,
         max_reasoning_tokens=None, constrain=True, **sampler_options):
    """One assistant turn after `messages` (a list of message dicts; a system message is
    added when there is none). Returns a ChatResponse; `on_token(Token)` sees each token.
    Constrained decoding, and the token budget of structured output, as in generate()."""
    _check_max_tokens(max_tokens)
    ids = harmony.render(model.tokenizer, _conversation(messages, reasoning_effort, developer,
                                                        tools, json_schema))
    grammar = _harmony_grammar(model.tokenizer, constrain, tools, tool_choice, json_schema)
    constraint = _answer_constraint(model, grammar, len(ids),
                                    structured=_structured(json_schema, tools, tool_choice),
                                    max_tokens=max_tokens, context_length=context_length,
                                    max_reasoning_tokens=max_reasoning_tokens, caller="chat")
    run = _run(model, ids, max_tokens=max_tokens, use_harmony=True,
               context_length=context_length, sampler_options=sampler_options,
               constraint=constraint)
    tokens = []
    while True:
        try:
            token = next(run)
        except StopIteration as done:
            parser = done.value
            break
        tokens.append(token.id)
        if on_token is not None:
            on_token(token)
    with parser:
        parsed = parser.finish()
    text, reasoning, calls = _split_messages(parsed)
    closed = constraint is not None and constraint.closed_by_budget
    return ChatResponse(text, reasoning, parsed, tokens, calls, closed)


def _split_messages(parsed):
    """(answer, reasoning, tool calls) of parsed assistant messages. The answer is the final
    channel (or a message without channel, from a tolerant parse); a message without recipient
    on another channel — analysis, or a commentary preamble before tool calls — is reasoning,
    never the answer."""
    text, reasoning, calls = [], [], []
    for m in parsed:
        content = m.get("content")
        body = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in content or [] if p.get("type") == "text")
        if m.get("recipient"):
            calls.append({"recipient": m["recipient"], "arguments": body})
            continue
        (text if m.get("channel") in (None, "final") else reasoning).append(body)
    return "".join(text), "".join(reasoning), calls
