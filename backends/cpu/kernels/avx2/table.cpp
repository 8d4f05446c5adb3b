// The avx2 level's table (AVX2 + FMA + F16C: Haswell to Comet Lake, Zen 1-3).
#include "attention_kernels.hpp"
#include "avx2/avx2.hpp"
#include "avx2/int16.hpp"
#include "avx2/int8.hpp"

namespace gptoss::cpu {

extern const Kernels kKernelsAvx2;
const Kernels kKernelsAvx2 = {
    .isa = Isa::avx2,
    .matmul = avx2::matmul,
    .fp32 = &avx2::kFp32Paths,
    .swiglu = swiglu_reference,
    .sum_exp = avx2::sum_exp,
    .quantize_q8 = quantize_q8_avx2,
    .matmul_mxfp4_q8 = matmul_mxfp4_q8_avx2,
    .gemv_mxfp4_q8 = gemv_mxfp4_q8_avx2,
    .matmul_q8_0_q8 = nullptr,
    .gemv_q8_0_q8 = nullptr,
    .quantize_q16 = quantize_q16_avx2,
    .matmul_q8_0_q16 = nullptr,
    .attention = &avx2::kAttention,
    .attention_bf16 = nullptr,
    .dense_bf16 = nullptr,
    .matmul_bf16_lanes = nullptr,
    .repack_bf16_lanes = nullptr,
    .matmul_q8_0_lanes_q16 = matmul_q8_0_lanes_q16_avx2,
    .repack_q8_0_lanes = repack_q8_0_lanes,
    .matmul_mxfp4_lanes_q8 = matmul_mxfp4_lanes_q8_avx2,
    .repack_mxfp4_lanes = repack_mxfp4_lanes,
};

}  // namespace gptoss::cpu
