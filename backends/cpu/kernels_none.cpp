// Non-x86 builds: the SIMD tables are the scalar one.
#include "kernels.hpp"

namespace gptoss::cpu {
extern const Kernels kKernelsScalar;
extern const Kernels kKernelsAvx2;
extern const Kernels kKernelsAvx512;
const Kernels kKernelsAvx2 = kKernelsScalar;
const Kernels kKernelsAvx512 = kKernelsScalar;
}  // namespace gptoss::cpu
