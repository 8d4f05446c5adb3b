// The avx512 level's table (AVX-512 F/BW/VL/DQ without VNNI: Skylake-SP). It has no int8
// kernels of its own and no AVX-VNNI: the fast mode's MXFP4 matmuls are avx2's vpmaddubsw
// kernels, which still run at about twice the rate of its fp32 MXFP4 kernels, and its Q8_0
// lanes avx2's vpmaddwd kernel (int16 activations; about twice its fp32 Q8_0 GEMV).
#include "attention_kernels.hpp"
#include "avx2/int16.hpp"
#include "avx2/int8.hpp"
#include "avx512/avx512.hpp"

namespace gptoss::cpu {

extern const Kernels kKernelsAvx512;
const Kernels kKernelsAvx512 = {
    .isa = Isa::avx512,
    .matmul = avx512::matmul,
    .fp32 = &avx512::kFp32Paths,
    .swiglu = avx512::swiglu,
    .sum_exp = avx512::sum_exp,
    .quantize_q8 = quantize_q8_avx2,
    .matmul_mxfp4_q8 = matmul_mxfp4_q8_avx2,
    .gemv_mxfp4_q8 = gemv_mxfp4_q8_avx2,
    .matmul_q8_0_q8 = nullptr,
    .gemv_q8_0_q8 = nullptr,
    .quantize_q16 = quantize_q16_avx2,
    .matmul_q8_0_q16 = nullptr,
    .attention = &avx512::kAttention,
    .attention_bf16 = nullptr,
    .dense_bf16 = nullptr,
    .matmul_bf16_lanes = avx512::matmul_bf16_lanes,
    .repack_bf16_lanes = avx512::repack_bf16_lanes,
    .matmul_q8_0_lanes_q16 = matmul_q8_0_lanes_q16_avx2,
    .repack_q8_0_lanes = repack_q8_0_lanes,
    .matmul_mxfp4_lanes_q8 = matmul_mxfp4_lanes_q8_avx2,
    .repack_mxfp4_lanes = repack_mxfp4_lanes,
};

}  // namespace gptoss::cpu
