"""Finding libgptoss and declaring the C functions of include/gptoss.h for ctypes.

The library is looked up, in order: in $GPTOSS_LIBRARY_PATH (a directory, or the file
itself); inside the installed package (the wheel ships it, docs/python.md); in the build tree
(build/lib/) of the checkout when the package is used in place from it; and finally through
the system loader (LD_LIBRARY_PATH, ldconfig), which is how a package built with
native=system finds a system-installed libgptoss. It is loaded on first use, so
`import gptoss` works even before the library is built.
"""

import ctypes
import os
import re
import threading
from pathlib import Path

# The C ABI these bindings are written against: libgptoss.so.N of that ABI major.
_SONAME = "libgptoss.so.0"
_NAMES = (_SONAME, "libgptoss.so")
_HERE = Path(__file__).resolve().parent
# The checkout, when the package is used in place (bindings/python/gptoss).
_CHECKOUT = _HERE.parents[2] if (_HERE.parents[2] / "include" / "gptoss.h").is_file() else None

c_size_t = ctypes.c_size_t
c_uint32 = ctypes.c_uint32
c_int32 = ctypes.c_int32
c_uint64 = ctypes.c_uint64
c_float = ctypes.c_float
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
POINTER = ctypes.POINTER


class LibraryNotFoundError(ImportError):
    """libgptoss could not be found or loaded."""


class ModelOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("backend", c_char_p),
        ("device", c_int32),
        ("num_threads", c_uint32),
        ("num_layers", c_uint32),
        ("use_mmap", c_int32),
        ("tokenizer_path", c_char_p),
        ("precision", c_int32),
    ]


class ModelInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("vocab_size", c_size_t),
        ("num_layers", c_size_t),
        ("num_layers_total", c_size_t),
        ("hidden_size", c_size_t),
        ("num_heads", c_size_t),
        ("num_kv_heads", c_size_t),
        ("head_dim", c_size_t),
        ("num_experts", c_size_t),
        ("num_active_experts", c_size_t),
        ("intermediate_size", c_size_t),
        ("sliding_window", c_size_t),
        ("max_context_length", c_size_t),
        ("num_parameters", c_size_t),
        ("backend", c_char_p),
        ("format", c_char_p),
        ("decode_weight_bytes", c_size_t),
        ("batch_invariant", ctypes.c_int32),
        ("kernels", c_char_p),
    ]


class KvCacheOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("capacity_tokens", c_size_t),
        ("max_sequences", c_size_t),
        ("dtype", ctypes.c_int),
    ]


class ContextOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("context_length", c_size_t),
        ("kvcache", c_void_p),
        ("kv_dtype", ctypes.c_int),
        ("max_batch_tokens", c_size_t),
    ]


class SamplerOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("temperature", c_float),
        ("top_k", c_uint32),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repetition_penalty", c_float),
        ("presence_penalty", c_float),
        ("frequency_penalty", c_float),
        ("penalty_window", c_uint32),
        ("seed", c_uint64),
        ("top_logprobs", c_uint32),
    ]


class ConstraintOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("max_reasoning_tokens", ctypes.c_int64),
        ("max_tokens", ctypes.c_int64),
    ]


class DraftOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("stop_tokens", POINTER(c_uint32)),
        ("n_stop_tokens", c_size_t),
    ]


class SpeculatorOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("prompt_lookup", c_int32),
        ("jump_forward", c_int32),
        ("draft_model", c_void_p),
        ("max_draft", c_uint32),
        ("cost_bound", c_int32),
    ]


class SpeculatorStats(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("steps", c_uint64),
        ("drafted", c_uint64),
        ("accepted", c_uint64),
        ("forced", c_uint64),
        ("draft_length", c_uint32),
    ]


class TokenLogprob(ctypes.Structure):
    _fields_ = [("token", c_uint32), ("logprob", c_float)]


class HarmonyRenderOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("for_completion", c_int32),
        ("auto_drop_analysis", c_int32),
    ]


class HarmonyState(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("role", c_char_p),
        ("channel", c_char_p),
        ("recipient", c_char_p),
        ("content_type", c_char_p),
        ("content_delta", c_void_p),  # bytes, read with content_delta_size
        ("content_delta_size", c_size_t),
        ("num_messages", c_size_t),
    ]


_status = ctypes.c_int
_P = POINTER

# name: (argtypes); every function returns enum gptoss_status unless listed in _RESTYPES.
_PROTOTYPES = {
    "gptoss_status_to_string": [_status],
    "gptoss_get_last_error_message": [],
    "gptoss_get_version": [],
    # tokenizer
    "gptoss_tokenizer_create_from_file": [c_char_p, _P(c_void_p)],
    "gptoss_tokenizer_retain": [c_void_p],
    "gptoss_tokenizer_release": [c_void_p],
    "gptoss_tokenizer_encode": [c_void_p, c_char_p, c_size_t, c_uint32, _P(c_uint32), c_size_t,
                                _P(c_size_t)],
    "gptoss_tokenizer_decode": [c_void_p, c_uint32, _P(c_void_p), _P(c_size_t)],
    "gptoss_tokenizer_decode_tokens": [c_void_p, _P(c_uint32), c_size_t, c_char_p, c_size_t,
                                       _P(c_size_t)],
    "gptoss_tokenizer_get_special_token_id": [c_void_p, ctypes.c_int, _P(c_uint32)],
    "gptoss_tokenizer_lookup_special": [c_void_p, c_char_p, _P(c_uint32)],
    "gptoss_tokenizer_get_num_text_tokens": [c_void_p, _P(c_size_t)],
    "gptoss_tokenizer_get_num_special_tokens": [c_void_p, _P(c_size_t)],
    "gptoss_tokenizer_get_num_tokens": [c_void_p, _P(c_size_t)],
    # model
    "gptoss_model_options_init_sized": [_P(ModelOptions), c_size_t],
    "gptoss_model_create_with_options": [c_char_p, _P(ModelOptions), _P(c_void_p)],
    "gptoss_model_retain": [c_void_p],
    "gptoss_model_release": [c_void_p],
    "gptoss_model_get_tokenizer": [c_void_p, _P(c_void_p)],
    "gptoss_model_get_max_context_length": [c_void_p, _P(c_size_t)],
    "gptoss_model_get_info": [c_void_p, _P(ModelInfo)],
    "gptoss_model_get_kv_bytes_per_token": [c_void_p, ctypes.c_int, _P(c_size_t)],
    # kv cache
    "gptoss_kvcache_options_init_sized": [_P(KvCacheOptions), c_size_t],
    "gptoss_kvcache_create": [c_void_p, _P(KvCacheOptions), _P(c_void_p)],
    "gptoss_kvcache_retain": [c_void_p],
    "gptoss_kvcache_release": [c_void_p],
    "gptoss_kvcache_get_free_tokens": [c_void_p, _P(c_size_t)],
    # context
    "gptoss_context_options_init_sized": [_P(ContextOptions), c_size_t],
    "gptoss_context_create_with_options": [c_void_p, _P(ContextOptions), _P(c_void_p)],
    "gptoss_context_retain": [c_void_p],
    "gptoss_context_release": [c_void_p],
    "gptoss_context_append_tokens": [c_void_p, c_size_t, _P(c_uint32)],
    "gptoss_context_append_chars": [c_void_p, c_char_p, c_size_t, _P(c_size_t)],
    "gptoss_context_process": [c_void_p],
    "gptoss_contexts_process": [_P(c_void_p), c_size_t],
    "gptoss_context_get_logits": [c_void_p, _P(c_float), c_size_t, _P(c_size_t)],
    "gptoss_context_get_num_tokens": [c_void_p, _P(c_size_t)],
    "gptoss_context_get_num_processed_tokens": [c_void_p, _P(c_size_t)],
    "gptoss_context_get_tokens": [c_void_p, _P(c_uint32), c_size_t, _P(c_size_t)],
    "gptoss_context_get_max_tokens": [c_void_p, _P(c_size_t)],
    "gptoss_context_reset": [c_void_p],
    "gptoss_context_truncate": [c_void_p, c_size_t],
    # sampler
    "gptoss_sampler_options_init_sized": [_P(SamplerOptions), c_size_t],
    "gptoss_sampler_create": [_P(SamplerOptions), _P(c_void_p)],
    "gptoss_sampler_retain": [c_void_p],
    "gptoss_sampler_release": [c_void_p],
    "gptoss_sampler_reseed": [c_void_p, c_uint64],
    "gptoss_context_sample": [c_void_p, c_void_p, _P(c_uint32)],
    "gptoss_sampler_get_last_logprobs": [c_void_p, _P(TokenLogprob), _P(TokenLogprob), c_size_t,
                                         _P(c_size_t)],
    # harmony
    "gptoss_harmony_render_options_init_sized": [_P(HarmonyRenderOptions), c_size_t],
    "gptoss_harmony_render": [c_void_p, c_char_p, _P(HarmonyRenderOptions), _P(c_uint32), c_size_t,
                              _P(c_size_t)],
    "gptoss_harmony_parser_create": [c_void_p, c_char_p, c_int32, _P(c_void_p)],
    "gptoss_harmony_parser_release": [c_void_p],
    "gptoss_harmony_parser_process_token": [c_void_p, c_uint32],
    "gptoss_harmony_parser_get_current": [c_void_p, _P(HarmonyState)],
    "gptoss_harmony_parser_finish": [c_void_p, _P(c_char_p)],
    "gptoss_harmony_parser_get_messages": [c_void_p, _P(c_char_p)],
    # constrained decoding
    "gptoss_grammar_create_json_schema": [c_void_p, c_char_p, _P(c_void_p)],
    "gptoss_grammar_create_harmony": [c_void_p, c_char_p, _P(c_void_p)],
    "gptoss_grammar_retain": [c_void_p],
    "gptoss_grammar_release": [c_void_p],
    "gptoss_constraint_options_init_sized": [_P(ConstraintOptions), c_size_t],
    "gptoss_constraint_create": [c_void_p, _P(ConstraintOptions), _P(c_void_p)],
    "gptoss_constraint_retain": [c_void_p],
    "gptoss_constraint_release": [c_void_p],
    "gptoss_constraint_reset": [c_void_p],
    "gptoss_constraint_accept_token": [c_void_p, c_uint32],
    "gptoss_constraint_fill_mask": [c_void_p, _P(c_uint32), c_size_t, _P(c_size_t)],
    "gptoss_constraint_is_finished": [c_void_p, _P(c_int32)],
    "gptoss_constraint_min_tokens": [c_void_p, _P(ctypes.c_int64)],
    "gptoss_constraint_closed_by_budget": [c_void_p, _P(c_int32)],
    "gptoss_sampler_set_constraint": [c_void_p, c_void_p],
    # speculative decoding
    "gptoss_draft_options_init_sized": [_P(DraftOptions), c_size_t],
    "gptoss_context_sample_draft": [c_void_p, c_void_p, _P(c_uint32), c_size_t, _P(DraftOptions),
                                    _P(c_uint32), c_size_t, _P(c_size_t)],
    "gptoss_speculator_options_init_sized": [_P(SpeculatorOptions), c_size_t],
    "gptoss_speculator_create": [_P(SpeculatorOptions), _P(c_void_p)],
    "gptoss_speculator_retain": [c_void_p],
    "gptoss_speculator_release": [c_void_p],
    "gptoss_speculator_reset": [c_void_p],
    "gptoss_speculator_step": [c_void_p, c_void_p, c_void_p, _P(DraftOptions), _P(c_uint32),
                               c_size_t, _P(c_size_t)],
    "gptoss_speculator_get_stats": [c_void_p, _P(SpeculatorStats)],
    "gptoss_stop_strings_create": [_P(c_char_p), c_size_t, _P(c_void_p)],
    "gptoss_stop_strings_release": [c_void_p],
    "gptoss_stop_strings_push": [c_void_p, c_char_p, c_size_t, _P(c_void_p), _P(c_size_t),
                                 _P(c_int32)],
    "gptoss_stop_strings_flush": [c_void_p, _P(c_void_p), _P(c_size_t)],
    "gptoss_stop_strings_reset": [c_void_p],
}
_RESTYPES = {
    "gptoss_status_to_string": c_char_p,
    "gptoss_get_last_error_message": c_char_p,
    "gptoss_get_version": c_char_p,
}


def _bundled_library():
    """The library the wheel ships (None for a package built with native=system)."""
    try:
        from ._build_info import LIBRARY
    except ImportError:  # used in place from the checkout
        return None
    return _HERE / LIBRARY if LIBRARY else None


def _candidates():
    env = os.environ.get("GPTOSS_LIBRARY_PATH")
    if env:
        p = Path(env)
        if p.is_file():
            yield p
        else:
            for name in _NAMES:
                yield p / name
    bundled = _bundled_library()
    if bundled:
        yield bundled
    if _CHECKOUT:
        for build in ("build", "build-release", "build-debug"):
            for name in _NAMES:
                yield _CHECKOUT / build / "lib" / name


def package_version():
    """The package's version: the wheel's, or in place, the checkout's CMake project version
    (the one version of libgptoss, CMakeLists.txt)."""
    try:
        from ._build_info import VERSION
        return VERSION
    except ImportError:
        pass
    if _CHECKOUT:
        text = (_CHECKOUT / "CMakeLists.txt").read_text()
        match = re.search(r"project\(\s*libgptoss\s+VERSION\s+([0-9][0-9.]*)", text)
        if match:
            return match.group(1)
    return "unknown"


def _with_clear_argument_errors(fn, name):
    """ctypes reports a bad argument (a closed handle, a str for an int) as ArgumentError;
    re-raise it as the ValueError or TypeError it wraps."""
    def call(*args):
        try:
            return fn(*args)
        except ctypes.ArgumentError as e:
            kind = ValueError if "ValueError" in str(e) else TypeError
            raise kind(f"{name}: {e}") from None
    call.__name__ = name
    return call


class _Library:
    def __init__(self):
        self._lock = threading.Lock()
        self._cdll = None
        self.path = None

    def _load(self):
        tried = []
        for path in _candidates():
            if path.exists():
                try:
                    self._cdll = ctypes.CDLL(str(path))
                    self.path = str(path)
                    break
                except OSError as e:
                    tried.append(f"{path} ({e})")
            else:
                tried.append(str(path))
        if self._cdll is None:
            try:
                self._cdll = ctypes.CDLL(_SONAME)
                self.path = _SONAME
            except OSError:
                tried.append(f"{_SONAME} (system loader)")
        if self._cdll is None:
            raise LibraryNotFoundError(
                "libgptoss not found; install the package with its library (pip install "
                "./bindings/python), install libgptoss (cmake --install), or set "
                "GPTOSS_LIBRARY_PATH to the directory holding libgptoss.so. Looked in: "
                + ", ".join(tried[:8]) + (" ..." if len(tried) > 8 else ""))
        for name, argtypes in _PROTOTYPES.items():
            fn = getattr(self._cdll, name, None)
            if fn is None:
                continue  # an older library: calling it raises AttributeError below
            fn.argtypes = argtypes
            fn.restype = _RESTYPES.get(name, _status)

    def __getattr__(self, name):
        if name.startswith("gptoss_"):
            with self._lock:
                if self._cdll is None:
                    self._load()
            fn = getattr(self._cdll, name, None)
            if fn is None or name not in _PROTOTYPES:
                raise AttributeError(f"{self.path} has no function {name}")
            call = _with_clear_argument_errors(fn, name)
            setattr(self, name, call)  # later lookups skip __getattr__
            return call
        raise AttributeError(name)


lib = _Library()


def library_path():
    """Where libgptoss was loaded from (loads it if needed)."""
    lib.gptoss_get_version  # noqa: B018 (forces loading)
    return lib.path

