#pragma once
// GPTOSS_CPU_PROFILE=1: wall time and calls per op kind of one device, logged (info level,
// through the host's logger) when the device closes. Costs one branch per op when off.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gptoss::cpu {

enum class OpKind : int { embedding, rmsnorm, linear, rope, kv_write, attention, router, moe, add, count };

class OpProfile {
 public:
  OpProfile();  // enabled when GPTOSS_CPU_PROFILE is set to a non-empty value other than 0
  bool enabled() const { return enabled_; }
  void add(OpKind k, std::chrono::steady_clock::duration d) {
    ns_[int(k)].fetch_add(uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()),
                          std::memory_order_relaxed);
    calls_[int(k)].fetch_add(1, std::memory_order_relaxed);
  }
  // "linear 812.3 ms / 4000 calls (61.2%), moe ..." sorted by time; empty when nothing ran.
  std::string report() const;

 private:
  bool enabled_ = false;
  std::atomic<uint64_t> ns_[int(OpKind::count)] = {};
  std::atomic<uint64_t> calls_[int(OpKind::count)] = {};
};

}  // namespace gptoss::cpu
