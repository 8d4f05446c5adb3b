#pragma once
// The scheduler's view of one generation: its tokens, its context (while it has one), its
// sampler and output tracker, and the sample -> events -> finish step that follows each
// forward pass that completes its tokens.
#include <chrono>
#include <memory>
#include <vector>

#include <gptoss.hpp>
#include "engine/job.hpp"
#include "engine/output_tracker.hpp"
#include "metrics.hpp"

namespace gptoss_server {

// The tokens the shortest complete output of `grammar` takes (each byte of it counted as one
// token, as gptoss_constraint_create counts it against a budget), with the reasoning limit a
// sequence would have; -1 when the grammar cannot be finished. Throws gptoss::error.
int64_t shortest_output_tokens(const Grammar& grammar, int64_t max_reasoning_tokens);

// Speculative decoding (docs/speculative.md): the library's speculator, one per sequence.
struct Speculation {
  bool on = true;          // prompt lookup (or the draft model) and jump-forward
  uint32_t draft_max = 8;  // drafter tokens per step at most; 0: jump-forward only
  bool cost_bound = true;  // failed drafts cost at most 3 % (gptoss_speculator_options)
  gptoss_model_t draft_model =
      nullptr;  // instead of prompt lookup; borrowed, outlives the sequences
};

class Sequence {
 public:
  // Throws gptoss::error for sampling options the library refuses.
  Sequence(std::shared_ptr<Job> job, gptoss_tokenizer_t tokenizer, size_t context_length,
           Metrics& metrics, const Speculation& speculation = {.on = false});

  Job& job() { return *job_; }
  const std::vector<uint32_t>& tokens() const { return tokens_; }
  size_t prompt_size() const { return prompt_size_; }
  Usage& usage() { return usage_; }

  // KV state: tokens()[0, appended) are in the context, [0, processed) of them processed.
  gptoss::context context;
  size_t appended = 0;
  size_t processed = 0;
  uint64_t admitted = 0;  // admission order (the newest is preempted first)
  bool ever_admitted = false;

  // Appends tokens()[appended, appended + n) to the context.
  void append(size_t n);
  // Before a forward pass in which this sequence decodes (one token pending): drafts at most
  // `max_draft` tokens and appends them to the context, to be verified by advance() after the
  // pass. Returns the tokens appended (0 when speculation is off or nothing was proposed).
  size_t draft(size_t max_draft);
  // The pass failed: the draft leaves the context (the sampler never saw it). Never throws.
  void drop_draft();
  // After a forward pass that processed every token: samples the next one (or verifies the
  // draft: the tokens plain decoding gives, one or more), emits their events and either
  // appends the last or finishes. Returns true when finished.
  bool advance();
  // Ends the generation (closing open messages for stop/length); idempotent.
  void finish(FinishReason reason, const std::string& error = {});
  bool finished() const { return finished_; }
  // Ended by a stop token, stop string or length (its KV is worth keeping).
  bool ended_normally() const { return finished_ && reason_ != FinishReason::error && reason_ != FinishReason::cancelled; }

 private:
  std::shared_ptr<Job> job_;
  gptoss_tokenizer_t tokenizer_;
  size_t context_length_;
  Metrics& metrics_;
  std::vector<uint32_t> tokens_;
  size_t prompt_size_;
  std::vector<uint32_t> stop_tokens_;
  gptoss::sampler sampler_;
  gptoss::constraint constraint_;  // also held by the sampler; null without a grammar
  std::unique_ptr<OutputTracker> tracker_;
  std::vector<OutputEvent> events_;
  std::vector<gptoss_token_logprob> alternatives_;
  Usage usage_;
  size_t generated_ = 0;
  std::chrono::steady_clock::time_point last_token_at_;
  gptoss::speculator speculator_;  // null when speculation is off
  gptoss_draft_options draft_options_{};
  std::vector<uint32_t> verified_;  // a verification's tokens
  size_t drafted_ = 0;              // tokens of the pending draft (draft() ran; advance() has not)
  bool draft_pending_ = false;
  gptoss_speculator_stats counted_{};  // the speculator's counts already in usage and metrics

  // One generated token: events, then finish or keep it. `in_context`: an accepted drafted
  // token, which the context holds already. Returns true when finished.
  bool take(uint32_t token, const TokenLogprob* logprob, bool in_context);
  void count_speculation();
  bool finished_ = false;
  FinishReason reason_ = FinishReason::stop;
};

}  // namespace gptoss_server
