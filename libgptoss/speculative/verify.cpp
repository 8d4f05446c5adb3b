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

PendingDraft append_draft(Context& ctx, const constrain::Constraint* constraint,
                          std::span<const uint32_t> draft, std::span<const uint32_t> stop) {
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

  PendingDraft p;
  p.begin = ctx.tokens().size();
  p.used = usable_prefix(constraint, draft, stop);
  if (p.used == 0) return p;
  // The row of position begin - 1 (what predicts the first drafted token): from the step, or
  // kept from the last one when every token is processed already.
  if (ctx.num_processed() == p.begin) {
    if (!ctx.has_logits()) fail(gptoss_status_invalid_state, "no logits to sample from");
    p.first_row = ctx.host_logits();
  }
  ctx.append(draft.first(p.used));
  ctx.keep_rows(p.used + (p.first_row.empty() ? 1 : 0));
  return p;
}

VerifyResult finish_draft(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                          constrain::TokenMask* scratch, const PendingDraft& pending,
                          std::span<const uint32_t> stop, bool logprobs) {
  VerifyResult r;
  auto record = [&] {
    if (logprobs) r.logprobs.push_back({sampler.last_chosen(), sampler.last_alternatives()});
  };
  const size_t L = pending.begin;
  if (pending.used == 0) {  // plain decoding, on the device where it samples there
    if (ctx.tokens().size() != L)
      fail(gptoss_status_invalid_state, "the context changed since its draft was appended");
    r.tokens.push_back(sample_one(ctx, sampler, constraint, scratch));
    record();
    return r;
  }
  const std::vector<uint32_t>& tokens = ctx.tokens();
  if (tokens.size() != L + pending.used)
    fail(gptoss_status_invalid_state, "the context changed since its draft was appended");
  if (ctx.num_processed() < tokens.size()) {
    try {
      ctx.process();
    } catch (...) {
      ctx.truncate(L);
      throw;
    }
  }
  const std::vector<float> logits = ctx.take_kept_rows();
  const uint32_t vocab = ctx.model().config().vocab_size;
  const size_t rows = pending.used + (pending.first_row.empty() ? 1 : 0);
  if (logits.size() != rows * vocab)
    fail(gptoss_status_invalid_state,
         "the draft's logits were not kept: the context changed since its draft was appended");
  r.drafted = pending.used;
  const std::span<const uint32_t> used = std::span(tokens).subspan(L, pending.used);
  auto row = [&](size_t i) -> std::span<const float> {  // predicts the token at L + i
    if (!pending.first_row.empty()) {
      if (i == 0) return pending.first_row;
      --i;
    }
    return std::span<const float>(logits).subspan(i * vocab, vocab);
  };
  for (size_t i = 0; i <= used.size(); ++i) {
    std::span<const uint32_t> mask;
    if (constraint != nullptr) {
      constraint->fill_mask(*scratch);
      mask = std::span<const uint32_t>(scratch->words(), scratch->num_words());
    }
    // Sampled as Context::sample samples position L + i: penalties over the tokens before it.
    const uint32_t y = ctx.sample_logits(sampler, row(i), L + i, mask);
    if (constraint != nullptr) constraint->accept(y);
    r.tokens.push_back(y);
    record();
    const bool ends = (constraint != nullptr && constraint->finished()) ||
                      std::find(stop.begin(), stop.end(), y) != stop.end();
    if (i == used.size() || y != used[i] || ends) break;
    ++r.accepted;
  }
  ctx.rollback(L + r.accepted, row(r.accepted));
  return r;
}

VerifyResult verify(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                    constrain::TokenMask* scratch, std::span<const uint32_t> draft,
                    std::span<const uint32_t> stop) {
  const PendingDraft pending = append_draft(ctx, constraint, draft, stop);
  return finish_draft(ctx, sampler, constraint, scratch, pending, stop);
}

}  // namespace gptoss::speculative
