"""gptoss: Python bindings of libgptoss (ctypes over its C API).

    import gptoss
    with gptoss.Model("path/to/model") as model:
        ids = model.tokenizer.encode("Hello")
        ctx = gptoss.Context(model)
        ctx.append(ids); ctx.process()
        logits = ctx.logits()                      # memoryview of float32
        for token in model.generate("Hello", max_tokens=32, temperature=0):
            print(token.text, end="")
"""

from ._errors import (BufferTooSmallError, ContextOverflowError, GptossError, GptossIOError,
                      InsufficientMemoryError, InsufficientResourcesError, InternalError,
                      InvalidArgumentError, InvalidStateError, UnsupportedArgumentError,
                      UnsupportedSystemError)
from ._generate import ChatResponse, Generation, Token, chat, generate, system_message
from ._library import LibraryNotFoundError, library_path, lib as _lib
from ._library import package_version as _package_version
from .constrain import Constraint, Grammar, StopStrings
from .context import KV_PAGE_SIZE, Context, KVCache
from .harmony import StreamParser, render
from .model import Model, ModelInfo
from .sampler import Logprob, Sampler
from .speculative import Speculator, sample_draft
from .tokenizer import Tokenizer

__all__ = [
    "Model", "ModelInfo", "Tokenizer", "Context", "KVCache", "KV_PAGE_SIZE", "Sampler", "Logprob",
    "render", "StreamParser", "generate", "chat", "Token", "Generation", "ChatResponse",
    "system_message",
    "Grammar", "Constraint", "StopStrings", "Speculator", "sample_draft",
    "GptossError", "InvalidArgumentError", "UnsupportedArgumentError", "InvalidStateError",
    "GptossIOError", "InsufficientMemoryError", "InsufficientResourcesError",
    "UnsupportedSystemError", "ContextOverflowError", "BufferTooSmallError", "InternalError",
    "LibraryNotFoundError", "library_path", "library_version", "__version__",
]

__version__ = _package_version()


def library_version():
    """The loaded libgptoss's version ("MAJOR.MINOR.PATCH")."""
    return _lib.gptoss_get_version().decode()
