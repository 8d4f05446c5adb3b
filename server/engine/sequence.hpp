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

class Sequence {
 public:
  // Throws gptoss::error for sampling options the library refuses.
  Sequence(std::shared_ptr<Job> job, gptoss_tokenizer_t tokenizer, size_t context_length, Metrics& metrics);

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
  // After a forward pass that processed every token: samples the next one, emits its events
  // and either appends it or finishes. Returns true when finished.
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
  bool finished_ = false;
  FinishReason reason_ = FinishReason::stop;
};

}  // namespace gptoss_server
