#pragma once
// GPTOSS_CPU_PROFILE=1: wall time and calls per op kind of one device, logged (info level,
// through the host's logger) when the device closes, and for the ops that stream weights
// (linear, router, moe) the weight bytes they read per second of their time: the figure to
// hold against the machine's read bandwidth. Costs one branch per op when off.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gptoss::cpu {

struct Weight;

// Bytes of `rows` rows of w as stored (MXFP4: with their scales).
uint64_t weight_rows_bytes(const Weight& w, size_t rows);
// Bytes of the experts that some of the n_slots (tokens x top_k) routing slots chose: their
// mlp1 and mlp2 rows. Ids outside the experts the weights hold count nothing.
uint64_t routed_expert_bytes(const int32_t* ids, size_t n_slots, const Weight& mlp1,
                             const Weight& mlp2);

enum class OpKind : int {
  embedding, rmsnorm, linear, rope, kv_write, attention, router, moe, add,
  linear_qkv, add_rmsnorm, rope_kv_write, sample, count
};

class OpProfile {
 public:
  OpProfile();  // enabled when GPTOSS_CPU_PROFILE is set to a non-empty value other than 0
  bool enabled() const { return enabled_; }
  void add(OpKind k, std::chrono::steady_clock::duration d) {
    ns_[int(k)].fetch_add(uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()),
                          std::memory_order_relaxed);
    calls_[int(k)].fetch_add(1, std::memory_order_relaxed);
  }
  // Weight bytes one call of kind k read (matrices and their MXFP4 scales, as stored).
  void add_bytes(OpKind k, uint64_t bytes) { bytes_[int(k)].fetch_add(bytes, std::memory_order_relaxed); }
  // "linear 812.3 ms / 4000 calls (61.2%, 64.1 GB/s), moe ..." sorted by time; empty when
  // nothing ran.
  std::string report() const;

 private:
  bool enabled_ = false;
  std::atomic<uint64_t> ns_[int(OpKind::count)] = {};
  std::atomic<uint64_t> calls_[int(OpKind::count)] = {};
  std::atomic<uint64_t> bytes_[int(OpKind::count)] = {};
};

}  // namespace gptoss::cpu
