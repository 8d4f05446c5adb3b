#pragma once
// Counters and histograms for GET /metrics (Prometheus text format 0.0.4). Any thread.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace gptoss_server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // Lines of the histogram NAME (buckets, sum, count); caller holds the owner's lock.
  void write(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; last = above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

// The scheduler's state at the moment of a scrape.
struct EngineGauges {
  size_t queued = 0;
  size_t running = 0;
  size_t kv_pages_used = 0;
  size_t kv_pages_total = 0;
  size_t prefix_cache_entries = 0;
};

class Metrics {
 public:
  Metrics();
  void count_request(const std::string& endpoint, int status);
  void add_tokens(size_t prompt, size_t cached, size_t output);
  void observe_time_to_first_token(double seconds);
  void observe_inter_token_latency(double seconds);
  void count_preemption();
  // Speculative decoding: drafted tokens verified, accepted, and of the accepted the ones
  // jump-forward forced.
  void add_speculation(uint64_t drafted, uint64_t accepted, uint64_t forced);
  // One forward step (gptoss_contexts_process) over `sequences` contexts and `tokens` tokens.
  void observe_step(size_t sequences, size_t tokens, double seconds);
  std::string prometheus(const EngineGauges& gauges) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, output_tokens_ = 0, preemptions_ = 0;
  uint64_t steps_ = 0, step_sequences_ = 0, step_tokens_ = 0;
  uint64_t drafted_ = 0, accepted_ = 0, forced_ = 0;
  Histogram ttft_, itl_, step_seconds_, step_token_counts_;
};

}  // namespace gptoss_server
