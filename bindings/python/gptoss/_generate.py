"""High-level generation: model.generate(prompt) streams tokens, model.chat(messages) runs one
assistant turn. Both use only the low-level objects of this package."""

import codecs
from dataclasses import dataclass, field
from typing import List, Optional

from . import harmony
from .context import Context
from .sampler import Sampler

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
    reasoning: str                # the analysis channel
    messages: List[dict]          # every parsed assistant message (append them to the history)
    tokens: List[int] = field(default_factory=list)


def system_message(reasoning_effort="medium", model_identity=DEFAULT_IDENTITY):
    """The Harmony system message, every field spelled out."""
    return {"role": "system", "content": [{
        "type": "system_content", "model_identity": model_identity,
        "reasoning_effort": reasoning_effort, "knowledge_cutoff": "2024-06",
        "channel_config": {"valid_channels": ["analysis", "commentary", "final"],
                           "channel_required": True}}]}


def _conversation(messages, reasoning_effort, developer):
    messages = list(messages)
    if not any(m.get("role") == "system" for m in messages):
        head = [system_message(reasoning_effort or "medium")]
        if developer:
            head.append({"role": "developer",
                         "content": [{"type": "developer_content", "instructions": developer}]})
        messages = head + messages
    return {"messages": messages}


def _stop_tokens(tokenizer, use_harmony):
    names = ["<|return|>", "<|call|>"] + ([] if use_harmony else ["<|endoftext|>"])
    return {tokenizer.special_token_id(n) for n in names}


def _run(model, prompt_tokens, *, max_tokens, use_harmony, context_length, sampler_options):
    """Yields Token after Token; the parser (if any) is returned via StopIteration.value."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    tokenizer = model.tokenizer
    stop = _stop_tokens(tokenizer, use_harmony)
    with Context(model, context_length=context_length) as ctx, \
            Sampler(**sampler_options) as sampler:
        parser = harmony.StreamParser(tokenizer) if use_harmony else None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        ctx.append(prompt_tokens)
        for i in range(max_tokens):
            token = ctx.sample(sampler)
            if parser is not None:
                state = parser.process(token)
                yield Token(token, state.content_delta, state.channel, state.recipient)
            else:
                yield Token(token, decoder.decode(tokenizer.token_bytes(token)))
            if token in stop or i + 1 == max_tokens or ctx.num_tokens >= ctx.max_tokens:
                break
            ctx.append([token])
        return parser


def generate(model, prompt, *, max_tokens=256, harmony_format=True, reasoning_effort=None,
             developer=None, context_length=8192, **sampler_options):
    """Yields Token objects as they are sampled.

    `prompt` is a str (Harmony-wrapped as one user message unless harmony_format=False, when
    it is sent as is) or a list of token ids (sent as is; the output is still parsed as
    Harmony unless harmony_format=False). Sampler options (temperature,
    top_p, top_k, min_p, seed, ...) are passed to Sampler. Stops at <|return|>, <|call|>
    (and <|endoftext|> without Harmony) or after max_tokens.
    """
    tokenizer = model.tokenizer
    if isinstance(prompt, str):
        if harmony_format:
            conversation = _conversation([{"role": "user", "content": prompt}], reasoning_effort,
                                         developer)
            ids = harmony.render(tokenizer, conversation)
        else:
            ids = tokenizer.encode(prompt, allow_special=True)
    else:
        ids = list(prompt)
    return _run(model, ids, max_tokens=max_tokens, use_harmony=harmony_format,
                context_length=context_length, sampler_options=sampler_options)


def chat(model, messages, *, max_tokens=1024, reasoning_effort=None, developer=None,
         context_length=8192, on_token=None, **sampler_options):
    """One assistant turn after `messages` (a list of message dicts; a system message is
    added when there is none). Returns a ChatResponse; `on_token(Token)` sees each token."""
    ids = harmony.render(model.tokenizer, _conversation(messages, reasoning_effort, developer))
    run = _run(model, ids, max_tokens=max_tokens, use_harmony=True,
               context_length=context_length, sampler_options=sampler_options)
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
    text, reasoning = [], []
    for m in parsed:
        if m.get("recipient"):
            continue
        content = m.get("content")
        body = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in content or [] if p.get("type") == "text")
        (reasoning if m.get("channel") == "analysis" else text).append(body)
    return ChatResponse("".join(text), "".join(reasoning), parsed, tokens)
