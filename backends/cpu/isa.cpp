// Instruction-set selection: cpuid at device_open, optionally lowered by GPTOSS_CPU_ISA.
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "kernels.hpp"
#include "kernels_avx2_int8.hpp"

namespace gptoss::cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512vnni: return "avx512vnni";
  }
  return "?";
}

Isa isa_detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return __builtin_cpu_supports("avx512vnni") ? Isa::avx512vnni : Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
  return Isa::scalar;
}

bool cpu_has_avxvnni() {
#if defined(__x86_64__)
  // AVX-VNNI is CPUID.(EAX=7, ECX=1):EAX bit 4. Read directly: clang 14's
  // __builtin_cpu_supports does not know "avxvnni". AVX2 usable implies the OS saves YMM state.
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) &&
         (eax & (1u << 4)) != 0;
#else
  return false;
#endif
}

bool cpu_has_avx512bf16() {  // asked by every attention call: cpuid once
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return has;
#else
  return false;
#endif
}

Isa isa_selected() {
  const Isa best = isa_detect();
  const char* env = std::getenv("GPTOSS_CPU_ISA");
  if (env == nullptr) return best;
  Isa want = best;
  if (std::strcmp(env, "scalar") == 0) want = Isa::scalar;
  else if (std::strcmp(env, "avx2") == 0) want = Isa::avx2;
  else if (std::strcmp(env, "avx512") == 0) want = Isa::avx512;
  else if (std::strcmp(env, "avx512vnni") == 0) want = Isa::avx512vnni;
  return int(want) < int(best) ? want : best;
}

}  // namespace gptoss::cpu
