// The kernel levels: one row each (name, what cpuid must report, table), and the one lookup
// of a level's table. The SIMD levels exist on x86-64 only: this is the one place that says so
// in code (CMakeLists.txt builds their folders there only).
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "attention_kernels.hpp"
#include "dense_bf16_kernels.hpp"
#include "kernels.hpp"

namespace gptoss::cpu {

extern const Kernels kKernelsScalar;  // scalar/table.cpp
#if defined(__x86_64__)
extern const Kernels kKernelsAvx2;        // avx2/table.cpp
extern const Kernels kKernelsAvx2Vnni;    // avx2vnni/table.cpp
extern const Kernels kKernelsAvx512;      // avx512/table.cpp
extern const Kernels kKernelsAvx512Vnni;  // avx512vnni/table.cpp
extern const Kernels kKernelsAvx512Bf16;  // avx512bf16/table.cpp
#endif

namespace {

bool always() { return true; }

#if defined(__x86_64__)
bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
bool has_avx2vnni() { return has_avx2() && cpu_has_avxvnni(); }
bool has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && has_avx2();
}
bool has_avx512vnni() { return has_avx512() && __builtin_cpu_supports("avx512vnni"); }
bool has_avx512bf16() { return has_avx512vnni() && __builtin_cpu_supports("avx512bf16"); }
#endif

struct Level {
  Isa isa;
  const char* name;     // GPTOSS_CPU_ISA's value for it
  bool (*supported)();  // what cpuid must report
  const Kernels* table;
};

// In the order of Isa.
constexpr Level kLevels[] = {
    // isa            name          supported        table
    {Isa::scalar, "scalar", always, &kKernelsScalar},
#if defined(__x86_64__)
    {Isa::avx2, "avx2", has_avx2, &kKernelsAvx2},
    {Isa::avx2vnni, "avx2vnni", has_avx2vnni, &kKernelsAvx2Vnni},
    {Isa::avx512, "avx512", has_avx512, &kKernelsAvx512},
    {Isa::avx512vnni, "avx512vnni", has_avx512vnni, &kKernelsAvx512Vnni},
    {Isa::avx512bf16, "avx512bf16", has_avx512bf16, &kKernelsAvx512Bf16},
#endif
};

const Level* level_of(Isa isa) {
  for (const Level& l : kLevels)
    if (l.isa == isa) return &l;
  return nullptr;  // a SIMD level off x86
}

}  // namespace

const char* isa_name(Isa isa) {
  const Level* l = level_of(isa);
  return l != nullptr ? l->name : "?";
}

bool isa_supported(Isa isa) {
  const Level* l = level_of(isa);
  return l != nullptr && l->supported();
}

const Kernels& kernels_for(Isa isa) {
  const Level* l = level_of(isa);
  return l != nullptr ? *l->table : kKernelsScalar;
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

// The sub-tables, by the one lookup.
const AttnKernels& attention_kernels_for(Isa isa) { return *kernels_for(isa).attention; }
const AttnBf16Kernels* attention_bf16_kernels_for(Isa isa) {
  return kernels_for(isa).attention_bf16;
}
const DenseBf16Kernels* dense_bf16_kernels_for(Isa isa) { return kernels_for(isa).dense_bf16; }

}  // namespace gptoss::cpu
