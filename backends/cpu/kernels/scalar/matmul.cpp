// The scalar kernels: the reference of the SIMD levels' kernels, and the fallback for dtypes
// a SIMD level does not specialise; the weight decoders; the Q8 activation storage.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "cpu_backend.hpp"
#include "formats.hpp"
#include "kernels.hpp"
#include "q8_storage.hpp"

namespace gptoss::cpu {

void repack_bf16_lanes(const uint16_t* src, size_t cols, size_t i0, size_t i1, uint16_t* dst) {
  for (size_t i = i0; i < i1; ++i)
    for (size_t r = 0; r < 16; ++r) {
      const uint16_t* s = src + (16 * i + r) * cols;
      uint16_t* d = dst + 16 * i * cols + 2 * r;
      for (size_t k = 0; k < cols; ++k) d[32 * (k / 2) + k % 2] = s[k];
    }
}

namespace {
// Block b of a Q8_0 row, in either layout: its weights into wq, its f16 step returned.
uint16_t q8_0_block_of(const Weight& w, size_t row, size_t b, int8_t* wq) {
  uint16_t e16;
  if (w.q8_0_lanes) {
    const uint8_t* blk = w.data + (row / 16) * 16 * w.row_bytes + kQ8_0LanesBlockBytes * b;
    const size_t r = row % 16;
    for (size_t j = 0; j < 32; ++j) wq[j] = int8_t(blk[32 * (j / 2) + 2 * r + j % 2]);
    std::memcpy(&e16, blk + kQ8_0LanesStepsAt + 2 * r, 2);
    return e16;
  }
  const uint8_t* blk = w.data + row * w.row_bytes + kQ8_0BlockBytes * b;
  std::memcpy(wq, blk + 2, 32);
  std::memcpy(&e16, blk, 2);
  return e16;
}
}  // namespace

void repack_q8_0_lanes(const uint8_t* src, size_t cols, size_t i0, size_t i1, uint8_t* dst) {
  const size_t nb = cols / 32, row_bytes = kQ8_0BlockBytes * nb;
  for (size_t i = i0; i < i1; ++i)
    for (size_t r = 0; r < 16; ++r) {
      const uint8_t* s = src + (16 * i + r) * row_bytes;
      uint8_t* tile = dst + 16 * i * row_bytes;
      for (size_t b = 0; b < nb; ++b) {
        uint8_t* d = tile + kQ8_0LanesBlockBytes * b;
        for (size_t p = 0; p < 16; ++p) {
          d[32 * p + 2 * r] = s[kQ8_0BlockBytes * b + 2 + 2 * p];
          d[32 * p + 2 * r + 1] = s[kQ8_0BlockBytes * b + 3 + 2 * p];
        }
        d[kQ8_0LanesStepsAt + 2 * r] = s[kQ8_0BlockBytes * b];
        d[kQ8_0LanesStepsAt + 2 * r + 1] = s[kQ8_0BlockBytes * b + 1];
      }
    }
}

void repack_mxfp4_lanes(const uint8_t* codes, const uint8_t* scales, size_t cols, size_t i0,
                        size_t i1, uint8_t* dst_codes, uint8_t* dst_scales) {
  const size_t nb = cols / 32;
  for (size_t i = i0; i < i1; ++i)
    for (size_t r = 0; r < 16; ++r) {
      const uint8_t* s = codes + (16 * i + r) * 16 * nb;
      for (size_t b = 0; b < nb; ++b) {
        for (size_t g = 0; g < 4; ++g)
          std::memcpy(dst_codes + 16 * i * 16 * nb + mxfp4_lanes_code_at(b, nb, g, r),
                      s + 16 * b + 4 * g, 4);
        dst_scales[16 * i * nb + 16 * mxfp4_lanes_pos(b, nb) + r] = scales[(16 * i + r) * nb + b];
      }
    }
}

void matmul_bf16_lanes_reference(const Weight& w, size_t r0, size_t n_rows, const float* x,
                                 size_t ldx, size_t n_tok, float* y, size_t ldy) {
  const auto* data = reinterpret_cast<const uint16_t*>(w.data);
  for (size_t t = 0; t < n_tok; ++t)
    for (size_t i = 0; i < n_rows; ++i) {
      const size_t r = r0 + i;
      const uint16_t* lane = data + (r / 16) * 16 * w.cols + 2 * (r % 16);
      float acc = 0.0f;
      for (size_t k = 0; k < w.cols; ++k)
        acc = std::fma(bf16_to_f32(lane[32 * (k / 2) + k % 2]), x[t * ldx + k], acc);
      y[t * ldy + i] = acc;
    }
}

void decode_row(const Weight& w, size_t row, float* out) {
  if (w.bf16_lanes) {
    const uint16_t* tile = reinterpret_cast<const uint16_t*>(w.data) + (row / 16) * 16 * w.cols;
    for (size_t i = 0; i < w.cols; ++i)
      out[i] = bf16_to_f32(tile[32 * (i / 2) + 2 * (row % 16) + i % 2]);
    return;
  }
  if (w.q8_0_lanes) {
    for (size_t b = 0; b < w.cols / 32; ++b) {
      int8_t wq[32];
      const float e = f16_to_f32(q8_0_block_of(w, row, b, wq));
      for (size_t j = 0; j < 32; ++j) out[32 * b + j] = e * float(wq[j]);
    }
    return;
  }
  if (w.mxfp4_lanes) {
    const size_t nb = w.cols / 32, r = row % 16;
    const uint8_t* codes = w.data + (row / 16) * 16 * w.row_bytes;
    const uint8_t* scales = w.scales + (row / 16) * 16 * nb;
    for (size_t b = 0; b < nb; ++b) {
      uint8_t block[16];
      for (size_t g = 0; g < 4; ++g)
        std::memcpy(block + 4 * g, codes + mxfp4_lanes_code_at(b, nb, g, r), 4);
      mxfp4_decode_block(block, scales[16 * mxfp4_lanes_pos(b, nb) + r], out + 32 * b);
    }
    return;
  }
  const uint8_t* p = w.data + row * w.row_bytes;
  switch (w.dtype) {
    case gptoss_dtype_f32: std::memcpy(out, p, w.cols * 4); break;
    case gptoss_dtype_bf16:
      for (size_t i = 0; i < w.cols; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = bf16_to_f32(h);
      }
      break;
    case gptoss_dtype_f16:
      for (size_t i = 0; i < w.cols; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      break;
    case gptoss_dtype_q8_0:
      for (size_t b = 0; b < w.cols / 32; ++b) q8_0_decode_block(p + 34 * b, out + 32 * b);
      break;
    case gptoss_dtype_mxfp4: {
      const uint8_t* s = w.scales + row * (w.cols / 32);
      for (size_t b = 0; b < w.cols / 32; ++b) mxfp4_decode_block(p + 16 * b, s[b], out + 32 * b);
      break;
    }
  }
}

const float* e8m0_table() {
  static const auto table = [] {
    std::vector<float> t(256);
    for (int e = 0; e < 256; ++e) t[size_t(e)] = gptoss_e8m0_to_f32(uint8_t(e));
    return t;
  }();
  return table.data();
}

namespace {

// Columns [c0, c0 + n) of row `row` through a decode of the whole row.
void decode_range_of_row(const Weight& w, size_t row, size_t c0, size_t n, float* out) {
  thread_local std::vector<float> whole;
  whole.resize(w.cols);
  decode_row(w, row, whole.data());
  std::copy(whole.begin() + std::ptrdiff_t(c0), whole.begin() + std::ptrdiff_t(c0 + n), out);
}

}  // namespace

void decode_row_range(const Weight& w, size_t row, size_t c0, size_t n, float* out) {
  if (w.bf16_lanes || w.q8_0_lanes || w.mxfp4_lanes) return decode_range_of_row(w, row, c0, n, out);
  const uint8_t* p = w.data + row * w.row_bytes;
  switch (w.dtype) {
    case gptoss_dtype_f32: std::memcpy(out, p + 4 * c0, n * 4); return;
    case gptoss_dtype_bf16:
    case gptoss_dtype_f16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * (c0 + i), 2);
        out[i] = w.dtype == gptoss_dtype_bf16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
      return;
    default:  // block formats
      decode_range_of_row(w, row, c0, n, out);
  }
}

void decode_row_kernel_order(const Weight& w, size_t row, float* out) {
  if (w.dtype != gptoss_dtype_mxfp4) {
    decode_row(w, row, out);
    return;
  }
  const uint8_t* p = w.data + row * w.row_bytes;
  const uint8_t* s = w.scales + row * (w.cols / 32);
  for (size_t b = 0; b < w.cols / 32; ++b) {
    const float scale = gptoss_e8m0_to_f32(s[b]);
    for (size_t j = 0; j < 16; ++j) {
      out[32 * b + j] = gptoss_mxfp4_value(p[16 * b + j] & 0x0f) * scale;
      out[32 * b + 16 + j] = gptoss_mxfp4_value(uint8_t(p[16 * b + j] >> 4)) * scale;
    }
  }
}

void permute_for_mxfp4(const float* x, size_t ldx, size_t n_tok, size_t cols, float* dst) {
  for (size_t t = 0; t < n_tok; ++t)
    for (size_t j = 0; j < cols; ++j) dst[t * cols + mxfp4_kernel_pos(j)] = x[t * ldx + j];
}

void swiglu_reference(const float* h, const float* b, size_t n, float limit, float* out) {
  for (size_t i = 0; i < n; ++i) {
    float glu = h[2 * i] + (b ? b[2 * i] : 0.0f), lin = h[2 * i + 1] + (b ? b[2 * i + 1] : 0.0f);
    glu = std::min(glu, limit);
    lin = std::clamp(lin, -limit, limit);
    out[i] = glu / (1.0f + std::exp(-1.702f * glu)) * (lin + 1.0f);
  }
}

namespace {

float dot_scalar(const float* a, const float* b, size_t n) {
  float s = 0.0f;
  for (size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Each weight row is decoded once and used for every token.
void matmul_scalar(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                   size_t n_tok, float* y, size_t ldy) {
  thread_local std::vector<float> row;
  row.resize(w.cols);
  for (size_t i = 0; i < n_rows; ++i) {
    decode_row_kernel_order(w, r0 + i, row.data());
    for (size_t t = 0; t < n_tok; ++t) y[t * ldy + i] = dot_scalar(x + t * ldx, row.data(), w.cols);
  }
}

}  // namespace

namespace {
// max |x[j]| over a 32-block (the quantizers' step is this over 127 or 32767).
float block_amax(const float* x) {
  float amax = 0.0f;
  for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}
}  // namespace

void quantize_q8_reference(const float* x, size_t ldx, size_t n_tok, Q8Acts& out) {
  const size_t nb = out.cols / 32;
  for (size_t t = 0; t < n_tok; ++t) {
    const float* xr = x + t * ldx;
    int8_t* q = out.q + t * out.q_stride;
    for (size_t b = 0; b < out.b_stride; ++b) {
      float d = 0.0f;
      int32_t sum = 0;
      if (b < nb) {
        d = block_amax(xr + 32 * b) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (size_t j = 0; j < 32; ++j) {  // natural element j is kernel-order position
          const float v = std::clamp(std::nearbyint(xr[32 * b + j] * id), -127.0f, 127.0f);
          q[q8_pos(b, (j & 1) ? 16 + j / 2 : j / 2)] = int8_t(v);
          sum += int32_t(v);
        }
      }
      out.half_d[t * out.b_stride + b] = d * 0.5f;
      out.q12f[t * out.b_stride + b] = float(12 * sum);
      out.neg_q12[t * out.b_stride + b] = -12 * sum;
      out.neg_q128[t * out.b_stride + b] = -128 * sum;
    }
    for (size_t b = nb; b < out.q_stride / 32; ++b)
      for (size_t j = 0; j < 32; ++j) q[q8_pos(b, j)] = 0;
  }
}

void matmul_mxfp4_q8_reference(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                               size_t t0, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = w.cols / 32;
  for (size_t i = 0; i < n_rows; ++i) {
    const uint8_t* codes = w.data + (r0 + i) * w.row_bytes;
    const uint8_t* scales = w.scales + (r0 + i) * nb;
    for (size_t t = t0; t < t0 + n_tok; ++t) {
      const int8_t* q = x.q + t * x.q_stride;
      double acc = 0.0;
      for (size_t b = 0; b < nb; ++b) {
        int32_t s = 0;  // sum of (2v) q over the block, exact in integers
        for (size_t j = 0; j < 16; ++j) {
          const uint8_t c = codes[16 * b + j];
          s += int32_t(2.0f * gptoss_mxfp4_value(c & 15)) * q[q8_pos(b, j)];
          s += int32_t(2.0f * gptoss_mxfp4_value(uint8_t(c >> 4))) * q[q8_pos(b, 16 + j)];
        }
        acc += double(gptoss_e8m0_to_f32(scales[b]) * x.half_d[t * x.b_stride + b]) * double(s);
      }
      y[(t - t0) * ldy + i] = float(acc);
    }
  }
}

void matmul_q8_0_q8_reference(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                              size_t n_tok, float* y, size_t ldy) {
  const size_t nb = w.cols / 32;
  for (size_t i = 0; i < n_rows; ++i) {
    const uint8_t* row = w.data + (r0 + i) * w.row_bytes;
    for (size_t t = t0; t < t0 + n_tok; ++t) {
      const int8_t* q = x.q + t * x.q_stride;
      double acc = 0.0;
      for (size_t b = 0; b < nb; ++b) {
        const uint8_t* block = row + 34 * b;
        uint16_t e16;
        std::memcpy(&e16, block, 2);
        int32_t s = 0;                   // sum of w q over the block, exact in integers
        for (size_t j = 0; j < 32; ++j)  // natural element j sits at its kernel-order position
          s += int32_t(int8_t(block[2 + j])) * q[q8_pos(b, (j & 1) ? 16 + j / 2 : j / 2)];
        acc += double(2.0f * f16_to_f32(e16) * x.half_d[t * x.b_stride + b]) * double(s);
      }
      y[(t - t0) * ldy + i] = float(acc);
    }
  }
}

void quantize_q16_reference(const float* x, size_t ldx, size_t n_tok, Q16Acts& out) {
  const size_t nb = out.cols / 32;
  for (size_t t = 0; t < n_tok; ++t) {
    const float* xr = x + t * ldx;
    int16_t* q = out.q + t * out.q_stride;
    for (size_t b = 0; b < out.b_stride; ++b) {
      float d = 0.0f;
      if (b < nb) {
        d = block_amax(xr + 32 * b) / 32767.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (size_t j = 0; j < 32; ++j)
          q[32 * b + j] =
              int16_t(std::clamp(std::nearbyint(xr[32 * b + j] * id), -32767.0f, 32767.0f));
      } else {
        for (size_t j = 0; j < 32; ++j) q[32 * b + j] = 0;
      }
      out.d[t * out.b_stride + b] = d;
    }
  }
}

void matmul_q8_0_q16_reference(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                               size_t t0, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = w.cols / 32;
  for (size_t i = 0; i < n_rows; ++i) {
    for (size_t t = t0; t < t0 + n_tok; ++t) {
      const int16_t* q = x.q + t * x.q_stride;
      double acc = 0.0;
      for (size_t b = 0; b < nb; ++b) {
        int8_t wq[32];
        const uint16_t e16 = q8_0_block_of(w, r0 + i, b, wq);
        int64_t s = 0;  // sum of w q over the block, exact in integers
        for (size_t j = 0; j < 32; ++j) s += int64_t(wq[j]) * q[32 * b + j];
        acc += double(f16_to_f32(e16) * x.d[t * x.b_stride + b]) * double(s);
      }
      y[(t - t0) * ldy + i] = float(acc);
    }
  }
}

Q16Acts& Q16Storage::prepare(size_t n_tok, size_t cols) {
  const size_t q_stride = (cols + 511) / 512 * 512;
  const size_t b_stride = q_stride / 32;
  const size_t need = 64 + n_tok * (2 * q_stride + 4 * b_stride);
  if (bytes_.size() < need) bytes_.resize(need);
  uint8_t* p = bytes_.data();
  p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
  view_.n_tok = n_tok;
  view_.cols = cols;
  view_.q_stride = q_stride;
  view_.b_stride = b_stride;
  view_.q = reinterpret_cast<int16_t*>(p);
  view_.d = reinterpret_cast<float*>(p + n_tok * q_stride * 2);
  return view_;
}

void copy_q8_row(const Q8Acts& src, size_t i, Q8Acts& dst, size_t j) {
  std::memcpy(dst.q + j * dst.q_stride, src.q + i * src.q_stride, src.q_stride);
  std::memcpy(dst.half_d + j * dst.b_stride, src.half_d + i * src.b_stride, src.b_stride * 4);
  std::memcpy(dst.q12f + j * dst.b_stride, src.q12f + i * src.b_stride, src.b_stride * 4);
  std::memcpy(dst.neg_q12 + j * dst.b_stride, src.neg_q12 + i * src.b_stride, src.b_stride * 4);
  std::memcpy(dst.neg_q128 + j * dst.b_stride, src.neg_q128 + i * src.b_stride, src.b_stride * 4);
}

Q8Acts& Q8Storage::prepare(size_t n_tok, size_t cols) {
  const size_t q_stride = (cols + 127) / 128 * 128;
  const size_t b_stride = (cols / 32 + 15) / 16 * 16;
  const size_t need = 64 + n_tok * (q_stride + 16 * b_stride);
  if (bytes_.size() < need) bytes_.resize(need);
  uint8_t* p = bytes_.data();
  p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
  view_.n_tok = n_tok;
  view_.cols = cols;
  view_.q_stride = q_stride;
  view_.b_stride = b_stride;
  view_.q = reinterpret_cast<int8_t*>(p);
  view_.half_d = reinterpret_cast<float*>(p + n_tok * q_stride);
  view_.q12f = view_.half_d + n_tok * b_stride;
  view_.neg_q12 = reinterpret_cast<int32_t*>(view_.q12f + n_tok * b_stride);
  view_.neg_q128 = view_.neg_q12 + n_tok * b_stride;
  return view_;
}

double sum_exp_reference(const float* x, size_t n, float shift) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i)
    if (x[i] == x[i]) sum += std::exp(double(x[i]) - double(shift));  // NaN adds nothing
  return sum;
}

namespace scalar {
void matmul(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx, size_t n_tok,
            float* y, size_t ldy) {
  matmul_scalar(w, r0, n_rows, x, ldx, n_tok, y, ldy);
}
namespace {
bool no_pairs(gptoss_dtype) { return false; }
}  // namespace
extern const Fp32Paths kFp32Paths;
const Fp32Paths kFp32Paths = {matmul, matmul, no_pairs, matmul, matmul};
}  // namespace scalar

float* thread_scratch(size_t n, int slot) {
  struct Buf {
    float* p = nullptr;
    size_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[4];
  Buf& b = bufs[slot & 3];
  if (b.n < n) {
    std::free(b.p);
    const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    b.p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (b.p == nullptr) throw std::bad_alloc();
    b.n = n;
  }
  return b.p;
}

// For the SIMD tables: the dtypes they do not specialise.
void matmul_fallback(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                     size_t n_tok, float* y, size_t ldy) {
  matmul_scalar(w, r0, n_rows, x, ldx, n_tok, y, ldy);
}

}  // namespace gptoss::cpu
