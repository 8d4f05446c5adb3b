// The avx512vnni level's table: avx512 with its own int8 kernels (Ice Lake, Cascade Lake).
#include "attention_kernels.hpp"
#include "avx512/avx512.hpp"
#include "avx512vnni/avx512vnni.hpp"

namespace gptoss::cpu {

extern const Kernels kKernelsAvx512Vnni;
const Kernels kKernelsAvx512Vnni = {
    .isa = Isa::avx512vnni,
    .matmul = avx512::matmul,
    .fp32 = &avx512::kFp32Paths,
    .swiglu = avx512::swiglu,
    .sum_exp = avx512::sum_exp,
    .quantize_q8 = quantize_q8_avx512vnni,
    .matmul_mxfp4_q8 = matmul_mxfp4_q8_avx512vnni,
    .gemv_mxfp4_q8 = gemv_mxfp4_q8_avx512vnni,
    .matmul_q8_0_q8 = matmul_q8_0_q8_avx512vnni,
    .gemv_q8_0_q8 = gemv_q8_0_q8_avx512vnni,
    .quantize_q16 = quantize_q16_avx512vnni,
    .matmul_q8_0_q16 = matmul_q8_0_q16_avx512vnni,
    .attention = &avx512::kAttention,
    .attention_bf16 = nullptr,
    .dense_bf16 = nullptr,
    .matmul_bf16_lanes = avx512::matmul_bf16_lanes,
    .repack_bf16_lanes = avx512::repack_bf16_lanes,
    .matmul_q8_0_lanes_q16 = matmul_q8_0_lanes_q16_avx512vnni,
    .repack_q8_0_lanes = repack_q8_0_lanes,
    .matmul_mxfp4_lanes_q8 = matmul_mxfp4_lanes_q8_avx512vnni,
    .repack_mxfp4_lanes = repack_mxfp4_lanes_avx512vnni,
};

}  // namespace gptoss::cpu
