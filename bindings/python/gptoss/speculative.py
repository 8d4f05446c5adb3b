"""Speculative decoding: several tokens per forward step, the same tokens as plain decoding
(docs/speculative.md)."""

import ctypes
from collections import namedtuple

from ._errors import check
from ._handle import Handle
from ._library import DraftOptions, SpeculatorOptions, SpeculatorStats, lib

SpeculatorCounts = namedtuple("SpeculatorCounts", "steps drafted accepted forced draft_length")


def _draft_options(stop):
    stop = list(stop or ())
    opts = DraftOptions()
    check(lib.gptoss_draft_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)),
          "gptoss_draft_options_init_sized")
    array = (ctypes.c_uint32 * max(len(stop), 1))(*stop)
    opts.stop_tokens = ctypes.cast(array, ctypes.POINTER(ctypes.c_uint32)) if stop else None
    opts.n_stop_tokens = len(stop)
    return opts, array  # the array must outlive the call


def sample_draft(context, sampler, draft, stop=()):
    """Verifies the drafted token ids in one forward step (gptoss_context_sample_draft):
    returns the tokens plain decoding gives from here, the kept drafted ones appended to the
    context, the last one not."""
    draft = list(draft)
    opts, keep = _draft_options(stop)
    array = (ctypes.c_uint32 * max(len(draft), 1))(*draft)
    out = (ctypes.c_uint32 * (len(draft) + 1))()
    n = ctypes.c_size_t()
    check(lib.gptoss_context_sample_draft(context, sampler, array if draft else None, len(draft),
                                          ctypes.byref(opts), out, len(draft) + 1, ctypes.byref(n)),
          "gptoss_context_sample_draft")
    del keep
    return list(out[:n.value])


class Speculator(Handle):
    """Speculator(prompt_lookup=True, jump_forward=True, draft_model=None, max_draft=8,
    cost_bound=True): one sequence's speculative loop. draft_model: a Model with the same
    tokenizer that drafts (instead of prompt lookup); the speculator keeps it alive. cost_bound:
    drafts that are not kept cost at most 3 % of plain decoding's time (False: the draft length
    follows the acceptance alone)."""

    _release_name = "gptoss_speculator_release"

    def __init__(self, prompt_lookup=True, jump_forward=True, draft_model=None, max_draft=8,
                 cost_bound=True):
        if max_draft < 0:
            raise ValueError(f"max_draft must not be negative, got {max_draft}")
        opts = SpeculatorOptions()
        check(lib.gptoss_speculator_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)),
              "gptoss_speculator_options_init_sized")
        opts.prompt_lookup = 1 if prompt_lookup else 0
        opts.jump_forward = 1 if jump_forward else 0
        opts.draft_model = draft_model._as_parameter_ if draft_model is not None else None
        opts.max_draft = max_draft
        opts.cost_bound = 1 if cost_bound else 0
        out = ctypes.c_void_p()
        check(lib.gptoss_speculator_create(ctypes.byref(opts), ctypes.byref(out)),
              "gptoss_speculator_create")
        super().__init__(out)
        self.draft_model = draft_model

    def step(self, context, sampler, max_tokens, stop=()):
        """One step: 1..max_tokens token ids plain decoding gives, the last not appended (the
        caller appends it unless it ends the generation)."""
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        opts, keep = _draft_options(stop)
        out = (ctypes.c_uint32 * max_tokens)()
        n = ctypes.c_size_t()
        check(lib.gptoss_speculator_step(self, context, sampler, ctypes.byref(opts), out,
                                         max_tokens, ctypes.byref(n)),
              "gptoss_speculator_step")
        del keep
        return list(out[:n.value])

    def stats(self):
        """SpeculatorCounts(steps, drafted, accepted, forced, draft_length)."""
        s = SpeculatorStats()
        s.struct_size = ctypes.sizeof(s)
        check(lib.gptoss_speculator_get_stats(self, ctypes.byref(s)), "gptoss_speculator_get_stats")
        return SpeculatorCounts(s.steps, s.drafted, s.accepted, s.forced, s.draft_length)

    def reset(self):
        check(lib.gptoss_speculator_reset(self), "gptoss_speculator_reset")
