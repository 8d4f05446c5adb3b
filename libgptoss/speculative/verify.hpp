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

// The log-probabilities plain decoding records for one sampled token (the sampler's last ones
// after it), kept per token of a step when asked.
struct TokenLogprobs {
  TokenLogprob chosen{};
  std::vector<TokenLogprob> top;
};

struct VerifyResult {
  // The tokens plain decoding would have produced, in order: the accepted drafted tokens
  // (appended to the context) and one more that ends the run (sampled, not appended).
  std::vector<uint32_t> tokens;
  size_t drafted = 0;                   // drafted tokens verified (after the grammar's filter)
  size_t accepted = 0;                  // of them, kept
  std::vector<TokenLogprobs> logprobs;  // one per token, when asked for
};

// A draft appended to a context, waiting for the step that computes its rows.
struct PendingDraft {
  size_t begin = 0;              // the context's tokens before the draft
  size_t used = 0;               // drafted tokens appended (0: nothing to verify)
  std::vector<float> first_row;  // the logits before the draft, when no token was pending
};

// The first half of verify(): checks the draft, appends the part worth verifying and asks the
// context to keep the logits of its positions at the next processing (Context::keep_rows), which
// may batch it with other contexts. Throws as verify(); on failure the context is unchanged.
PendingDraft append_draft(Context& ctx, const constrain::Constraint* constraint,
                          std::span<const uint32_t> draft, std::span<const uint32_t> stop);
// The second half: processes the context if that is still to do, samples every position in
// order, keeps the agreeing prefix and rolls the rest back. `logprobs`: fill
// VerifyResult::logprobs. invalid_state when the context changed in between.
VerifyResult finish_draft(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                          constrain::TokenMask* scratch, const PendingDraft& pending,
                          std::span<const uint32_t> stop, bool logprobs = false);

// Makes the result of up to draft.size() + 1 rounds of Context::sample and appending the
// token, stopping after the first sampled token that differs from the draft, is in `stop`,
// or finishes the constraint. The sampler (RNG, penalties) and `constraint` (may be null)
// advance exactly as those rounds would advance them, and each position is sampled where
// Context::sample samples (the device or the host), so log-probabilities agree too. Drafted
// tokens the constraint forbids (and any after them) are dropped before verification.
// `scratch` is the constraint's mask. Throws invalid_argument (a drafted id outside the
// vocabulary, a draft longer than max_batch_tokens - 1), context_overflow (a draft beyond the
// context's room), invalid_state (no tokens; a finished constraint); on failure the context
// keeps its tokens.
VerifyResult verify(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                    constrain::TokenMask* scratch, std::span<const uint32_t> draft,
                    std::span<const uint32_t> stop);

}  // namespace gptoss::speculative
