#include "libgptoss/speculative/speculator.hpp"

#include <algorithm>
#include <cmath>

#include "libgptoss/common/error.hpp"

namespace gptoss::speculative {

size_t DraftLength::next() const {
  if (max_ == 0) return 0;
  if (pause_ > 0) return 0;
  const double alpha = kept_ / tried_;
  if (alpha >= 1.0) return max_;
  // Largest k with alpha^k > kWorth; a probe (1) when that is none.
  const double k = alpha <= 0.0 ? 0.0 : std::floor(std::log(kWorth) / std::log(alpha));
  return std::clamp<size_t>(size_t(std::max(k, 0.0)), 1, max_);
}

void DraftLength::update(size_t drafted, size_t accepted) {
  if (pause_ > 0) {
    --pause_;
    return;
  }
  if (drafted == 0) return;
  kept_ = kDecay * kept_ + double(accepted);
  tried_ = kDecay * tried_ + double(accepted) + (accepted < drafted ? 1.0 : 0.0);
  const double alpha = kept_ / tried_;
  if (alpha > kWorth) {
    failed_probes_ = 0;
    return;
  }
  // Not worth one token: pause, longer after each probe that failed.
  if (accepted == 0) failed_probes_ = std::min<size_t>(failed_probes_ + 1, 7);
  pause_ = std::min(kMaxPause, size_t(1) << (failed_probes_ == 0 ? 0 : failed_probes_ - 1));
}

void DraftLength::reset() {
  kept_ = 1.2;
  tried_ = 2.0;
  pause_ = failed_probes_ = 0;
}

size_t DraftCost::affordable(bool decode) const {
  // A decode step's cost is measured against a plain one's, so the first is plain.
  if (decode && plain_seconds_ == 0) return 0;
  const double allowed = kMaxShare * std::max(tokens_, double(kGrace)) - lost_;
  if (allowed <= 0) return 0;
  return size_t(std::min(std::floor(allowed / std::max(token_cost(), 1e-3)), 65536.0));
}

void DraftCost::record(size_t drafted, size_t tokens, double seconds, bool decode) {
  const bool timed = decode && seconds > 0;
  if (drafted == 0) {
    // One slow or fast step (another process, a page fault) moves the estimate only so far.
    if (timed)
      plain_seconds_ = plain_seconds_ == 0
                           ? seconds
                           : 0.8 * plain_seconds_ +
                                 0.2 * std::clamp(seconds, plain_seconds_ / 2, plain_seconds_ * 2);
    tokens_ += double(tokens);
    return;
  }
  // The step's cost in plain steps, counted high: a drafted token at kMargin times its
  // smoothed measured cost (one measurement is off by the noise of two durations), or at a whole
  // plain step before one compares (a step that also processed a prompt is mostly the prompt's).
  if (timed && plain_seconds_ > 0) {
    const double measured =
        std::clamp((seconds / plain_seconds_ - 1.0) / double(drafted), 0.0, 2.0);
    per_token_ = per_token_measured_ ? 0.7 * per_token_ + 0.3 * measured : measured;
    per_token_measured_ = true;
  }
  lost_ += 1.0 + token_cost() * double(drafted) - double(tokens);
  tokens_ += double(tokens);
}

Speculator::Speculator(SpeculatorOptions options)
    : options_(std::move(options)), length_(options_.max_draft) {}

void Speculator::reset() {
  length_.reset();
  cost_.reset();
  stats_ = {};
  drafted_ = false;
}

SpeculatorStats Speculator::stats() const {
  SpeculatorStats s = stats_;
  s.draft_length = length_.next();
  if (options_.cost_bound) s.draft_length = std::min(s.draft_length, cost_.affordable(true));
  return s;
}

void Speculator::forced_tokens(const constrain::Constraint& constraint, size_t max,
                               std::vector<uint32_t>& out) {
  if (max == 0 || constraint.finished()) return;
  std::unique_ptr<constrain::Constraint> probe = constraint.clone();
  constrain::TokenMask mask(probe->num_tokens());
  while (out.size() < max && !probe->finished()) {
    probe->fill_mask(mask);
    if (mask.count() != 1) return;
    uint32_t t = 0;
    while (!mask.test(t)) ++t;
    probe->accept(t);
    out.push_back(t);
  }
}

size_t Speculator::draft(Context& ctx, const constrain::Constraint* constraint,
                         std::span<const uint32_t> stop, size_t max_tokens) {
  if (max_tokens == 0)
    fail(gptoss_status_invalid_argument, "a step must be allowed at least one token");
  if (drafted_)
    fail(gptoss_status_invalid_state, "a draft is pending: verify it before drafting again");
  step_begin_ = std::chrono::steady_clock::now();
  decode_step_ = ctx.tokens().size() == ctx.num_processed() + 1;
  // Room for the draft: one step, the context, what the caller wants back.
  const size_t room = std::min(
      {ctx.max_batch_tokens() - 1, ctx.max_tokens() - ctx.tokens().size(), max_tokens - 1});
  draft_.clear();
  if (constraint != nullptr && options_.jump_forward) forced_tokens(*constraint, room, draft_);
  const size_t forced = draft_.size();
  const bool ends = forced > 0 && std::find(stop.begin(), stop.end(), draft_.back()) != stop.end();
  size_t asked = std::min(length_.next(), room - forced);
  if (options_.cost_bound) asked = std::min(asked, cost_.affordable(decode_step_));
  if (ends) asked = 0;
  if (asked > 0 && (drafter_ || options_.prompt_lookup || options_.draft_model)) {
    if (!drafter_) {
      if (options_.draft_model) {
        if (options_.draft_model->config().vocab_size != ctx.model().config().vocab_size)
          fail(gptoss_status_invalid_argument,
               "the draft model's vocabulary ({} tokens) differs from the model's ({})",
               options_.draft_model->config().vocab_size, ctx.model().config().vocab_size);
        drafter_ = std::make_unique<DraftModel>(options_.draft_model, ctx.max_tokens());
      } else {
        drafter_ = std::make_unique<PromptLookup>();
      }
    }
    sequence_.assign(ctx.tokens().begin(), ctx.tokens().end());
    sequence_.insert(sequence_.end(), draft_.begin(), draft_.end());
    drafter_->propose(sequence_, asked, draft_);
  }
  pending_ = append_draft(ctx, constraint, draft_, stop);
  forced_ = forced;
  proposed_ = draft_.size() - forced;
  drafted_ = true;
  return pending_.used;
}

void Speculator::abandon(Context& ctx) {
  if (!drafted_) return;
  drafted_ = false;
  const std::vector<uint32_t>& tokens = ctx.tokens();
  if (pending_.used > 0 && tokens.size() == pending_.begin + pending_.used)
    ctx.truncate(pending_.begin);
}

VerifyResult Speculator::verify(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                                constrain::TokenMask* scratch, std::span<const uint32_t> stop,
                                bool logprobs) {
  if (!drafted_) fail(gptoss_status_invalid_state, "no draft is pending: draft first");
  drafted_ = false;
  VerifyResult r = finish_draft(ctx, sampler, constraint, scratch, pending_, stop, logprobs);
  // Forced tokens are always kept (the grammar leaves the sampler no choice); what the drafter
  // proposed after them counts for its acceptance.
  const size_t drafter_verified = r.drafted > forced_ ? r.drafted - forced_ : 0;
  const size_t drafter_kept = r.accepted > forced_ ? r.accepted - forced_ : 0;
  length_.update(proposed_ == 0 ? 0 : std::max<size_t>(drafter_verified, 1), drafter_kept);
  cost_.record(
      r.drafted, r.tokens.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - step_begin_).count(),
      decode_step_);
  ++stats_.steps;
  stats_.drafted += r.drafted;
  stats_.accepted += r.accepted;
  stats_.forced += std::min(forced_, r.accepted);
  return r;
}

VerifyResult Speculator::step(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                              constrain::TokenMask* scratch, std::span<const uint32_t> stop,
                              size_t max_tokens) {
  draft(ctx, constraint, stop, max_tokens);
  return verify(ctx, sampler, constraint, scratch, stop);
}

}  // namespace gptoss::speculative
