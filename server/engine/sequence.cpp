#include "engine/sequence.hpp"

#include <algorithm>
#include <random>

namespace gptoss_server {
namespace {

gptoss::sampler make_sampler(const Sampling& s) {
  gptoss_sampler_options o;
  gptoss::check(gptoss_sampler_options_init(&o), "gptoss_sampler_options_init");
  o.temperature = float(s.temperature);
  o.top_p = float(s.top_p);
  o.presence_penalty = float(s.presence_penalty);
  o.frequency_penalty = float(s.frequency_penalty);
  if (s.seed) {
    o.seed = *s.seed;
  } else {
    std::random_device device;
    o.seed = (uint64_t{device()} << 32) | device();
  }
  o.top_logprobs = uint32_t(std::max(0, s.logprobs));
  return gptoss::sampler::create(&o);
}

// max_tokens: the sequence's whole output, its stop token included, which is what the
// constraint counts: advance() ends on a stop token before it checks the length, so a stop
// token sampled as the max_tokens-th token finishes the output as `stop`.
gptoss::constraint make_constraint(const Grammar& grammar, int64_t max_reasoning_tokens,
                                   int64_t max_tokens) {
  gptoss_constraint_options co;
  gptoss::check(gptoss_constraint_options_init(&co), "gptoss_constraint_options_init");
  co.max_reasoning_tokens = max_reasoning_tokens;
  co.max_tokens = max_tokens;
  return gptoss::constraint::create(grammar.get(), &co);
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int64_t shortest_output_tokens(const Grammar& grammar, int64_t max_reasoning_tokens) {
  return make_constraint(grammar, max_reasoning_tokens, -1).min_tokens();
}

Sequence::Sequence(std::shared_ptr<Job> job, gptoss_tokenizer_t tokenizer, size_t context_length,
                   Metrics& metrics, const Speculation& speculation)
    : job_(std::move(job)), tokenizer_(tokenizer), context_length_(context_length),
      metrics_(metrics), tokens_(job_->spec().prompt), prompt_size_(tokens_.size()),
      sampler_(make_sampler(job_->spec().sampling)) {
  const GenerationSpec& spec = job_->spec();
  // <|return|> ends an answer, <|call|> a tool call; raw text also ends at <|endoftext|>.
  stop_tokens_ = {gptoss::special_token(tokenizer, gptoss_special_token_return),
                  gptoss::special_token(tokenizer, gptoss_special_token_call)};
  if (!spec.harmony)
    stop_tokens_.push_back(gptoss::special_token(tokenizer, gptoss_special_token_endoftext));
  tracker_ = spec.harmony ? make_harmony_tracker(tokenizer, spec.stop) : make_text_tracker(tokenizer, spec.stop);
  if (spec.grammar) {
    // The sampler draws only tokens the grammar allows (and accepts each into the constraint);
    // it holds the constraint, whose state survives preemption with the sampler.
    constraint_ = make_constraint(spec.grammar, spec.max_reasoning_tokens,
                                  spec.complete_within_max_tokens ? int64_t(spec.max_tokens) : -1);
    sampler_.set_constraint(constraint_.get());
  }
  alternatives_.resize(size_t(std::max(0, spec.sampling.logprobs)));
  usage_.prompt_tokens = prompt_size_;
  if (speculation.on) {
    gptoss_speculator_options so;
    gptoss::check(gptoss_speculator_options_init(&so), "gptoss_speculator_options_init");
    so.max_draft = speculation.draft_max;
    so.cost_bound = speculation.cost_bound ? 1 : 0;
    so.draft_model = speculation.draft_model;
    speculator_ = gptoss::speculator::create(&so);
    gptoss::check(gptoss_draft_options_init(&draft_options_), "gptoss_draft_options_init");
    // A stop token ends a verified run as it ends plain decoding (/bench ignores them).
    if (!spec.ignore_stop_tokens) {
      draft_options_.stop_tokens = stop_tokens_.data();
      draft_options_.n_stop_tokens = stop_tokens_.size();
    }
    usage_.speculative = true;
    counted_.struct_size = sizeof counted_;
  }
}

void Sequence::append(size_t n) {
  gptoss::check(gptoss_context_append_tokens(context.get(), n, tokens_.data() + appended),
                "gptoss_context_append_tokens");
  appended += n;
}

size_t Sequence::draft(size_t max_draft) {
  if (!speculator_ || finished_) return 0;
  // What the sequence may still generate bounds the tokens a verification gives back, so no
  // token past the end of the output is ever sampled.
  const size_t left =
      job_->spec().max_tokens > generated_ ? job_->spec().max_tokens - generated_ : 1;
  const size_t capacity = std::min(max_draft + 1, left);
  size_t n = 0;
  gptoss::check(gptoss_speculator_draft(speculator_.get(), context.get(), sampler_.get(),
                                        &draft_options_, capacity, &n),
                "gptoss_speculator_draft");
  verified_.resize(n + 1);
  drafted_ = n;
  draft_pending_ = true;
  return n;
}

void Sequence::drop_draft() {
  if (!draft_pending_) return;
  draft_pending_ = false;
  drafted_ = 0;
  if (context &&
      gptoss_speculator_abandon_draft(speculator_.get(), context.get()) != gptoss_status_success)
    finish(FinishReason::error,
           std::string("gptoss_speculator_abandon_draft: ") + gptoss_get_last_error_message());
}

void Sequence::count_speculation() {
  gptoss_speculator_stats now{};
  now.struct_size = sizeof now;
  gptoss::check(gptoss_speculator_get_stats(speculator_.get(), &now),
                "gptoss_speculator_get_stats");
  metrics_.add_speculation(now.drafted - counted_.drafted, now.accepted - counted_.accepted,
                           now.forced - counted_.forced);
  counted_ = now;
  usage_.drafted_tokens = now.drafted;
  usage_.accepted_tokens = now.accepted;
}

namespace {
TokenLogprob to_logprob(const gptoss_token_logprob& chosen,
                        std::span<const gptoss_token_logprob> top) {
  TokenLogprob logprob;
  logprob.token = chosen.token;
  logprob.logprob = chosen.logprob;
  for (const auto& t : top) logprob.top.emplace_back(t.token, t.logprob);
  return logprob;
}
}  // namespace

bool Sequence::advance() {
  const GenerationSpec& spec = job_->spec();
  const bool want_logprobs = spec.sampling.logprobs >= 0;
  if (draft_pending_) {
    draft_pending_ = false;
    size_t n = 0;
    gptoss::check(gptoss_speculator_verify(speculator_.get(), context.get(), sampler_.get(),
                                           &draft_options_, verified_.data(), verified_.size(), &n),
                  "gptoss_speculator_verify");
    count_speculation();
    for (size_t i = 0; i < n; ++i) {
      TokenLogprob logprob;
      if (want_logprobs) {
        gptoss_token_logprob chosen{};
        size_t top = 0;
        gptoss::check(
            gptoss_speculator_get_logprobs(speculator_.get(), i, &chosen, alternatives_.data(),
                                           alternatives_.size(), &top),
            "gptoss_speculator_get_logprobs");
        logprob =
            to_logprob(chosen, std::span(alternatives_).first(std::min(top, alternatives_.size())));
      }
      // Tokens before the last are accepted drafted tokens: the context holds them.
      if (take(verified_[i], want_logprobs ? &logprob : nullptr, i + 1 < n)) return true;
    }
    job_->push(std::move(events_));
    events_.clear();
    return false;
  }
  uint32_t token = 0;
  gptoss::check(gptoss_context_sample(context.get(), sampler_.get(), &token),
                "gptoss_context_sample");
  TokenLogprob logprob;
  if (want_logprobs) {
    gptoss_token_logprob chosen{};
    size_t n = 0;
    gptoss::check(gptoss_sampler_get_last_logprobs(sampler_.get(), &chosen, alternatives_.data(),
                                                   alternatives_.size(), &n),
                  "gptoss_sampler_get_last_logprobs");
    logprob = to_logprob(chosen, std::span(alternatives_).first(std::min(n, alternatives_.size())));
  }
  if (take(token, want_logprobs ? &logprob : nullptr, false)) return true;
  job_->push(std::move(events_));
  events_.clear();
  return false;
}

bool Sequence::take(uint32_t token, const TokenLogprob* logprob, bool in_context) {
  const GenerationSpec& spec = job_->spec();
  const auto now = std::chrono::steady_clock::now();
  if (generated_ == 0) metrics_.observe_time_to_first_token(seconds(now - job_->submitted_at()));
  else metrics_.observe_inter_token_latency(seconds(now - last_token_at_));
  last_token_at_ = now;
  ++generated_;
  usage_.output_tokens = generated_;

  const bool stop_token = !spec.ignore_stop_tokens &&
                          std::find(stop_tokens_.begin(), stop_tokens_.end(), token) != stop_tokens_.end();
  // The Harmony parser needs the stop token to close the message; raw text never shows it.
  if (spec.harmony || !stop_token) tracker_->on_token(token, logprob, events_);
  const bool stop = stop_token || tracker_->stopped();
  if (stop || generated_ >= spec.max_tokens || tokens_.size() + 1 > context_length_) {
    // Accepted drafted tokens past the end (a stop string matched before them) leave the
    // context, so that its KV, kept for prefix reuse, is exactly the sequence's tokens.
    if (in_context && context) {
      context.truncate(tokens_.size());
      appended = tokens_.size();
      processed = gptoss::num_processed_tokens(context.get());
    }
    finish(stop ? FinishReason::stop : FinishReason::length);
    return true;
  }
  tokens_.push_back(token);
  if (in_context) {
    ++appended;
    ++processed;
  } else {
    append(1);
  }
  return false;
}

void Sequence::finish(FinishReason reason, const std::string& error) {
  if (finished_) return;
  finished_ = true;
  std::string message = error;
  if (reason == FinishReason::stop || reason == FinishReason::length) {
    try {
      tracker_->finish(events_, reason == FinishReason::length);
    } catch (const gptoss::error& e) {
      reason = FinishReason::error;
      message = e.what();
    }
  }
  reason_ = reason;
  usage_.reasoning_tokens = tracker_->reasoning_tokens();
  int32_t closed = 0;
  if (constraint_ && gptoss_constraint_closed_by_budget(constraint_.get(), &closed) != gptoss_status_success) closed = 0;
  job_->push(std::move(events_));
  events_.clear();
  metrics_.add_tokens(0, 0, generated_);
  job_->finish({reason, message, usage_, closed != 0});
}

}  // namespace gptoss_server
