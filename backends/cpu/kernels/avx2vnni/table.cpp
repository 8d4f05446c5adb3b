// The avx2vnni level's table: the avx2 level with the int8 MXFP4 kernels on AVX-VNNI's VEX
// vpdpbusd (Alder Lake and later, Zen 5 when forced below its AVX-512 levels). Same results as
// avx2's int8 kernels (integer block sums), one instruction where those take two or three.
#include "attention_kernels.hpp"
#include "avx2/avx2.hpp"
#include "avx2/int8.hpp"
#include "avx2vnni/avx2vnni.hpp"

namespace gptoss::cpu {

extern const Kernels kKernelsAvx2Vnni;
const Kernels kKernelsAvx2Vnni = {
    .isa = Isa::avx2vnni,
    .matmul = avx2::matmul,
    .fp32 = &avx2::kFp32Paths,
    .swiglu = swiglu_reference,
    .sum_exp = avx2::sum_exp,
    .quantize_q8 = quantize_q8_avx2,
    .matmul_mxfp4_q8 = matmul_mxfp4_q8_avxvnni,
    .gemv_mxfp4_q8 = gemv_mxfp4_q8_avxvnni,
    .matmul_q8_0_q8 = nullptr,
    .gemv_q8_0_q8 = nullptr,
    .quantize_q16 = nullptr,
    .matmul_q8_0_q16 = nullptr,
    .attention = &avx2::kAttention,
    .attention_bf16 = nullptr,
    .dense_bf16 = nullptr,
    .matmul_bf16_lanes = nullptr,
    .repack_bf16_lanes = nullptr,
    .matmul_q8_0_lanes_q16 = nullptr,
    .repack_q8_0_lanes = nullptr,
    .matmul_mxfp4_lanes_q8 = nullptr,
    .repack_mxfp4_lanes = nullptr,
};

}  // namespace gptoss::cpu
