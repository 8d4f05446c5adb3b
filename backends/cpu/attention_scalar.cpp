// The reference attention tile kernels (see attention_kernels.hpp), written plainly, and the
// table selection. The SIMD tables are tested against these.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "attention_kernels.hpp"
#include "formats.hpp"

namespace gptoss::cpu {
namespace {

void load_k_tile(const void* const* rows, size_t n, size_t hd, int bf16, float* kt) {
  for (size_t i = 0; i < kAttnTile; ++i)
    for (size_t d = 0; d < hd; ++d) {
      float x = 0.0f;
      if (i < n)
        x = bf16 ? bf16_to_f32(static_cast<const uint16_t*>(rows[i])[d])
                 : static_cast<const float*>(rows[i])[d];
      kt[d * kAttnTile + i] = x;
    }
}

void widen_rows(const void* const* rows, size_t n, size_t hd, float* vt) {
  for (size_t i = 0; i < n; ++i)
    for (size_t d = 0; d < hd; ++d) vt[i * hd + d] = bf16_to_f32(static_cast<const uint16_t*>(rows[i])[d]);
}

void scores(const float* q, size_t n_rows, size_t hd, const float* kt, float* s) {
  for (size_t r = 0; r < n_rows; ++r)
    for (size_t i = 0; i < kAttnTile; ++i) {
      float sum = 0.0f;
      for (size_t d = 0; d < hd; ++d) sum += q[r * hd + d] * kt[d * kAttnTile + i];
      s[r * kAttnTile + i] = sum;
    }
}

void softmax_step(float* s, size_t n_rows, const int32_t* row_begin, const int32_t* row_end,
                  int32_t j0, size_t n, float* m, float* l, float* corr) {
  for (size_t r = 0; r < n_rows; ++r) {
    float* sr = s + r * kAttnTile;
    const int32_t lo = std::max(row_begin[r] - j0, 0), hi = std::min(row_end[r] - j0, int32_t(n));
    if (lo >= hi) {  // no visible key here: nothing changes (and no -inf - -inf)
      std::memset(sr, 0, kAttnTile * sizeof(float));
      corr[r] = 1.0f;
      continue;
    }
    float mx = -std::numeric_limits<float>::infinity();
    for (int32_t i = lo; i < hi; ++i) mx = std::max(mx, sr[i]);
    const float m_new = std::max(m[r], mx);
    corr[r] = std::exp(m[r] - m_new);  // m[r] = -inf: 0, and the accumulator is 0 anyway
    float sum = 0.0f;
    for (int32_t i = 0; i < int32_t(kAttnTile); ++i) {
      sr[i] = i >= lo && i < hi ? std::exp(sr[i] - m_new) : 0.0f;
      sum += sr[i];
    }
    l[r] = l[r] * corr[r] + sum;
    m[r] = m_new;
  }
}

void pv(const float* p, size_t n_rows, const float* const* v, size_t n, size_t hd,
        const float* corr, float* acc) {
  for (size_t r = 0; r < n_rows; ++r) {
    float* a = acc + r * hd;
    for (size_t d = 0; d < hd; ++d) a[d] *= corr[r];
    for (size_t i = 0; i < n; ++i)
      for (size_t d = 0; d < hd; ++d) a[d] += p[r * kAttnTile + i] * v[i][d];
  }
}

}  // namespace

extern const AttnKernels kAttnKernelsAvx2;
extern const AttnKernels kAttnKernelsAvx512;
extern const AttnKernels kAttnKernelsScalar;
const AttnKernels kAttnKernelsScalar = {load_k_tile, widen_rows, scores, softmax_step, pv};

const AttnKernels& attention_kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx512vnni:
    case Isa::avx512: return kAttnKernelsAvx512;
    case Isa::avx2: return kAttnKernelsAvx2;
    case Isa::scalar: break;
  }
  return kAttnKernelsScalar;
}

}  // namespace gptoss::cpu
