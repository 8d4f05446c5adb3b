#pragma once
// Speculative verification: a run of proposed (drafted) tokens processed in one forward step,
// sampled position by position exactly as plain decoding would, the longest agreeing prefix
// kept and the rest rolled back (docs/speculative.md).
#include <cstdint>
#include <span>
#include <vector>

#include "libgptoss/constrain/constraint.hpp"
#include "libgptoss/runtime/context.hpp"
#include "libgptoss/sampling/sampler.hpp"

namespace gptoss::speculative {

struct VerifyResult {
  // The tokens plain decoding would have produced, in order: the accepted drafted tokens
  // (appended to the context) and one more that ends the run (sampled, not appended).
  std::vector<uint32_t> tokens;
  size_t drafted = 0;   // drafted tokens verified (after the grammar's filter)
  size_t accepted = 0;  // of them, kept
};

// Makes the result of up to draft.size() + 1 rounds of Context::sample and appending the
// token, stopping after the first sampled token that differs from the draft, is in `stop`,
// or finishes the constraint. The sampler (RNG, penalties) and `constraint` (may be null)
// advance exactly as those rounds would advance them. Drafted tokens the constraint forbids
// (and any after them) are dropped before verification. `scratch` is the constraint's mask.
// Throws invalid_argument (a drafted id outside the vocabulary, a draft longer than
// max_batch_tokens - 1), context_overflow (a draft beyond the context's room), invalid_state
// (no tokens; a finished constraint); on failure the context keeps its tokens.
VerifyResult verify(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                    constrain::TokenMask* scratch, std::span<const uint32_t> draft,
                    std::span<const uint32_t> stop);

}  // namespace gptoss::speculative
