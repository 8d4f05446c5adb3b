#pragma once
// The CPU backend's kernel levels as the tests name them (GPTOSS_CPU_ISA's values), which of
// them this machine runs, and a scope that sets GPTOSS_CPU_ISA for the devices opened inside it.
//
// A level above the machine's runs as the best one below it, so a test looping over every
// level repeats that level's work once per missing level (four repeats of avx2 on an AVX2-only
// CPU). Tests of the kernels' results loop over cpu_levels_here(); tests of what the backend
// declares or picks at a named level loop over every level.
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernels.hpp"

namespace gptoss::test {

// Every level, lowest first.
inline std::vector<std::string> cpu_levels() {
  std::vector<std::string> out;
  for (cpu::Isa isa : cpu::kAllIsas) out.emplace_back(cpu::isa_name(isa));
  return out;
}

// The levels this CPU runs as themselves (cpuid; scalar everywhere), lowest first.
inline std::vector<std::string> cpu_levels_here() {
  std::vector<std::string> out;
  for (cpu::Isa isa : cpu::kAllIsas)
    if (cpu::isa_supported(isa)) out.emplace_back(cpu::isa_name(isa));
  return out;
}

// Sets GPTOSS_CPU_ISA (read when a CPU device opens) for its lifetime and then restores the
// caller's value, also when a failed REQUIRE leaves the scope early: a test run under
// GPTOSS_CPU_ISA=<level> (ctest's invariance.<level>) keeps its level for the tests after.
class ScopedCpuLevel {
 public:
  explicit ScopedCpuLevel(const std::string& level) {
    if (const char* env = std::getenv("GPTOSS_CPU_ISA")) saved_ = env, had_ = true;
    setenv("GPTOSS_CPU_ISA", level.c_str(), 1);
  }
  ~ScopedCpuLevel() {
    if (had_) setenv("GPTOSS_CPU_ISA", saved_.c_str(), 1);
    else unsetenv("GPTOSS_CPU_ISA");
  }
  ScopedCpuLevel(const ScopedCpuLevel&) = delete;
  ScopedCpuLevel& operator=(const ScopedCpuLevel&) = delete;

 private:
  std::string saved_;
  bool had_ = false;
};

}  // namespace gptoss::test
