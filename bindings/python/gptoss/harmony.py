"""Harmony, the gpt-oss chat format: render conversations to tokens, parse tokens back.

Conversations are lists of message dicts (or {"messages": [...]}), as described in
include/gptoss.h and docs/harmony.md:
    {"role": "user", "content": "What is 2 + 2?"}
"""

import ctypes
import json
from collections import namedtuple

from ._errors import check
from ._handle import Handle
from ._library import HarmonyRenderOptions, HarmonyState, lib

_BUFFER_TOO_SMALL = 9

State = namedtuple("State", "role channel recipient content_type content_delta num_messages")


def _to_json(conversation):
    if isinstance(conversation, (str, bytes)):
        return conversation.encode("utf-8") if isinstance(conversation, str) else conversation
    return json.dumps(conversation, ensure_ascii=False).encode("utf-8")


def render(tokenizer, conversation, for_completion=True, auto_drop_analysis=True):
    """Token ids of a conversation. With for_completion it ends with <|start|>assistant;
    with auto_drop_analysis, analysis messages before the last final answer are dropped.
    Malformed conversations raise InvalidArgumentError naming the problem."""
    opts = HarmonyRenderOptions()
    check(lib.gptoss_harmony_render_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)),
          "gptoss_harmony_render_options_init_sized")
    opts.for_completion = 1 if for_completion else 0
    opts.auto_drop_analysis = 1 if auto_drop_analysis else 0
    data = _to_json(conversation)
    capacity = len(data) + 64
    n = ctypes.c_size_t()
    while True:
        out = (ctypes.c_uint32 * capacity)()
        status = lib.gptoss_harmony_render(tokenizer, data, ctypes.byref(opts), out, capacity,
                                           ctypes.byref(n))
        if status == _BUFFER_TOO_SMALL and n.value > capacity:
            capacity = n.value
            continue
        check(status, "gptoss_harmony_render")
        return list(out[:n.value])


class StreamParser(Handle):
    """Parses model output token by token.

        parser = StreamParser(tokenizer)          # generation began after <|start|>assistant
        for t in tokens: state = parser.process(t); print(state.content_delta, end="")
        messages = parser.finish()                # list of message dicts

    first_role=None when the stream begins with <|start|>. strict=True makes malformed
    headers raise InvalidArgumentError; the default is tolerant of any model output.
    """

    _release_name = "gptoss_harmony_parser_release"

    def __init__(self, tokenizer, first_role="assistant", strict=False):
        out = ctypes.c_void_p()
        role = first_role.encode("utf-8") if first_role is not None else None
        check(lib.gptoss_harmony_parser_create(tokenizer, role, 1 if strict else 0,
                                               ctypes.byref(out)),
              "gptoss_harmony_parser_create")
        super().__init__(out)
        self.tokenizer = tokenizer
        self._pending = b""  # a delta may end inside a UTF-8 character

    def process(self, token):
        """Feeds one token; returns the State after it (content_delta is text, "" if none)."""
        check(lib.gptoss_harmony_parser_process_token(self, token),
              "gptoss_harmony_parser_process_token")
        return self.state

    @property
    def state(self):
        raw = HarmonyState()
        raw.struct_size = ctypes.sizeof(raw)
        check(lib.gptoss_harmony_parser_get_current(self, ctypes.byref(raw)),
              "gptoss_harmony_parser_get_current")
        delta = self._pending + (ctypes.string_at(raw.content_delta, raw.content_delta_size)
                                 if raw.content_delta_size else b"")
        text, self._pending = _split_utf8(delta)

        def s(value):
            return value.decode("utf-8", "replace") if value is not None else None

        return State(s(raw.role), s(raw.channel), s(raw.recipient), s(raw.content_type),
                     text, raw.num_messages)

    @property
    def messages(self):
        """Messages completed so far (list of dicts), without ending the stream."""
        out = ctypes.c_char_p()
        check(lib.gptoss_harmony_parser_get_messages(self, ctypes.byref(out)),
              "gptoss_harmony_parser_get_messages")
        return json.loads(out.value or b"[]")

    def finish(self):
        """Ends the stream (closing an open message); returns every parsed message."""
        out = ctypes.c_char_p()
        check(lib.gptoss_harmony_parser_finish(self, ctypes.byref(out)),
              "gptoss_harmony_parser_finish")
        return json.loads(out.value or b"[]")


def _split_utf8(data):
    """Decodes the complete UTF-8 prefix of `data`; returns (text, incomplete tail bytes)."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8"), data[cut:]
        except UnicodeDecodeError as e:
            if e.start < cut - 3 or e.reason != "unexpected end of data":
                break
    return data.decode("utf-8", "replace"), b""
