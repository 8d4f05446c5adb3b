// Non-x86 builds: the SIMD attention tables are the scalar one (isa_detect never reports a
// SIMD level here, so none of them is selected).
#include "attention_kernels.hpp"

namespace gptoss::cpu {
extern const AttnKernels kAttnKernelsScalar;
extern const AttnKernels kAttnKernelsAvx2;
extern const AttnKernels kAttnKernelsAvx512;
const AttnKernels kAttnKernelsAvx2 = kAttnKernelsScalar;
const AttnKernels kAttnKernelsAvx512 = kAttnKernelsScalar;
extern const AttnBf16Kernels* const kAttnBf16KernelsAvx512;
const AttnBf16Kernels* const kAttnBf16KernelsAvx512 = nullptr;
}  // namespace gptoss::cpu
