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

// The bf16-pair reference (AttnBf16Kernels). Sums in float, the pair's two products added in
// order; vdpbf16ps may round differently, within the tests' tolerance.
uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
float pair_lo(float pair) { return bf16_to_f32(uint16_t(bits_of(pair) & 0xffffu)); }
float pair_hi(float pair) { return bf16_to_f32(uint16_t(bits_of(pair) >> 16)); }
float make_pair(uint16_t lo, uint16_t hi) {
  const uint32_t b = uint32_t(lo) | uint32_t(hi) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

void round_pairs(const float* x, size_t n_pairs, float* out) {
  for (size_t i = 0; i < n_pairs; ++i) out[i] = make_pair(f32_to_bf16(x[2 * i]), f32_to_bf16(x[2 * i + 1]));
}

void scores_bf16(const float* q2, size_t n_rows, size_t hd2, const float* kt2, float* s) {
  for (size_t r = 0; r < n_rows; ++r)
    for (size_t i = 0; i < kAttnTile; ++i) {
      float sum = 0.0f;
      for (size_t p = 0; p < hd2; ++p) {
        const float q = q2[r * hd2 + p], k = kt2[p * kAttnTile + i];
        sum += pair_lo(q) * pair_lo(k) + pair_hi(q) * pair_hi(k);
      }
      s[r * kAttnTile + i] = sum;
    }
}

void pair_rows(const void* const* rows, size_t n, size_t hd, float* vt2) {
  for (size_t j = 0; 2 * j < n; ++j)
    for (size_t d = 0; d < hd; ++d) {
      const uint16_t lo = static_cast<const uint16_t*>(rows[2 * j])[d];
      const uint16_t hi = 2 * j + 1 < n ? static_cast<const uint16_t*>(rows[2 * j + 1])[d] : 0;
      vt2[j * hd + d] = make_pair(lo, hi);
    }
}

void pv_bf16(const float* p, size_t n_rows, const float* vt2, size_t n, size_t hd,
             const float* corr, float* acc) {
  for (size_t r = 0; r < n_rows; ++r) {
    float* a = acc + r * hd;
    for (size_t d = 0; d < hd; ++d) a[d] *= corr[r];
    for (size_t j = 0; 2 * j < n; ++j) {
      const float p0 = bf16_to_f32(f32_to_bf16(p[r * kAttnTile + 2 * j]));
      const float p1 = bf16_to_f32(f32_to_bf16(p[r * kAttnTile + 2 * j + 1]));
      for (size_t d = 0; d < hd; ++d) a[d] += p0 * pair_lo(vt2[j * hd + d]) + p1 * pair_hi(vt2[j * hd + d]);
    }
  }
}

}  // namespace

namespace scalar {
extern const AttnKernels kAttention;
const AttnKernels kAttention = {
    .load_k_tile = load_k_tile,
    .widen_rows = widen_rows,
    .scores = scores,
    .softmax_step = softmax_step,
    .pv = pv,
};
}  // namespace scalar

namespace scalar {
extern const AttnBf16Kernels kAttentionBf16;
const AttnBf16Kernels kAttentionBf16 = {
    .round_pairs = round_pairs,
    .scores = scores_bf16,
    .pair_rows = pair_rows,
    .pv = pv_bf16,
};
}  // namespace scalar

}  // namespace gptoss::cpu
