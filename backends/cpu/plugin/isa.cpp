// The level a device runs at: the best one cpuid reports, optionally lowered by
// GPTOSS_CPU_ISA. The levels and their cpuid tests are rows of kernels/levels.cpp.
#include <cstdlib>
#include <cstring>

#include "kernels.hpp"

namespace gptoss::cpu {

Isa isa_detect() {
  Isa best = Isa::scalar;
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) best = isa;
  return best;
}

Isa isa_selected() {
  const Isa best = isa_detect();
  const char* env = std::getenv("GPTOSS_CPU_ISA");
  if (env == nullptr) return best;
  for (Isa want : kAllIsas) {
    if (std::strcmp(env, isa_name(want)) != 0) continue;
    if (int(want) >= int(best)) return best;
    // The best supported level at or below the one named (avx512 does not include avx2vnni).
    for (int l = int(want); l > 0; --l)
      if (isa_supported(Isa(l))) return Isa(l);
    return Isa::scalar;
  }
  return best;
}

}  // namespace gptoss::cpu
