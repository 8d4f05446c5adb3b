"""Context (one sequence and its KV state) and KVCache (a page pool shared by contexts)."""

import ctypes

from ._errors import check
from ._handle import Handle
from ._library import ContextOptions, KvCacheOptions, lib
from .model import _kv_dtype


KV_PAGE_SIZE = 16  # GPTOSS_KV_PAGE_SIZE: contexts take KV memory in pages of this many tokens


class KVCache(Handle):
    """A pool of `capacity_tokens` tokens of KV memory that up to `max_sequences` contexts
    of `model` draw pages from. A context holds whole pages: size the pool with
    `KVCache.capacity_for(lengths)`, not the plain sum of the contexts' lengths."""

    _release_name = "gptoss_kvcache_release"

    @staticmethod
    def capacity_for(lengths):
        """The capacity_tokens that holds contexts of these lengths at once: each rounded up to
        whole pages of KV_PAGE_SIZE tokens."""
        return sum(-(-int(n) // KV_PAGE_SIZE) * KV_PAGE_SIZE for n in lengths)

    def __init__(self, model, capacity_tokens, max_sequences=8, dtype="f32"):
        opts = KvCacheOptions()
        check(lib.gptoss_kvcache_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)), "gptoss_kvcache_options_init_sized")
        opts.capacity_tokens = capacity_tokens
        opts.max_sequences = max_sequences
        opts.dtype = _kv_dtype(dtype)
        out = ctypes.c_void_p()
        check(lib.gptoss_kvcache_create(model, ctypes.byref(opts), ctypes.byref(out)),
              "gptoss_kvcache_create")
        super().__init__(out)

    @property
    def free_tokens(self):
        n = ctypes.c_size_t()
        check(lib.gptoss_kvcache_get_free_tokens(self, ctypes.byref(n)),
              "gptoss_kvcache_get_free_tokens")
        return n.value


class Context(Handle):
    """Context(model, context_length=0, kvcache=None, kv_dtype="f32", max_batch_tokens=512).

    Low-level use: ctx.append(tokens); ctx.process(); ctx.logits() -> memoryview of float32.
    """

    _release_name = "gptoss_context_release"

    def __init__(self, model, context_length=0, kvcache=None, kv_dtype="f32",
                 max_batch_tokens=None):
        opts = ContextOptions()
        check(lib.gptoss_context_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)), "gptoss_context_options_init_sized")
        opts.context_length = context_length
        opts.kvcache = kvcache._as_parameter_ if kvcache is not None else None
        opts.kv_dtype = _kv_dtype(kv_dtype)
        if max_batch_tokens is not None:
            opts.max_batch_tokens = max_batch_tokens
        out = ctypes.c_void_p()
        check(lib.gptoss_context_create_with_options(model, ctypes.byref(opts), ctypes.byref(out)),
              "gptoss_context_create_with_options")
        super().__init__(out)
        self.model = model       # keeps the Python objects alive as long as the context
        self.kvcache = kvcache
        self._vocab = model.info.vocab_size

    def append(self, tokens):
        """Appends token ids (an iterable of ints), or text (a str, special tokens allowed).
        Returns the number of tokens appended."""
        if isinstance(tokens, (str, bytes)):
            data = tokens.encode("utf-8") if isinstance(tokens, str) else tokens
            n = ctypes.c_size_t()
            check(lib.gptoss_context_append_chars(self, data, len(data), ctypes.byref(n)),
                  "gptoss_context_append_chars")
            return n.value
        tokens = list(tokens)
        for t in tokens:
            if not isinstance(t, int) or t < 0 or t > 0xFFFFFFFF:
                raise ValueError(f"token ids must be integers in [0, 2^32), got {t!r}")
        array = (ctypes.c_uint32 * len(tokens))(*tokens)
        check(lib.gptoss_context_append_tokens(self, len(tokens), array),
              "gptoss_context_append_tokens")
        return len(tokens)

    def process(self):
        """Runs the forward pass over every appended, unprocessed token."""
        check(lib.gptoss_context_process(self), "gptoss_context_process")

    @staticmethod
    def process_all(contexts):
        """Processes several contexts of one model together, in batched forward steps."""
        contexts = list(contexts)
        handles = (ctypes.c_void_p * len(contexts))(*[c._as_parameter_.value for c in contexts])
        check(lib.gptoss_contexts_process(handles, len(contexts)), "gptoss_contexts_process")

    def logits(self):
        """float32 logits of the last processed token (vocab_size values) as a memoryview."""
        out = (ctypes.c_float * self._vocab)()
        n = ctypes.c_size_t()
        check(lib.gptoss_context_get_logits(self, out, self._vocab, ctypes.byref(n)),
              "gptoss_context_get_logits")
        return memoryview(out).cast("B").cast("f")[:n.value]

    def sample(self, sampler):
        """Samples the next token (processing pending tokens first). Does not append it."""
        token = ctypes.c_uint32()
        check(lib.gptoss_context_sample(self, sampler, ctypes.byref(token)),
              "gptoss_context_sample")
        return token.value

    def _size(self, function):
        n = ctypes.c_size_t()
        check(getattr(lib, function)(self, ctypes.byref(n)), function)
        return n.value

    @property
    def num_tokens(self):
        return self._size("gptoss_context_get_num_tokens")

    @property
    def num_processed_tokens(self):
        return self._size("gptoss_context_get_num_processed_tokens")

    @property
    def max_tokens(self):
        return self._size("gptoss_context_get_max_tokens")

    @property
    def tokens(self):
        n = self.num_tokens
        out = (ctypes.c_uint32 * max(n, 1))()
        got = ctypes.c_size_t()
        check(lib.gptoss_context_get_tokens(self, out, n, ctypes.byref(got)),
              "gptoss_context_get_tokens")
        return list(out[:got.value])

    def __len__(self):
        return self.num_tokens

    def reset(self):
        check(lib.gptoss_context_reset(self), "gptoss_context_reset")

    def truncate(self, n_tokens):
        """Keeps the first n_tokens (their KV stays valid)."""
        if n_tokens < 0:
            raise ValueError("n_tokens must not be negative")
        check(lib.gptoss_context_truncate(self, n_tokens), "gptoss_context_truncate")
