#include "libgptoss/speculative/verify.hpp"

#include <algorithm>

#include "libgptoss/common/error.hpp"

namespace gptoss::speculative {

namespace {

// What Context::sample with a constraint does (gptoss_context_sample): mask in, token out.
uint32_t sample_one(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                    constrain::TokenMask* scratch) {
  if (constraint == nullptr) return ctx.sample(sampler);
  constraint->fill_mask(*scratch);
  const uint32_t token =
      ctx.sample(sampler, std::span<const uint32_t>(scratch->words(), scratch->num_words()));
  constraint->accept(token);
  return token;
}

// The drafted tokens worth verifying: up to the first the grammar forbids, and through the
// first that would end the run (a stop token, the grammar's end).
size_t usable_prefix(const constrain::Constraint* constraint, std::span<const uint32_t> draft,
                     std::span<const uint32_t> stop) {
  std::unique_ptr<constrain::Constraint> probe = constraint ? constraint->clone() : nullptr;
  for (size_t i = 0; i < draft.size(); ++i) {
    if (probe) {
      if (!probe->allows(draft[i])) return i;
      probe->accept(draft[i]);
      if (probe->finished()) return i + 1;
    }
    if (std::find(stop.begin(), stop.end(), draft[i]) != stop.end()) return i + 1;
  }
  return draft.size();
}

}  // namespace

VerifyResult verify(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                    constrain::TokenMask* scratch, std::span<const uint32_t> draft,
                    std::span<const uint32_t> stop) {
  const uint32_t vocab = ctx.model().config().vocab_size;
  if (ctx.tokens().empty()) fail(gptoss_status_invalid_state, "the context has no tokens");
  for (size_t i = 0; i < draft.size(); ++i)
    if (draft[i] >= vocab)
      fail(gptoss_status_invalid_argument,
           "drafted token {} (at index {}) is outside the vocabulary of {}", draft[i], i, vocab);
  if (draft.size() + 1 > ctx.max_batch_tokens())
    fail(gptoss_status_invalid_argument,
         "a draft of {} tokens does not fit one step of this context ({} tokens, the draft's "
         "last token included: max_batch_tokens)",
         draft.size(), ctx.max_batch_tokens());
  if (draft.size() > ctx.max_tokens() - ctx.tokens().size())
    fail(gptoss_status_context_overflow,
         "a draft of {} tokens would not fit: the context holds {} of at most {} tokens",
         draft.size(), ctx.tokens().size(), ctx.max_tokens());
  if (constraint != nullptr && constraint->finished())
    fail(gptoss_status_invalid_state,
         "the sampler's constraint is finished: nothing more may be generated");

  VerifyResult r;
  r.drafted = usable_prefix(constraint, draft, stop);
  if (r.drafted == 0) {  // plain decoding, on the device where it samples there
    r.tokens.push_back(sample_one(ctx, sampler, constraint, scratch));
    return r;
  }
  const std::span<const uint32_t> used = draft.first(r.drafted);
  const size_t L = ctx.tokens().size();
  // The row of position L - 1 (what predicts the first drafted token): from this step, or
  // kept from the last one when every token is processed already.
  std::vector<float> first_row;
  if (ctx.num_processed() == L) {
    if (!ctx.has_logits()) fail(gptoss_status_invalid_state, "no logits to sample from");
    first_row = ctx.host_logits();
  }
  const size_t rows = used.size() + (first_row.empty() ? 1 : 0);
  std::vector<float> logits;
  ctx.append(used);
  try {
    ctx.process_rows(rows, logits);
  } catch (...) {
    ctx.truncate(L);
    throw;
  }
  auto row = [&](size_t i) -> std::span<const float> {  // predicts the token at L + i
    if (!first_row.empty()) {
      if (i == 0) return first_row;
      --i;
    }
    return std::span<const float>(logits).subspan(i * vocab, vocab);
  };
  const std::vector<uint32_t>& tokens = ctx.tokens();
  for (size_t i = 0; i <= used.size(); ++i) {
    std::span<const uint32_t> mask;
    if (constraint != nullptr) {
      constraint->fill_mask(*scratch);
      mask = std::span<const uint32_t>(scratch->words(), scratch->num_words());
    }
    // Penalties see the tokens before this position, as plain decoding's would.
    const uint32_t y = sampler.sample(row(i), std::span(tokens).first(L + i), mask);
    if (constraint != nullptr) constraint->accept(y);
    r.tokens.push_back(y);
    const bool ends = (constraint != nullptr && constraint->finished()) ||
                      std::find(stop.begin(), stop.end(), y) != stop.end();
    if (i == used.size() || y != used[i] || ends) break;
    ++r.accepted;
  }
  ctx.rollback(L + r.accepted, row(r.accepted));
  return r;
}

}  // namespace gptoss::speculative
