"""Model: weights, config and tokenizer, loaded once and shared by any number of contexts."""

import ctypes
import os
from dataclasses import dataclass

from ._errors import check
from ._handle import Handle
from ._library import ModelInfo as _ModelInfo, ModelOptions, lib
from .tokenizer import Tokenizer

KV_DTYPES = {"f32": 0, "bf16": 1}
# enum gptoss_precision: "fast" may quantize activations (int8 on AVX2/AVX-512 CPUs);
# "exact" keeps them fp32.
PRECISIONS = {"fast": 0, "exact": 1}

# Model(path, **options): Python name -> field of struct gptoss_model_options.
_OPTION_FIELDS = {
    "backend": "backend",
    "device": "device",
    "num_threads": "num_threads",
    "threads": "num_threads",
    "num_layers": "num_layers",
    "layers": "num_layers",
    "use_mmap": "use_mmap",
    "tokenizer_path": "tokenizer_path",
    "tokenizer": "tokenizer_path",
    "precision": "precision",
}


@dataclass(frozen=True)
class ModelInfo:
    vocab_size: int
    num_layers: int
    num_layers_total: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    num_experts: int
    num_active_experts: int
    intermediate_size: int
    sliding_window: int
    max_context_length: int
    num_parameters: int
    backend: str
    format: str
    decode_weight_bytes: int  # weights one decode token reads, as stored (see gptoss.h)
    batch_invariant: bool     # logits independent of batching, chunking and reuse (gptoss.h)
    kernels: str              # the backend's kernel variant ("avx512", "scalar"; "" unnamed)


class Model(Handle):
    """Model(path, backend="auto", num_threads=0, num_layers=0, use_mmap=True,
    tokenizer_path=None, device=0, precision="fast") loads a Hugging Face directory or a
    .gguf file. precision="exact" keeps activations in fp32 (see gptoss.h)."""

    _release_name = "gptoss_model_release"

    def __init__(self, path, **options):
        opts = ModelOptions()
        check(lib.gptoss_model_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)), "gptoss_model_options_init_sized")
        keep = []  # bytes objects must outlive the call
        for key, value in options.items():
            field = _OPTION_FIELDS.get(key)
            if field is None:
                raise TypeError(f"Model() got an unknown option {key!r}; known: "
                                + ", ".join(sorted(set(_OPTION_FIELDS))))
            if value is None:
                continue
            if field in ("backend", "tokenizer_path"):
                value = os.fsencode(value) if field == "tokenizer_path" else value.encode("utf-8")
                keep.append(value)
            elif field == "use_mmap":
                value = 1 if value else 0
            elif field == "precision":
                if value not in PRECISIONS:
                    raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, not {value!r}")
                value = PRECISIONS[value]
            setattr(opts, field, value)
        out = ctypes.c_void_p()
        check(lib.gptoss_model_create_with_options(os.fsencode(path), ctypes.byref(opts),
                                                   ctypes.byref(out)),
              "gptoss_model_create_with_options")
        super().__init__(out)
        self._tokenizer = None

    @property
    def tokenizer(self):
        """The model's tokenizer (shared; lives as long as it is referenced)."""
        if self._tokenizer is None:
            out = ctypes.c_void_p()
            check(lib.gptoss_model_get_tokenizer(self, ctypes.byref(out)),
                  "gptoss_model_get_tokenizer")
            self._tokenizer = Tokenizer(_handle=out)
        return self._tokenizer

    @property
    def info(self):
        raw = _ModelInfo()
        raw.struct_size = ctypes.sizeof(raw)
        check(lib.gptoss_model_get_info(self, ctypes.byref(raw)), "gptoss_model_get_info")
        values = {name: getattr(raw, name) for name, _ in _ModelInfo._fields_[1:]}
        values["backend"] = (values["backend"] or b"").decode()
        values["format"] = (values["format"] or b"").decode()
        values["kernels"] = (values["kernels"] or b"").decode()
        values["batch_invariant"] = bool(values["batch_invariant"])
        return ModelInfo(**values)

    @property
    def max_context_length(self):
        n = ctypes.c_size_t()
        check(lib.gptoss_model_get_max_context_length(self, ctypes.byref(n)),
              "gptoss_model_get_max_context_length")
        return n.value

    def kv_bytes_per_token(self, dtype="f32"):
        n = ctypes.c_size_t()
        check(lib.gptoss_model_get_kv_bytes_per_token(self, _kv_dtype(dtype), ctypes.byref(n)),
              "gptoss_model_get_kv_bytes_per_token")
        return n.value

    def close(self):
        if getattr(self, "_tokenizer", None) is not None:
            self._tokenizer.close()
            self._tokenizer = None
        super().close()

    # High-level generation lives in _generate.py; bound here so users write model.generate().
    def generate(self, prompt, **kwargs):
        """Yields the generated tokens of one prompt as they are sampled; see
        gptoss.generate for the arguments."""
        from ._generate import generate
        return generate(self, prompt, **kwargs)

    def chat(self, messages, **kwargs):
        """Runs one assistant turn after `messages`; see gptoss.chat."""
        from ._generate import chat
        return chat(self, messages, **kwargs)


def _kv_dtype(dtype):
    if dtype not in KV_DTYPES:
        raise ValueError(f"kv dtype must be one of {sorted(KV_DTYPES)}, got {dtype!r}")
    return KV_DTYPES[dtype]
