// The avx512bf16 level's table: avx512vnni with the bf16-pair kernels of the fast mode (the
// attention over a bf16 cache, the unembedding of decode steps). Cooper Lake, Sapphire
// Rapids, Zen 4 and 5.
#include "attention_kernels.hpp"
#include "avx512/avx512.hpp"
#include "avx512bf16/avx512bf16.hpp"
#include "avx512vnni/avx512vnni.hpp"
#include "dense_bf16_kernels.hpp"

namespace gptoss::cpu {

extern const Kernels kKernelsAvx512Bf16;
const Kernels kKernelsAvx512Bf16 = {
    .isa = Isa::avx512bf16,
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
    .attention_bf16 = &avx512bf16::kAttentionBf16,
    .dense_bf16 = &avx512bf16::kDenseBf16,
    .matmul_bf16_lanes = avx512::matmul_bf16_lanes,
    .repack_bf16_lanes = avx512::repack_bf16_lanes,
    .matmul_q8_0_lanes_q16 = matmul_q8_0_lanes_q16_avx512vnni,
    .repack_q8_0_lanes = repack_q8_0_lanes,
    .matmul_mxfp4_lanes_q8 = matmul_mxfp4_lanes_q8_avx512vnni,
    .repack_mxfp4_lanes = repack_mxfp4_lanes_avx512vnni,
};

}  // namespace gptoss::cpu
