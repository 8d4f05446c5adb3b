#include "metrics.hpp"

#include <fmt/format.h>

namespace gptoss_server {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::write(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

Metrics::Metrics()
    : ttft_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      itl_({0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5}),
      step_seconds_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}),
      step_token_counts_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::add_tokens(size_t prompt, size_t cached, size_t output) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += prompt;
  cached_tokens_ += cached;
  output_tokens_ += output;
}

void Metrics::observe_time_to_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::observe_inter_token_latency(double seconds) {
  std::lock_guard lock(mutex_);
  itl_.observe(seconds);
}

void Metrics::count_preemption() {
  std::lock_guard lock(mutex_);
  ++preemptions_;
}

void Metrics::add_speculation(uint64_t drafted, uint64_t accepted, uint64_t forced) {
  std::lock_guard lock(mutex_);
  drafted_ += drafted;
  accepted_ += accepted;
  forced_ += forced;
}

void Metrics::observe_step(size_t sequences, size_t tokens, double seconds) {
  std::lock_guard lock(mutex_);
  ++steps_;
  step_sequences_ += sequences;
  step_tokens_ += tokens;
  step_seconds_.observe(seconds);
  step_token_counts_.observe(double(tokens));
}

std::string Metrics::prometheus(const EngineGauges& g) const {
  std::lock_guard lock(mutex_);
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto single = [&](const char* name, const char* type, const char* help, uint64_t value) {
    metric(name, type, help);
    out += fmt::format("{} {}\n", name, value);
  };
  metric("gptoss_requests_total", "counter", "HTTP requests by endpoint and status code.");
  for (const auto& [key, n] : requests_)
    out += fmt::format("gptoss_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
  single("gptoss_prompt_tokens_total", "counter", "Prompt tokens of admitted generations.", prompt_tokens_);
  single("gptoss_cached_prompt_tokens_total", "counter", "Prompt tokens whose KV came from the prefix cache.",
         cached_tokens_);
  single("gptoss_generated_tokens_total", "counter", "Sampled output tokens.", output_tokens_);
  single("gptoss_preemptions_total", "counter", "Running sequences preempted for KV pages (recomputed later).",
         preemptions_);
  // Sequences and tokens per step (the ratios to the step count) show how well requests batch.
  single("gptoss_forward_steps_total", "counter", "Forward steps (one batched pass over the running sequences).",
         steps_);
  single("gptoss_forward_step_sequences_total", "counter", "Sequences in forward steps, summed over the steps.",
         step_sequences_);
  single("gptoss_forward_step_tokens_total", "counter", "Tokens in forward steps (decode and prompt chunks).",
         step_tokens_);
  single("gptoss_speculative_drafted_tokens_total", "counter",
         "Drafted tokens verified (prompt lookup or the draft model, and jump-forward).", drafted_);
  single("gptoss_speculative_accepted_tokens_total", "counter",
         "Drafted tokens kept (each an output token without a forward step of its own).",
         accepted_);
  single("gptoss_speculative_forced_tokens_total", "counter",
         "Kept drafted tokens that the constraint forced (jump-forward).", forced_);
  metric("gptoss_forward_step_seconds", "histogram", "Time of one forward step.");
  step_seconds_.write(out, "gptoss_forward_step_seconds");
  // How full the steps are against --step-tokens (decode tokens, drafts, prompt chunks).
  metric("gptoss_forward_step_size_tokens", "histogram", "Tokens in one forward step.");
  step_token_counts_.write(out, "gptoss_forward_step_size_tokens");
  single("gptoss_queue_length", "gauge", "Generations waiting for a running slot.", g.queued);
  single("gptoss_running_sequences", "gauge", "Generations running.", g.running);
  single("gptoss_kv_pages_used", "gauge", "Full-attention KV pages in use (running and cached sequences).",
         g.kv_pages_used);
  single("gptoss_kv_pages_total", "gauge", "Full-attention KV pages in the pool.", g.kv_pages_total);
  single("gptoss_prefix_cache_entries", "gauge", "Finished sequences kept for prefix reuse.", g.prefix_cache_entries);
  metric("gptoss_time_to_first_token_seconds", "histogram", "From submission to the first sampled token.");
  ttft_.write(out, "gptoss_time_to_first_token_seconds");
  metric("gptoss_inter_token_latency_seconds", "histogram", "Between consecutive tokens of a sequence.");
  itl_.write(out, "gptoss_inter_token_latency_seconds");
  return out;
}

}  // namespace gptoss_server
