// Non-x86 builds: the SIMD tables are the scalar one, and the int8 kernels the reference
// (isa_detect never reports a SIMD level here, so none of these is selected).
#include "kernels.hpp"
#include "dense_bf16_kernels.hpp"
#include "kernels_avx2_int8.hpp"

namespace gptoss::cpu {
extern const Kernels kKernelsScalar;
extern const Kernels kKernelsAvx2;
extern const Kernels kKernelsAvx512;
const Kernels kKernelsAvx2 = kKernelsScalar;
const Kernels kKernelsAvx512 = kKernelsScalar;
void matmul_mxfp4_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy) {
  matmul_mxfp4_q8_reference(w, r0, n_rows, x, t0, n_tok, y, ldy);
}
void gemv_mxfp4_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                              size_t t0, size_t n_tok, float* y, size_t ldy) {
  for (size_t t = 0; t < n_tok; ++t) matmul_mxfp4_q8_reference(w, r0, n_rows, x, t0 + t, 1, y + t * ldy, ldy);
}
void quantize_q8_avx512vnni(const float* x, size_t ldx, size_t n_tok, Q8Acts& out) {
  quantize_q8_reference(x, ldx, n_tok, out);
}
void quantize_q8_avx2(const float* x, size_t ldx, size_t n_tok, Q8Acts& out) {
  quantize_q8_reference(x, ldx, n_tok, out);
}
void matmul_mxfp4_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                          size_t n_tok, float* y, size_t ldy) {
  matmul_mxfp4_q8_reference(w, r0, n_rows, x, t0, n_tok, y, ldy);
}
void matmul_mxfp4_q8_avxvnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                             size_t t0, size_t n_tok, float* y, size_t ldy) {
  matmul_mxfp4_q8_reference(w, r0, n_rows, x, t0, n_tok, y, ldy);
}
void gemv_mxfp4_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                        size_t n_tok, float* y, size_t ldy) {
  gemv_mxfp4_q8_avx512vnni(w, r0, n_rows, x, t0, n_tok, y, ldy);
}
void gemv_mxfp4_q8_avxvnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                           size_t n_tok, float* y, size_t ldy) {
  gemv_mxfp4_q8_avx512vnni(w, r0, n_rows, x, t0, n_tok, y, ldy);
}
extern const DenseBf16Kernels* const kDenseBf16KernelsAvx512;
const DenseBf16Kernels* const kDenseBf16KernelsAvx512 = nullptr;
}  // namespace gptoss::cpu
