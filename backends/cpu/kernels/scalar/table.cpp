// The scalar level's table: the reference kernels. Devices at this level run the reference
// ops (ops/reference.cpp) and use only sum_exp from it; the tests compare every SIMD table
// with this one.
#include "attention_kernels.hpp"
#include "dense_bf16_kernels.hpp"
#include "scalar/scalar.hpp"

namespace gptoss::cpu {

extern const Kernels kKernelsScalar;
const Kernels kKernelsScalar = {
    .isa = Isa::scalar,
    .matmul = scalar::matmul,
    .fp32 = &scalar::kFp32Paths,
    .swiglu = swiglu_reference,
    .sum_exp = sum_exp_reference,
    .quantize_q8 = nullptr,
    .matmul_mxfp4_q8 = nullptr,
    .gemv_mxfp4_q8 = nullptr,
    .matmul_q8_0_q8 = nullptr,
    .gemv_q8_0_q8 = nullptr,
    .quantize_q16 = nullptr,
    .matmul_q8_0_q16 = nullptr,
    .attention = &scalar::kAttention,
    .attention_bf16 = &scalar::kAttentionBf16,
    .dense_bf16 = &scalar::kDenseBf16,
    .matmul_bf16_lanes = nullptr,
    .repack_bf16_lanes = nullptr,
    .matmul_q8_0_lanes_q16 = nullptr,
    .repack_q8_0_lanes = nullptr,
    .matmul_mxfp4_lanes_q8 = nullptr,
    .repack_mxfp4_lanes = nullptr,
};

}  // namespace gptoss::cpu
