"""The o200k_harmony tokenizer: from a model (model.tokenizer) or loaded alone."""

import ctypes
import os

from ._errors import check
from ._handle import Handle
from ._library import lib

_BUFFER_TOO_SMALL = 9
ENCODE_ALLOW_SPECIAL = 1

# enum gptoss_special_token, by the token's string.
SPECIAL_TOKENS = {
    "<|return|>": 1, "<|start|>": 2, "<|message|>": 3, "<|end|>": 4, "<|constrain|>": 6,
    "<|channel|>": 7, "<|call|>": 8, "<|startoftext|>": 11, "<|endoftext|>": 12,
    "<|endofprompt|>": 13,
}


def _ids_array(tokens):
    tokens = list(tokens)
    return (ctypes.c_uint32 * len(tokens))(*tokens), len(tokens)


class Tokenizer(Handle):
    """Tokenizer(path) loads a tokenizer.json; model.tokenizer gives the model's own."""

    _release_name = "gptoss_tokenizer_release"

    def __init__(self, path=None, *, _handle=None):
        if _handle is None:
            if path is None:
                raise TypeError("Tokenizer() needs the path of a tokenizer.json")
            out = ctypes.c_void_p()
            check(lib.gptoss_tokenizer_create_from_file(os.fsencode(path), ctypes.byref(out)),
                  "gptoss_tokenizer_create_from_file")
            _handle = out
        super().__init__(_handle)

    def encode(self, text, allow_special=False):
        """Token ids of `text` (str or bytes). With allow_special, "<|start|>" and the like
        become their special ids; otherwise they are encoded as ordinary text."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        flags = ENCODE_ALLOW_SPECIAL if allow_special else 0
        n = ctypes.c_size_t()
        capacity = len(data) + 1
        while True:
            out = (ctypes.c_uint32 * capacity)()
            status = lib.gptoss_tokenizer_encode(self, data, len(data), flags, out, capacity,
                                                 ctypes.byref(n))
            if status == _BUFFER_TOO_SMALL and n.value > capacity:
                capacity = n.value
                continue
            check(status, "gptoss_tokenizer_encode")
            return list(out[:n.value])

    def decode_bytes(self, tokens):
        """The bytes of a token sequence (special tokens as their strings)."""
        ids, count = _ids_array(tokens)
        n = ctypes.c_size_t()
        capacity = 16 * count + 16
        while True:
            out = ctypes.create_string_buffer(capacity)
            status = lib.gptoss_tokenizer_decode_tokens(self, ids, count, out, capacity,
                                                        ctypes.byref(n))
            if status == _BUFFER_TOO_SMALL and n.value > capacity:
                capacity = n.value
                continue
            check(status, "gptoss_tokenizer_decode_tokens")
            return out.raw[:n.value]

    def decode(self, tokens, errors="replace"):
        """Text of a token sequence; bytes that are not valid UTF-8 follow `errors`."""
        return self.decode_bytes(tokens).decode("utf-8", errors)

    def token_bytes(self, token):
        """Bytes of one token (may end inside a UTF-8 character)."""
        ptr = ctypes.c_void_p()
        size = ctypes.c_size_t()
        check(lib.gptoss_tokenizer_decode(self, token, ctypes.byref(ptr), ctypes.byref(size)),
              "gptoss_tokenizer_decode")
        return ctypes.string_at(ptr, size.value) if size.value else b""

    def special_token_id(self, name):
        """Id of a special token by its string ("<|return|>", "<|reserved_200100|>"...)."""
        out = ctypes.c_uint32()
        kind = SPECIAL_TOKENS.get(name)
        if kind is not None:
            check(lib.gptoss_tokenizer_get_special_token_id(self, kind, ctypes.byref(out)),
                  "gptoss_tokenizer_get_special_token_id")
        else:
            check(lib.gptoss_tokenizer_lookup_special(self, name.encode("utf-8"), ctypes.byref(out)),
                  "gptoss_tokenizer_lookup_special")
        return out.value

    def _count(self, function):
        n = ctypes.c_size_t()
        check(getattr(lib, function)(self, ctypes.byref(n)), function)
        return n.value

    @property
    def num_text_tokens(self):
        return self._count("gptoss_tokenizer_get_num_text_tokens")

    @property
    def num_special_tokens(self):
        return self._count("gptoss_tokenizer_get_num_special_tokens")

    @property
    def vocab_size(self):
        return self._count("gptoss_tokenizer_get_num_tokens")

    def __len__(self):
        return self.vocab_size
