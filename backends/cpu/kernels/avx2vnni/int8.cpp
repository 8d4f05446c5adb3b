// The MXFP4 x int8 matmul of the avx2vnni level: avx2's kernels (avx2/int8_body.hpp) with
// AVX-VNNI's VEX vpdpbusd (built with -mavxvnni on top of the AVX2 flags). Same results as
// avx2/int8.cpp, one instruction per 32 u8 x s8 products and their sum into int32 instead of
// two or three.
#include "avx2/int8_body.hpp"
#include "avx2vnni/avx2vnni.hpp"

namespace gptoss::cpu {
namespace {

struct VnniDot {
  static __m256i dot2(__m256i acc, __m256i a0, __m256i b0, __m256i a1, __m256i b1) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, a0, b0), a1, b1);
  }
  static __m256i dot4(__m256i acc, __m256i a0, __m256i b0, __m256i a1, __m256i b1, __m256i a2,
                      __m256i b2, __m256i a3, __m256i b3) {
    return dot2(dot2(acc, a0, b0, a1, b1), a2, b2, a3, b3);
  }
};

}  // namespace

void matmul_mxfp4_q8_avxvnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                             size_t t0, size_t n_tok, float* y, size_t ldy) {
  matmul_q8<VnniDot>(w, r0, n_rows, x, t0, n_tok, y, ldy);
}

void gemv_mxfp4_q8_avxvnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                           size_t n_tok, float* y, size_t ldy) {
  gemv_step<VnniDot>(w, r0, n_rows, x, t0, n_tok, y, ldy);
}

}  // namespace gptoss::cpu
