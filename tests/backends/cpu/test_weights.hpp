#pragma once
// Random weights and activations for the CPU kernel tests: never zeros (a kernel that skips
// work or reads the wrong row must show), deterministic per seed.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu_backend.hpp"
#include "cpu_memory.hpp"
#include "formats.hpp"

namespace gptoss::cpu::test {

// A seed for tests that draw their shapes at random: a new one each run (the tests print it).
inline uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) | rd();
}

// Whether two results are the same bits (batch invariance: not merely close).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = d(rng);
    if (x == 0.0f) x = 0.25f;
  }
  return v;
}

// Random activations (natural order, n_tok rows of cols) with a few outliers, as in real
// residual streams, so the 32-blocks of the quantized kernels have very different steps.
inline std::vector<float> outlier_activations(size_t n_tok, size_t cols, uint32_t seed) {
  std::vector<float> x = random_floats(n_tok * cols, seed, -1.0f, 1.0f);
  for (size_t i = 0; i < x.size(); i += 37) x[i] *= 40.0f;
  for (size_t i = 5; i < x.size(); i += 101) x[i] *= 1e-3f;
  return x;
}

// A weight of shape [rows, cols] (or [experts, rows/experts, cols] with `experts` > 0) owning
// random data of `dtype`. MXFP4 scales are spread over 2^(min_exp) .. 2^(min_exp + 11).
inline Weight random_weight(gptoss_dtype dtype, size_t rows, size_t cols, uint32_t seed,
                            size_t experts = 0, int min_exp = -6) {
  Weight w;
  w.dtype = dtype;
  w.ndim = experts ? 3 : 2;
  if (experts) {
    w.shape[0] = int64_t(experts);
    w.shape[1] = int64_t(rows / experts);
    w.shape[2] = int64_t(cols);
  } else {
    w.shape[0] = int64_t(rows);
    w.shape[1] = int64_t(cols);
  }
  w.rows = rows;
  w.cols = cols;
  std::mt19937 rng(seed);
  const std::vector<float> vals = random_floats(rows * cols, seed ^ 0x9e3779b9u);
  switch (dtype) {
    case gptoss_dtype_f32:
      w.row_bytes = cols * 4;
      w.owned_data.resize(rows * w.row_bytes);
      std::memcpy(w.owned_data.data(), vals.data(), w.owned_data.size());
      break;
    case gptoss_dtype_bf16: {
      w.row_bytes = cols * 2;
      w.owned_data.resize(rows * w.row_bytes);
      for (size_t i = 0; i < rows * cols; ++i) {
        const uint16_t h = f32_to_bf16(vals[i]);
        std::memcpy(w.owned_data.data() + 2 * i, &h, 2);
      }
      break;
    }
    case gptoss_dtype_f16: {  // random halves: sign, exponent 2^-6 .. 2^1, all mantissas
      w.row_bytes = cols * 2;
      w.owned_data.resize(rows * w.row_bytes);
      for (size_t i = 0; i < rows * cols; ++i) {
        const uint16_t h = uint16_t((rng() & 1u) << 15 | (9u + rng() % 8u) << 10 | (rng() & 0x3ffu));
        std::memcpy(w.owned_data.data() + 2 * i, &h, 2);
      }
      break;
    }
    case gptoss_dtype_q8_0: {  // ggml blocks: f16 d in 2^-9 .. 2^-3, then all 256 int8 values
      w.row_bytes = cols / 32 * 34;
      w.owned_data.resize(rows * w.row_bytes);
      for (size_t b = 0; b < rows * cols / 32; ++b) {
        uint8_t* blk = w.owned_data.data() + 34 * b;
        const uint16_t d = uint16_t((6u + rng() % 7u) << 10 | (rng() & 0x3ffu));
        std::memcpy(blk, &d, 2);
        for (int j = 0; j < 32; ++j) blk[2 + j] = uint8_t(rng());
      }
      break;
    }
    case gptoss_dtype_mxfp4: {
      w.row_bytes = cols / 2;
      w.owned_data.resize(rows * w.row_bytes);
      w.owned_scales.resize(rows * cols / 32);
      for (auto& b : w.owned_data) b = uint8_t(rng());  // all 16 codes, both nibbles
      for (auto& s : w.owned_scales) s = uint8_t(127 + min_exp + int(rng() % 12));
      break;
    }
    default:
      break;
  }
  w.data = w.owned_data.data();
  w.scales = w.owned_scales.empty() ? nullptr : w.owned_scales.data();
  return w;
}

inline std::vector<Isa> supported_isas() {
  std::vector<Isa> v;
  for (Isa i : kAllIsas)
    if (isa_supported(i)) v.push_back(i);
  return v;
}

// The supported levels whose table has `field` (a kernel the level may leave null).
template <typename Field>
std::vector<Isa> isas_with(Field Kernels::*field) {
  std::vector<Isa> v;
  for (Isa isa : supported_isas())
    if (kernels_for(isa).*field != nullptr) v.push_back(isa);
  return v;
}

// The SIMD levels only: an op at Isa::scalar runs the reference itself, so comparing the two
// there proves nothing.
inline std::vector<Isa> simd_isas() {
  std::vector<Isa> v = supported_isas();
  v.erase(v.begin());
  return v;
}

// Experts [e0, e1) of an expert tensor [E, rows, cols] as a slice a device would hold
// (gptoss_tensor_desc::first_expert): the same memory, no copy.
inline Weight expert_slice(const Weight& w, size_t e0, size_t e1) {
  Weight s;
  const size_t E = size_t(w.shape[0]), per = w.rows / E;
  s.dtype = w.dtype;
  s.ndim = w.ndim;
  for (int i = 0; i < 4; ++i) s.shape[i] = w.shape[i];
  s.shape[0] = int64_t(e1 - e0);
  s.rows = (e1 - e0) * per;
  s.cols = w.cols;
  s.row_bytes = w.row_bytes;
  s.data = w.data + e0 * per * w.row_bytes;
  s.scales = w.scales ? w.scales + e0 * per * (w.cols / 32) : nullptr;
  s.first_expert = int32_t(e0);
  return s;
}

// The upload's description of w's bytes at `data` (w's own by default) as a persistent 2-D
// tensor `name` in `role`, as the loader hands a mapped checkpoint's tensor to weight_upload.
inline gptoss_tensor_desc persistent_desc(const Weight& w, const char* name,
                                          gptoss_tensor_role role, const void* data = nullptr) {
  gptoss_tensor_desc d{};
  d.struct_size = sizeof d;
  d.name = name;
  d.role = role;
  d.dtype = w.dtype;
  d.ndim = 2;
  d.shape[0] = int64_t(w.rows);
  d.shape[1] = int64_t(w.cols);
  d.data = data != nullptr ? data : w.data;
  d.data_size = w.rows * w.row_bytes;
  d.flags = GPTOSS_TENSOR_PERSISTENT;
  return d;
}

// How many of the rows 0, step, 2 step, ... of a and b (one tensor in two layouts) decode to
// different values: decode_row, and with `ranges` decode_row_range of each row's tail too.
inline size_t rows_decoded_differently(const Weight& a, const Weight& b, size_t step = 1,
                                       bool ranges = false) {
  std::vector<float> va(a.cols), vb(a.cols);
  size_t bad = 0;
  for (size_t r = 0; r < a.rows; r += step) {
    decode_row(a, r, va.data());
    decode_row(b, r, vb.data());
    bool differ = va != vb;
    if (ranges) {
      const size_t c0 = 32 * (r % (a.cols / 32)), n = a.cols - c0;
      decode_row_range(a, r, c0, n, va.data());
      decode_row_range(b, r, c0, n, vb.data());
      differ = differ || !std::equal(va.begin(), va.begin() + long(n), vb.begin());
    }
    bad += differ;
  }
  return bad;
}

// The Weight the CPU upload makes of d with `repacks`, or null where the upload fails.
inline std::unique_ptr<Weight> uploaded(ThreadPool& pool, const gptoss_tensor_desc& d,
                                        const UploadRepacks& repacks) {
  gptoss_backend_weight_t out = nullptr;
  std::string why;
  if (make_weight(pool, d, repacks, &out, why) != gptoss_status_success) return nullptr;
  return std::unique_ptr<Weight>(reinterpret_cast<Weight*>(out));
}

}  // namespace gptoss::cpu::test
