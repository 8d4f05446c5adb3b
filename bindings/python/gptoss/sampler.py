"""Sampler: temperature, top-k, top-p, min-p, penalties and a seeded RNG."""

import ctypes
from collections import namedtuple

from ._errors import check
from ._handle import Handle
from ._library import SamplerOptions, TokenLogprob, lib

Logprob = namedtuple("Logprob", "token logprob")

_FIELDS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty",
           "frequency_penalty", "penalty_window", "seed", "top_logprobs")


class Sampler(Handle):
    """Sampler(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0,
    presence_penalty=0.0, frequency_penalty=0.0, penalty_window=64, seed=0, top_logprobs=0).
    temperature=0 is greedy. Out-of-range values raise InvalidArgumentError (a ValueError)."""

    _release_name = "gptoss_sampler_release"

    def __init__(self, **options):
        opts = SamplerOptions()
        check(lib.gptoss_sampler_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)), "gptoss_sampler_options_init_sized")
        for key, value in options.items():
            if key not in _FIELDS:
                raise TypeError(f"Sampler() got an unknown option {key!r}")
            if value is not None:
                if key in ("top_k", "penalty_window", "seed", "top_logprobs") and value < 0:
                    raise ValueError(f"{key} must not be negative, got {value}")
                setattr(opts, key, value)
        out = ctypes.c_void_p()
        check(lib.gptoss_sampler_create(ctypes.byref(opts), ctypes.byref(out)),
              "gptoss_sampler_create")
        super().__init__(out)
        self.top_logprobs = opts.top_logprobs
        self.constraint = None

    def set_constraint(self, constraint):
        """Samples only tokens `constraint` allows, advancing it by each sampled token (None
        detaches). The sampler keeps the constraint alive."""
        check(lib.gptoss_sampler_set_constraint(self, constraint), "gptoss_sampler_set_constraint")
        self.constraint = constraint

    def reseed(self, seed):
        check(lib.gptoss_sampler_reseed(self, seed), "gptoss_sampler_reseed")

    def last_logprobs(self):
        """(chosen, alternatives) of the last sample: Logprob(token, logprob) and a list of
        the top `top_logprobs` alternatives, most likely first."""
        chosen = TokenLogprob()
        capacity = max(self.top_logprobs, 1)
        alternatives = (TokenLogprob * capacity)()
        n = ctypes.c_size_t()
        check(lib.gptoss_sampler_get_last_logprobs(self, ctypes.byref(chosen), alternatives,
                                                   capacity, ctypes.byref(n)),
              "gptoss_sampler_get_last_logprobs")
        return (Logprob(chosen.token, chosen.logprob),
                [Logprob(a.token, a.logprob) for a in alternatives[:min(n.value, capacity)]])
