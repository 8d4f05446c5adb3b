// Per-kernel microbenchmarks of the CPU backend at every instruction-set level this CPU has,
// through the backend's own ops (so threading and activation permutes are included), with
// the napkin math beside each: bytes that must stream from memory, FLOPs, and what the
// measured read bandwidth allows. Weights are larger than the last-level cache and cycled.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "attention_kernels.hpp"
#include "bench.hpp"
#include "cpu_backend.hpp"
#include "formats.hpp"
#include "kernels.hpp"
#include "ops.hpp"
#include "q8_storage.hpp"
#include "sample.hpp"

namespace gptoss::bench {
namespace {

using cpu::Isa;
using cpu::Weight;

// `bytes` of anonymous memory in 2 MiB pages where the kernel grants them, as the CPU backend
// allocates a KV pool (4 KiB pages would add a TLB miss per two cached f32 rows).
std::shared_ptr<void> huge_buffer(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  bytes = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = nullptr;
  if (posix_memalign(&p, kHuge, bytes) != 0) throw std::bad_alloc();
  (void)madvise(p, bytes, MADV_HUGEPAGE);
  return std::shared_ptr<void>(p, std::free);
}

Weight make_weight(gptoss_dtype dt, size_t rows, size_t cols, uint32_t seed) {
  Weight w;
  w.dtype = dt;
  w.ndim = 2;
  w.shape[0] = int64_t(rows);
  w.shape[1] = int64_t(cols);
  w.rows = rows;
  w.cols = cols;
  std::mt19937 rng(seed);
  if (dt == gptoss_dtype_mxfp4) {
    w.row_bytes = cols / 2;
    w.owned_data.resize(rows * w.row_bytes);
    w.owned_scales.resize(rows * cols / 32);
    for (auto& b : w.owned_data) b = uint8_t(rng());
    for (auto& s : w.owned_scales) s = uint8_t(118 + rng() % 8);
    w.scales = w.owned_scales.data();
  } else if (dt == gptoss_dtype_q8_0) {  // ggml blocks: f16 d, then 32 int8
    w.row_bytes = cols / 32 * 34;
    w.owned_data.resize(rows * w.row_bytes);
    for (size_t b = 0; b < rows * cols / 32; ++b) {
      const uint16_t d = uint16_t(0x1c00 + rng() % 0x400);  // ~2^-8
      std::memcpy(w.owned_data.data() + 34 * b, &d, 2);
      for (size_t j = 0; j < 32; ++j) w.owned_data[34 * b + 2 + j] = uint8_t(rng());
    }
    w.scales = nullptr;
  } else {  // bf16
    w.row_bytes = cols * 2;
    w.owned_data.resize(rows * w.row_bytes);
    std::uniform_real_distribution<float> d(-0.1f, 0.1f);
    for (size_t i = 0; i < rows * cols; ++i) {
      const uint16_t h = cpu::f32_to_bf16(d(rng));
      std::memcpy(w.owned_data.data() + 2 * i, &h, 2);
    }
    w.scales = nullptr;
  }
  w.data = w.owned_data.data();
  return w;
}

// w's rows repacked as the CPU backend's upload repacks the attention projections at the
// levels that read them so (Weight::bf16_lanes).
Weight lanes_of(const Weight& w) {
  Weight l = w;
  l.owned_data.resize(w.rows * w.row_bytes);
  cpu::repack_bf16_lanes(reinterpret_cast<const uint16_t*>(w.data), w.cols, 0, w.rows / 16,
                         reinterpret_cast<uint16_t*>(l.owned_data.data()));
  l.data = l.owned_data.data();
  l.bf16_lanes = true;
  return l;
}

// A Q8_0 weight's rows repacked as the upload repacks a Q8_0 model's attention projections in
// the fast precision at the levels that read them so (Weight::q8_0_lanes).
Weight q8_0_lanes_of(const Weight& w) {
  Weight l = w;
  l.owned_data.resize(w.rows * w.row_bytes);
  cpu::repack_q8_0_lanes(w.data, w.cols, 0, w.rows / 16, l.owned_data.data());
  l.data = l.owned_data.data();
  l.q8_0_lanes = true;
  return l;
}

// An MXFP4 weight's rows repacked as the upload repacks the experts in the fast precision at the
// levels that read them so (Weight::mxfp4_lanes).
Weight mxfp4_lanes_of(const Weight& w) {
  Weight l = w;
  l.owned_data.resize(w.rows * w.row_bytes);
  l.owned_scales.resize(w.rows * w.cols / 32);
  cpu::repack_mxfp4_lanes(w.data, w.scales, w.cols, 0, w.rows / 16, l.owned_data.data(),
                          l.owned_scales.data());
  l.data = l.owned_data.data();
  l.scales = l.owned_scales.data();
  l.mxfp4_lanes = true;
  return l;
}

// w's bytes moved into 2 MiB pages, where the upload puts its copies (plugin/cpu_memory.cpp):
// in 4 KiB pages a weight streamed from memory pays TLB misses the model does not (the MXFP4
// lanes GEMV, one thread: 0-13 % slower; docs/performance.md).
void to_huge_pages(Weight& w) {
  const size_t data_bytes = w.rows * w.row_bytes, scale_bytes = w.scales ? w.rows * w.cols / 32 : 0;
  std::shared_ptr<void> map = huge_buffer(data_bytes + scale_bytes);
  uint8_t* p = static_cast<uint8_t*>(map.get());
  std::memcpy(p, w.data, data_bytes);
  if (scale_bytes != 0) std::memcpy(p + data_bytes, w.scales, scale_bytes);
  w.data = p;
  w.scales = scale_bytes != 0 ? p + data_bytes : nullptr;
  w.owned_map = std::move(map);
  w.owned_data = {};
  w.owned_scales = {};
}

// A buffer the size of a repacked weight's bytes, faulted in, for timing the repack alone.
void* lanes_rows_scratch(const Weight& l) {
  static std::vector<uint8_t> scratch;
  scratch.assign(l.rows * l.row_bytes, 1);
  return scratch.data();
}

std::vector<float> floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Seconds per call: the best of `reps` calls after one warm-up.
double time_best(int reps, const std::function<void()>& f) {
  f();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}


struct Row {
  std::string isa, kernel, shape;
  double seconds, bytes, flops;
  double read_gbs = 0;  // the read test beside it (Rows::add)
};

// The rows, each held against the higher of two read tests, one just before it and one just
// after: this VM's bandwidth moves by 2x within minutes, so one test before all rows and one
// after them put rows measured in a fast minute above 100 % of a slow one's.
class Rows {
 public:
  explicit Rows(unsigned threads) : reads_(threads), first_(reads_.gbs()), last_(first_) {}
  void add(Row r) {
    const double after = reads_.gbs();
    r.read_gbs = std::max(last_, after);
    last_ = after;
    rows_.push_back(std::move(r));
  }
  const std::vector<Row>& all() const { return rows_; }
  bool measured() const { return reads_.ok(); }
  // The whole run's: the higher of the first test, before any row, and one more after the last.
  double whole_run_gbs() { return std::max(first_, reads_.gbs()); }

 private:
  ReadTest reads_;
  std::vector<Row> rows_;
  double first_, last_;
};

// This thread's CPU time: time the other processes of a shared machine take from it does not
// count (the same core's other hardware thread still does).
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

#if defined(__x86_64__)
// The multiply-add peak the int8 tiles are held against: zmm vpdpbusd per second of one core's
// CPU time, 16 independent accumulators (so latency does not bound it).
__attribute__((target("avx512f,avx512vnni"))) double vpdpbusd_per_second() {
  __m512i a[16];
  for (int i = 0; i < 16; ++i) a[i] = _mm512_set1_epi32(i);
  __m512i w = _mm512_set1_epi32(0x01010101), x = _mm512_set1_epi32(0x01020304);
  asm volatile("" : "+v"(w), "+v"(x));  // not constants the compiler could fold
  constexpr long kIters = 20000000;
  const double t0 = thread_seconds();
  for (long it = 0; it < kIters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) a[i] = _mm512_dpbusd_epi32(a[i], w, x);
  }
  const double s = thread_seconds() - t0;
  alignas(64) int32_t lanes[16];
  for (int i = 0; i < 16; ++i) {  // keeps the sums alive
    _mm512_store_si512(lanes, a[i]);
    asm volatile("" : : "r"(lanes[0]));
  }
  return double(kIters) * 16 / s;
}

// The avx2 level's int8 sum of 128 multiply-adds, as its tiles issue it (kernels/avx2/int8.cpp:
// four groups' broadcasts from memory, four vpmaddubsw, the int16 sums added, one vpmaddwd into
// int32), per second of one core's CPU time over 8 independent sums: the most the tiles'
// instruction mix allows before their scales and loads.
__attribute__((target("avx2"))) double maddubs_sums_per_second() {
  __m256i acc[8], w[4];
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_set1_epi32(i);
  for (int g = 0; g < 4; ++g) w[g] = _mm256_set1_epi32(0x01020304 * (g + 1));
  alignas(64) int8_t x[128];
  for (int i = 0; i < 128; ++i) x[i] = int8_t(i - 64);
  const __m256i ones = _mm256_set1_epi16(1);
  constexpr long kIters = 20000000;
  const double t0 = thread_seconds();
  for (long it = 0; it < kIters; ++it) {
    const int8_t* p = x;
    asm volatile("" : "+r"(p), "+x"(w[0]), "+x"(w[1]), "+x"(w[2]), "+x"(w[3]));  // reloaded
    for (int i = 0; i < 8; ++i) {
      const int8_t* xi = p + 16 * i;
      __m256i s[4];
      for (int g = 0; g < 4; ++g) {
        int32_t v;
        __builtin_memcpy(&v, xi + 4 * g, 4);
        s[g] = _mm256_maddubs_epi16(w[g], _mm256_set1_epi32(v));
      }
      const __m256i s16 =
          _mm256_add_epi16(_mm256_add_epi16(s[0], s[1]), _mm256_add_epi16(s[2], s[3]));
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(s16, ones));
    }
  }
  const double s = thread_seconds() - t0;
  alignas(32) int32_t lanes[8];
  for (int i = 0; i < 8; ++i) {  // keeps the sums alive
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[i]);
    asm volatile("" : : "r"(lanes[0]));
  }
  return double(kIters) * 8 / s;
}
#endif

// What a GEMV kernel computes per core when memory does not bound it: one thread, weights that
// stay in L2 (under 400 KB), best of 5 samples of 200 calls, in CPU time; the decode kernels'
// rows above are bound by memory wherever this rate is well above the read bandwidth's share
// of one core. Rows appended to `rows`.
void compute_rates(Isa isa, const std::vector<float>& x4, std::vector<float>& y, Rows& rows) {
  const cpu::Kernels& k = cpu::kernels_for(isa);
  const size_t H = 2880;
  const char* name = cpu::isa_name(isa);
  auto best = [](const std::function<void()>& f) {
    f();
    double b = 1e30;
    for (int r = 0; r < 5; ++r) {
      const double t0 = thread_seconds();
      for (int i = 0; i < 200; ++i) f();
      b = std::min(b, (thread_seconds() - t0) / 200);
    }
    return b;
  };
#if defined(__x86_64__)
  if (isa == Isa::avx512vnni || isa == Isa::avx512bf16) {
    const double per_s = vpdpbusd_per_second();  // 64 multiply-adds each
    rows.add({name, "peak: vpdpbusd zmm, 1 thread", "16 chains, 1M instr", 1e6 / per_s, 0.0,
              2.0 * 64 * 1e6});
  }
  if (isa == Isa::avx2 || isa == Isa::avx512) {      // the levels whose int8 tiles use vpmaddubsw
    const double per_s = maddubs_sums_per_second();  // 128 multiply-adds each
    rows.add({name, "peak: 4 vpmaddubsw + vpmaddwd ymm, 1 thread", "8 chains, 1M sums", 1e6 / per_s,
              0.0, 2.0 * 128 * 1e6});
  }
#endif
  const Weight m = make_weight(gptoss_dtype_mxfp4, 128, H, 11);
  const Weight b = make_weight(gptoss_dtype_bf16, 64, H, 12);
  const Weight q = make_weight(gptoss_dtype_q8_0, 128, H, 13);
  const double mb = 128.0 * H * 17.0 / 32.0;
  constexpr size_t kPrefillTokens = 24;  // whole token tiles at every level (3, 4 and 8)
  const std::vector<float> x24 = floats(kPrefillTokens * H, 14);
  if (k.quantize_q8 != nullptr && k.matmul_mxfp4_q8 != nullptr) {
    cpu::Q8Storage mem;
    cpu::Q8Acts& xq = mem.prepare(4, H);
    k.quantize_q8(x4.data(), H, 4, xq);
    double s = best([&] { k.matmul_mxfp4_q8(m, 0, m.rows, xq, 0, 1, y.data(), m.rows); });
    rows.add(
        {name, "compute: int8 MXFP4 GEMV, L2, 1 thread", "128x2880, 1 tok", s, mb, 2.0 * 128 * H});
    if (k.gemv_mxfp4_q8 != nullptr) {
      s = best([&] { k.gemv_mxfp4_q8(m, 0, m.rows, xq, 0, 4, y.data(), m.rows); });
      rows.add({name, "compute: int8 MXFP4 step, L2, 1 thread", "128x2880, 4 tok", s, mb,
                8.0 * 128 * H});
    }
    // The same 4 tokens through the prefill panels (decoded to the lane layout per call).
    s = best([&] { k.matmul_mxfp4_q8(m, 0, m.rows, xq, 0, 4, y.data(), m.rows); });
    rows.add({name, "compute: int8 MXFP4 panels, L2, 1 thread", "128x2880, 4 tok", s, mb,
              8.0 * 128 * H});
    // A prefill's share of one expert (a 256-token prompt gives each expert about 32 tokens).
    cpu::Q8Storage mem24;
    cpu::Q8Acts& xq24 = mem24.prepare(kPrefillTokens, H);
    k.quantize_q8(x24.data(), H, kPrefillTokens, xq24);
    s = best([&] { k.matmul_mxfp4_q8(m, 0, m.rows, xq24, 0, kPrefillTokens, y.data(), m.rows); });
    rows.add({name, "compute: int8 MXFP4 panels, L2, 1 thread", "128x2880, 24 tok", s, mb,
              2.0 * kPrefillTokens * 128 * H});
    if (k.matmul_mxfp4_lanes_q8 != nullptr) {  // the same rows repacked at upload
      const Weight ml = mxfp4_lanes_of(m);
      for (size_t nt : {size_t(1), size_t(4), kPrefillTokens}) {
        const cpu::Q8Acts& xs = nt == kPrefillTokens ? xq24 : xq;
        s = best([&] { k.matmul_mxfp4_lanes_q8(ml, 0, ml.rows, xs, 0, nt, y.data(), ml.rows); });
        rows.add({name, "compute: int8 MXFP4 lanes, L2, 1 thread",
                  "128x2880, " + std::to_string(nt) + " tok", s, mb, 2.0 * nt * 128 * H});
      }
    }
    if (k.matmul_q8_0_q8 != nullptr) {  // a GGUF's Q8_0 projections in the fast precision
      const double qb = 128.0 * H * 34.0 / 32.0;
      s = best([&] { k.matmul_q8_0_q8(q, 0, q.rows, xq, 0, 1, y.data(), q.rows); });
      rows.add(
          {name, "compute: int8 Q8_0 GEMV, L2, 1 thread", "128x2880, 1 tok", s, qb, 2.0 * 128 * H});
      for (size_t nt : {2, 4}) {  // a decode step's tokens: the several-token GEMV, the panels
        s = best([&] { k.gemv_q8_0_q8(q, 0, q.rows, xq, 0, nt, y.data(), q.rows); });
        rows.add({name, "compute: int8 Q8_0 step, L2, 1 thread",
                  "128x2880, " + std::to_string(nt) + " tok", s, qb, 2.0 * nt * 128 * H});
        s = best([&] { k.matmul_q8_0_q8(q, 0, q.rows, xq, 0, nt, y.data(), q.rows); });
        rows.add({name, "compute: int8 Q8_0 panels, L2, 1 thread",
                  "128x2880, " + std::to_string(nt) + " tok", s, qb, 2.0 * nt * 128 * H});
      }
      s = best([&] { k.matmul_q8_0_q8(q, 0, q.rows, xq24, 0, kPrefillTokens, y.data(), q.rows); });
      rows.add({name, "compute: int8 Q8_0 panels, L2, 1 thread", "128x2880, 24 tok", s, qb,
                2.0 * kPrefillTokens * 128 * H});
    }
    if (k.quantize_q16 != nullptr) {  // a GGUF's Q8_0 projections in the fast precision
      const double qb = 128.0 * H * 34.0 / 32.0;
      cpu::Q16Storage mem16;
      cpu::Q16Acts& x16 = mem16.prepare(kPrefillTokens, H);
      k.quantize_q16(x24.data(), H, kPrefillTokens, x16);
      if (k.matmul_q8_0_q16 != nullptr) {  // avx2 and avx512 read the repacked tiles only
        for (size_t nt : {size_t(1), size_t(8), kPrefillTokens}) {
          s = best([&] { k.matmul_q8_0_q16(q, 0, q.rows, x16, 0, nt, y.data(), q.rows); });
          rows.add({name,
                    nt == 1 ? "compute: int16 Q8_0 GEMV, L2, 1 thread"
                            : "compute: int16 Q8_0 panels, L2, 1 thread",
                    "128x2880, " + std::to_string(nt) + " tok", s, qb, 2.0 * double(nt) * 128 * H});
        }
      }
      if (k.matmul_q8_0_lanes_q16 != nullptr) {  // the same rows repacked at upload
        const Weight ql = q8_0_lanes_of(q);
        for (size_t nt : {size_t(1), size_t(8), kPrefillTokens}) {
          s = best([&] { k.matmul_q8_0_lanes_q16(ql, 0, ql.rows, x16, 0, nt, y.data(), ql.rows); });
          rows.add({name, "compute: int16 Q8_0 lanes, L2, 1 thread",
                    "128x2880, " + std::to_string(nt) + " tok", s, qb, 2.0 * double(nt) * 128 * H});
        }
      }
    }
  }
  if (k.fp32 != nullptr) {
    // A dense projection's prefill (both precisions), 32 rows: weights, their fp32 panel and the
    // tokens stay in L2.
    double s = best([&] { k.fp32->panels(b, 0, 32, x24.data(), H, kPrefillTokens, y.data(), 32); });
    rows.add({name, "compute: bf16 panels, L2, 1 thread", "32x2880, 24 tok", s, 32.0 * H * 2.0,
              2.0 * kPrefillTokens * 32 * H});
    if (k.matmul_bf16_lanes != nullptr) {
      const Weight bl = lanes_of(b);
      s = best(
          [&] { k.matmul_bf16_lanes(bl, 0, 32, x24.data(), H, kPrefillTokens, y.data(), 32); });
      rows.add({name, "compute: bf16 lanes tiles, L2, 1 thread", "32x2880, 24 tok", s,
                32.0 * H * 2.0, 2.0 * kPrefillTokens * 32 * H});
      s = best([&] { k.matmul_bf16_lanes(bl, 0, bl.rows, x24.data(), H, 8, y.data(), bl.rows); });
      rows.add({name, "compute: bf16 lanes step, L2, 1 thread", "64x2880, 8 tok", s, 64.0 * H * 2.0,
                2.0 * 8 * 64 * H});
      s = best([&] { k.fp32->pairs(b, 0, b.rows, x24.data(), H, 8, y.data(), b.rows); });
      rows.add({name, "compute: bf16 pairs step, L2, 1 thread", "64x2880, 8 tok", s, 64.0 * H * 2.0,
                2.0 * 8 * 64 * H});
      s = best([&] { k.matmul_bf16_lanes(bl, 0, bl.rows, x4.data(), H, 1, y.data(), bl.rows); });
      rows.add({name, "compute: bf16 lanes GEMV, L2, 1 thread", "64x2880, 1 tok", s, 64.0 * H * 2.0,
                2.0 * 64 * H});
    }
    s = best([&] { k.fp32->gemv(b, 0, b.rows, x4.data(), H, 1, y.data(), b.rows); });
    rows.add({name, "compute: bf16 GEMV, L2, 1 thread", "64x2880, 1 tok", s, 64.0 * H * 2.0,
              2.0 * 64 * H});
    s = best([&] { k.fp32->gemv(q, 0, q.rows, x4.data(), H, 1, y.data(), q.rows); });
    rows.add({name, "compute: Q8_0 GEMV, L2, 1 thread", "128x2880, 1 tok", s,
              128.0 * H * 34.0 / 32.0, 2.0 * 128 * H});
  }
}

}  // namespace

// The sample slot (ops/sample.cpp) on one row of the 20b's 201,088 logits, as a decode step
// samples each sequence: the logits drawn from a normal distribution (sd 3, about a model's
// spread), the token choice and its log-probability; unconstrained, truncated, and under a
// grammar's mask that allows a few tokens (JSON structure) or nearly all (inside a string).
// Bytes: one read of the row's logits.
void sample_rates(cpu::Device& dev, const char* name, int reps, Rows& rows) {
  constexpr size_t V = 201088, words = (V + 31) / 32;
  std::vector<float> logits(V);
  std::mt19937 rng(14);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& l : logits) l = normal(rng);
  std::vector<uint32_t> sparse(words, 0u), dense(words, ~0u);
  for (size_t i = 0; i < 400; ++i) {
    const size_t t = rng() % V;
    sparse[t / 32] |= 1u << (t % 32);
  }
  for (size_t i = 0; i < V / 10; ++i) {
    const size_t t = rng() % V;
    dense[t / 32] &= ~(1u << (t % 32));
  }
  dense[words - 1] &= (1u << (V % 32)) - 1;
  struct Case {
    const char* what;
    gptoss_sample_row row;
    const uint32_t* mask;
  };
  const Case cases[] = {
      {"sample: greedy", {0.0f, 0, 1.0f, 0.0f, 0.5, 0, 0}, nullptr},
      {"sample: temperature 1", {1.0f, 0, 1.0f, 0.0f, 0.5, 0, 0}, nullptr},
      {"sample: temperature 1, top_p 0.9", {1.0f, 0, 0.9f, 0.0f, 0.5, 0, 0}, nullptr},
      {"sample: temperature 1, mask of 400 tokens",
       {1.0f, 0, 1.0f, 0.0f, 0.5, 0, 0},
       sparse.data()},
      {"sample: temperature 1, mask of ~90 %", {1.0f, 0, 1.0f, 0.0f, 0.5, 0, 0}, dense.data()},
  };
  for (const Case& c : cases) {
    gptoss_sample_result out;
    const double s = time_best(reps * 4, [&] {
      cpu::sample_rows(dev.pool, *dev.kernels, logits.data(), &c.row, c.mask, 1, V, &out);
    });
    rows.add({name, c.what, "201088 logits, 1 row", s, 4.0 * V, 0.0});
  }
}

int run_kernel_bench(const Options& o) {
  const unsigned threads = threads_or_all(o.threads);
  Rows rows(threads);  // its first read test comes before the weights are made
  const size_t H = 2880, I = 2880, Q = 4096, KV = 512, HD = 64;
  // 24 experts' mlp1 (211 MB), six times a 32 MiB last-level cache: at 8 experts (70 MB) a
  // Zen 4's L3 kept enough of it from call to call that one token read 16-33 % above a read
  // test beside it, against 3-8 % at 211 MB (docs/performance.md, "The kernel bench's yardstick").
  Weight mlp1 = make_weight(gptoss_dtype_mxfp4, 24 * 2 * I, H, 1);
  const std::string experts_shape = std::to_string(mlp1.rows) + "x" + std::to_string(H);
  Weight dense = make_weight(gptoss_dtype_bf16, 32768, H, 2);  // 189 MB (unembedding-like)
  Weight dense_q8 = make_weight(gptoss_dtype_q8_0, 65536, H, 9);  // 200 MB, Q8_0 GGUFs
  Weight dense_lanes = lanes_of(dense);
  Weight mlp1_lanes = mxfp4_lanes_of(mlp1);  // the experts as the fast precision's upload
  for (Weight* w : {&mlp1, &dense, &dense_q8, &dense_lanes, &mlp1_lanes}) to_huge_pages(*w);
  const auto x1 = floats(H, 3), x64 = floats(64 * H, 4), x256 = floats(256 * H, 10);
  // mlp1's first 8 experts' gate/up and 8 mlp2 of 2880x2880 (35 MB), with a random top-4
  // routing.
  Weight moe1 = mlp1;
  moe1.rows = 8 * 2 * I;
  moe1.ndim = 3;
  moe1.shape[0] = 8;
  moe1.shape[1] = int64_t(2 * I);
  moe1.shape[2] = int64_t(H);
  Weight moe2 = make_weight(gptoss_dtype_mxfp4, 8 * H, I, 11);
  to_huge_pages(moe2);
  moe2.ndim = 3;
  moe2.shape[0] = 8;
  moe2.shape[1] = int64_t(H);
  moe2.shape[2] = int64_t(I);
  Weight moe1_lanes = mlp1_lanes, moe2_lanes = mxfp4_lanes_of(moe2);
  to_huge_pages(moe2_lanes);
  for (int i = 0; i < 3; ++i) moe1_lanes.shape[i] = moe1.shape[i];
  moe1_lanes.rows = moe1.rows;
  moe1_lanes.ndim = 3;
  const auto x128 = floats(128 * H, 12);
  std::vector<int32_t> moe_ids(128 * 4);
  const std::vector<float> moe_weights(128 * 4, 0.25f);
  {
    std::mt19937 rng(13);
    for (size_t t = 0; t < 128; ++t) {
      int32_t order[8] = {0, 1, 2, 3, 4, 5, 6, 7};
      std::shuffle(order, order + 8, rng);
      std::copy(order, order + 4, moe_ids.begin() + long(4 * t));
    }
  }
  std::vector<float> y(64 * 8 * 2 * I);
  // Attention: 4096 cached positions, f32, 64 query heads over 8 KV heads.
  const size_t ctx = 4096, P = 16;
  const auto kc = floats(ctx * KV, 5), vc = floats(ctx * KV, 6), q512 = floats(512 * Q, 7);
  std::vector<int32_t> table(ctx / P);
  for (size_t i = 0; i < table.size(); ++i) table[i] = int32_t(i);
  const Weight sinks = make_weight(gptoss_dtype_bf16, 1, 64, 8);
  // Decode reads the cache of kLayers layers in turn (the 20b's full-attention layers), each
  // cold by its turn as in a forward step; f32 and bf16, K then V per layer.
  constexpr size_t kLayers = 12;
  size_t layer = 0;
  std::shared_ptr<void> kv_layers[2] = {huge_buffer(kLayers * 2 * ctx * KV * 4),
                                        huge_buffer(kLayers * 2 * ctx * KV * 2)};
  for (size_t l = 0; l < kLayers; ++l)
    for (int part = 0; part < 2; ++part) {
      const std::vector<float>& src = part == 0 ? kc : vc;
      float* f = static_cast<float*>(kv_layers[0].get()) + (2 * l + part) * ctx * KV;
      uint16_t* b = static_cast<uint16_t*>(kv_layers[1].get()) + (2 * l + part) * ctx * KV;
      std::copy(src.begin(), src.end(), f);
      for (size_t i = 0; i < src.size(); ++i) b[i] = cpu::f32_to_bf16(src[i]);
    }
  std::vector<cpu::AttnToken> dec = {{int32_t(ctx - 1), 0, 0, 0}}, pre(512), win(512);
  for (size_t t = 0; t < 512; ++t) pre[t] = {int32_t(t), 0, 0, 0};
  for (size_t t = 0; t < 512; ++t) win[t] = {int32_t(t), std::max(0, int32_t(t) - 127), 0, 0};  // gpt-oss even layers
  std::vector<float> out(512 * Q);

  // GPTOSS_CPU_ISA names one level to time alone (the level it selects), for A/B runs.
  const bool one_level = std::getenv("GPTOSS_CPU_ISA") != nullptr;
  for (Isa isa : cpu::kAllIsas) {
    if (!cpu::isa_supported(isa) || (one_level && isa != cpu::isa_selected())) continue;
    cpu::Device dev(threads, isa);
    cpu::Stream st{&dev};
    const int reps = isa == Isa::scalar ? 2 : 5;
    const char* name = cpu::isa_name(isa);
    double s = time_best(reps, [&] { cpu::op_linear(&st, x1.data(), &mlp1, nullptr, 1, H, mlp1.rows, y.data()); });
    rows.add({name, "qmatvec mxfp4 (MoE decode)", experts_shape + ", 1 tok", s,
              double(mlp1.rows) * H * 17.0 / 32.0, 2.0 * double(mlp1.rows) * H});
    // Two and three sequences of a decode step that chose the same experts.
    for (size_t nt : {2, 3, 8}) {
      s = time_best(reps, [&] { cpu::op_linear(&st, x64.data(), &mlp1, nullptr, nt, H, mlp1.rows, y.data()); });
      rows.add({name, "qmatvec mxfp4 (decode step)",
                experts_shape + ", " + std::to_string(nt) + " tok", s,
                double(mlp1.rows) * H * 17.0 / 32.0, 2.0 * double(nt) * double(mlp1.rows) * H});
    }
    const auto first_expert = [&](const Weight& all) {  // a view of the first 5760 rows
      Weight w;
      w.dtype = all.dtype;
      w.ndim = 2;
      w.shape[0] = int64_t(2 * I);
      w.shape[1] = int64_t(H);
      w.rows = 2 * I;
      w.cols = H;
      w.row_bytes = all.row_bytes;
      w.data = all.data;
      w.scales = all.scales;
      w.mxfp4_lanes = all.mxfp4_lanes;
      return w;
    };
    const Weight one_expert = first_expert(mlp1);
    s = time_best(reps, [&] { cpu::op_linear(&st, x64.data(), &one_expert, nullptr, 64, H, 2 * I, y.data()); });
    rows.add({name, "qGEMM mxfp4 (MoE prefill)", "5760x2880, 64 tok", s,
              double(2 * I) * H * 17.0 / 32.0, 2.0 * 64 * double(2 * I) * H});
    if (dev.quantize_activations && dev.kernels->matmul_mxfp4_lanes_q8 != nullptr) {
      // The same from the experts as the fast precision's upload lays them out.
      s = time_best(reps, [&] {
        cpu::op_linear(&st, x1.data(), &mlp1_lanes, nullptr, 1, H, mlp1.rows, y.data());
      });
      rows.add({name, "qmatvec mxfp4 lanes (MoE decode)", experts_shape + ", 1 tok", s,
                double(mlp1.rows) * H * 17.0 / 32.0, 2.0 * double(mlp1.rows) * H});
      for (size_t nt : {2, 3, 8}) {
        s = time_best(reps, [&] {
          cpu::op_linear(&st, x64.data(), &mlp1_lanes, nullptr, nt, H, mlp1.rows, y.data());
        });
        rows.add({name, "qmatvec mxfp4 lanes (decode step)",
                  experts_shape + ", " + std::to_string(nt) + " tok", s,
                  double(mlp1.rows) * H * 17.0 / 32.0, 2.0 * double(nt) * double(mlp1.rows) * H});
      }
      const Weight one_expert_lanes = first_expert(mlp1_lanes);
      s = time_best(reps, [&] {
        cpu::op_linear(&st, x64.data(), &one_expert_lanes, nullptr, 64, H, 2 * I, y.data());
      });
      rows.add({name, "qGEMM mxfp4 lanes (MoE prefill)", "5760x2880, 64 tok", s,
                double(2 * I) * H * 17.0 / 32.0, 2.0 * 64 * double(2 * I) * H});
      // What the upload spends on the repack per byte, on one thread, into faulted-in pages: the
      // level's and the scalar definition.
      auto* codes = static_cast<uint8_t*>(lanes_rows_scratch(mlp1_lanes));
      std::vector<uint8_t> scales(mlp1.rows * mlp1.cols / 32, 1);
      for (const bool level : {true, false}) {
        const auto repack = level ? dev.kernels->repack_mxfp4_lanes : cpu::repack_mxfp4_lanes;
        s = time_best(reps, [&] {
          repack(mlp1.data, mlp1.scales, H, 0, mlp1.rows / 16, codes, scales.data());
        });
        rows.add({name,
                  level ? "repack MXFP4 lanes (upload), 1 thread"
                        : "repack MXFP4 lanes, scalar loop, 1 thread",
                  experts_shape, s, double(mlp1.rows) * H * 17.0 / 32.0, 0.0});
      }
    }
    // The whole MoE block of a prefill, from memory: 128 tokens routed to 4 of 8 experts
    // each give every expert ~64 tokens, as a 512-token prompt gives the 20b's 32. Not at the
    // scalar level, whose MoE is the float reference (~30 s a call).
    if (isa != Isa::scalar) {
      s = time_best(reps, [&] {
        cpu::op_moe(&st, x128.data(), moe_ids.data(), moe_weights.data(), &moe1, nullptr, &moe2,
                    nullptr, 128, H, I, 4, 7.0f, y.data());
      });
      rows.add({name, "MoE prefill (routed)", "128 tok, 4 of 8 experts", s,
                8.0 * 3 * I * H * 17.0 / 32.0, 2.0 * 128 * 4 * 3 * double(I) * H});
      if (dev.quantize_activations && dev.kernels->matmul_mxfp4_lanes_q8 != nullptr) {
        s = time_best(reps, [&] {
          cpu::op_moe(&st, x128.data(), moe_ids.data(), moe_weights.data(), &moe1_lanes, nullptr,
                      &moe2_lanes, nullptr, 128, H, I, 4, 7.0f, y.data());
        });
        rows.add({name, "MoE prefill (routed), lanes", "128 tok, 4 of 8 experts", s,
                  8.0 * 3 * I * H * 17.0 / 32.0, 2.0 * 128 * 4 * 3 * double(I) * H});
      }
    }
    // A dense projection's prefill (fp32 activations: the attention's bf16 matrices in both
    // precisions): the first 2048 rows of `dense`, 256 tokens.
    Weight dense_rows = dense;
    dense_rows.shape[0] = 2048;
    dense_rows.rows = 2048;
    s = time_best(reps, [&] {
      cpu::op_linear(&st, x256.data(), &dense_rows, nullptr, 256, H, 2048, y.data());
    });
    rows.add({name, "GEMM bf16 (dense prefill)", "2048x2880, 256 tok", s, 2048.0 * H * 2.0,
              2.0 * 256 * 2048.0 * H});
    if (dev.kernels->matmul_bf16_lanes != nullptr) {
      Weight lanes_rows = dense_lanes;
      lanes_rows.shape[0] = 2048;
      lanes_rows.rows = 2048;
      s = time_best(reps, [&] {
        cpu::op_linear(&st, x256.data(), &lanes_rows, nullptr, 256, H, 2048, y.data());
      });
      rows.add({name, "GEMM bf16 lanes (dense prefill)", "2048x2880, 256 tok", s, 2048.0 * H * 2.0,
                2.0 * 256 * 2048.0 * H});
    }
    s = time_best(reps, [&] { cpu::op_linear(&st, x1.data(), &dense, nullptr, 1, H, dense.rows, y.data()); });
    rows.add({name, "GEMV bf16 (unembedding)", "32768x2880, 1 tok", s, double(dense.rows) * H * 2.0,
              2.0 * double(dense.rows) * H});
    if (dev.kernels->matmul_bf16_lanes != nullptr) {
      s = time_best(reps, [&] {
        cpu::op_linear(&st, x1.data(), &dense_lanes, nullptr, 1, H, dense.rows, y.data());
      });
      rows.add({name, "GEMV bf16 lanes (projection)", "32768x2880, 1 tok", s,
                double(dense.rows) * H * 2.0, 2.0 * double(dense.rows) * H});
      s = time_best(reps, [&] {
        cpu::op_linear(&st, x64.data(), &dense_lanes, nullptr, 8, H, dense.rows, y.data());
      });
      rows.add({name, "GEMV bf16 lanes (8-sequence step)", "32768x2880, 8 tok", s,
                double(dense.rows) * H * 2.0, 2.0 * 8 * double(dense.rows) * H});
      // What the upload spends per byte of a projection, on one thread (the upload splits the
      // tiles over the pool), into pages already faulted in: the level's repack, and the
      // scalar loop it replaces.
      const auto* src = reinterpret_cast<const uint16_t*>(dense.data);
      auto* dst = reinterpret_cast<uint16_t*>(lanes_rows_scratch(dense_lanes));
      s = time_best(reps, [&] { dev.kernels->repack_bf16_lanes(src, H, 0, dense.rows / 16, dst); });
      rows.add({name, "repack bf16 lanes (upload), 1 thread", "32768x2880", s,
                double(dense.rows) * H * 2.0, 0.0});
      s = time_best(reps, [&] { cpu::repack_bf16_lanes(src, H, 0, dense.rows / 16, dst); });
      rows.add({name, "repack bf16 lanes, scalar loop, 1 thread", "32768x2880", s,
                double(dense.rows) * H * 2.0, 0.0});
    }
    // Eight sequences decoding together: every row serves 8 tokens (the server's decode step);
    // as an attention projection (fp32 activations) and as the unembedding (bf16 pairs where
    // the CPU has AVX512-BF16: dense_bf16_kernels.hpp).
    for (bool logits : {false, true}) {
      dense.logits_only = logits;
      s = time_best(reps, [&] { cpu::op_linear(&st, x64.data(), &dense, nullptr, 8, H, dense.rows, y.data()); });
      rows.add({name,
                logits ? "GEMV bf16 (8-sequence step, unembedding)" : "GEMV bf16 (8-sequence step)",
                "32768x2880, 8 tok", s, double(dense.rows) * H * 2.0,
                2.0 * 8 * double(dense.rows) * H});
    }
    dense.logits_only = false;
    // A GGUF's Q8_0 matrices: the unembedding (int8 activations in fast precision where the
    // level has them) and the projections (int16 there).
    for (bool logits : {true, false}) {
      dense_q8.logits_only = logits;
      s = time_best(reps, [&] {
        cpu::op_linear(&st, x1.data(), &dense_q8, nullptr, 1, H, dense_q8.rows, y.data());
      });
      rows.add({name, logits ? "GEMV Q8_0 (GGUF unembedding)" : "GEMV Q8_0 (GGUF projection)",
                "65536x2880, 1 tok", s, double(dense_q8.rows) * H * 34.0 / 32.0,
                2.0 * double(dense_q8.rows) * H});
      s = time_best(reps, [&] {
        cpu::op_linear(&st, x64.data(), &dense_q8, nullptr, 8, H, dense_q8.rows, y.data());
      });
      rows.add({name,
                logits ? "GEMV Q8_0 (8-sequence step, unembedding)" : "GEMV Q8_0 (8-sequence step)",
                "65536x2880, 8 tok", s, double(dense_q8.rows) * H * 34.0 / 32.0,
                2.0 * 8 * double(dense_q8.rows) * H});
    }
    dense_q8.logits_only = false;
    if (dev.quantize_activations && dev.kernels->matmul_q8_0_lanes_q16 != nullptr) {
      // The projections as the upload repacks them in the fast precision at this level.
      Weight q8_lanes = q8_0_lanes_of(dense_q8);
      to_huge_pages(q8_lanes);
      for (size_t nt : {1, 8}) {
        s = time_best(reps, [&] {
          cpu::op_linear(&st, nt == 1 ? x1.data() : x64.data(), &q8_lanes, nullptr, nt, H,
                         q8_lanes.rows, y.data());
        });
        rows.add(
            {name,
             nt == 1 ? "GEMV Q8_0 lanes (GGUF projection)" : "GEMV Q8_0 lanes (8-sequence step)",
             "65536x2880, " + std::to_string(nt) + " tok", s,
             double(dense_q8.rows) * H * 34.0 / 32.0,
             2.0 * double(nt) * double(dense_q8.rows) * H});
      }
      // What the upload spends on the repack per byte, on one thread, into faulted-in pages.
      auto* dst = static_cast<uint8_t*>(lanes_rows_scratch(q8_lanes));
      s = time_best(reps, [&] {
        dev.kernels->repack_q8_0_lanes(dense_q8.data, H, 0, dense_q8.rows / 16, dst);
      });
      rows.add({name, "repack Q8_0 lanes (upload), 1 thread", "65536x2880", s,
                double(dense_q8.rows) * H * 34.0 / 32.0, 0.0});
    }
    Weight q8_rows = dense_q8;  // a Q8_0 projection's prefill: 2048 rows, 256 tokens
    q8_rows.shape[0] = 2048;
    q8_rows.rows = 2048;
    s = time_best(
        reps, [&] { cpu::op_linear(&st, x256.data(), &q8_rows, nullptr, 256, H, 2048, y.data()); });
    rows.add({name, "GEMM Q8_0 (dense prefill)", "2048x2880, 256 tok", s, 2048.0 * H * 34.0 / 32.0,
              2.0 * 256 * 2048.0 * H});
    for (int bf16 = 0; bf16 < 2; ++bf16) {
      const size_t elem = bf16 ? 2 : 4, layer_bytes = ctx * KV * elem;
      s = time_best(reps, [&] {
        layer = (layer + 1) % kLayers;
        const char* k = static_cast<const char*>(kv_layers[bf16].get()) + 2 * layer * layer_bytes;
        cpu::op_attention(&st, q512.data(), k, k + layer_bytes, bf16 ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32,
                          &sinks, dec.data(), table.data(), 1, 64, 8, HD, P, 0.125f, out.data());
      });
      // Fast precision over a bf16 cache takes bf16 dot products where the CPU has AVX512-BF16.
      const bool dots = bf16 && dev.quantize_activations && cpu::attention_bf16_kernels_for(isa) != nullptr;
      rows.add({name,
                !bf16  ? "attention decode (f32 KV)"
                : dots ? "attention decode (bf16 KV, bf16 dots)"
                       : "attention decode (bf16 KV)",
                "4096 keys, 64/8 heads", s, 2.0 * double(layer_bytes), 4.0 * 64 * ctx * HD});
    }
    s = time_best(isa == Isa::scalar ? 1 : 3, [&] {
      cpu::op_attention(&st, q512.data(), kc.data(), vc.data(), gptoss_kv_dtype_f32, &sinks, pre.data(),
                        table.data(), 512, 64, 8, HD, P, 0.125f, out.data());
    });
    rows.add({name, "attention prefill (causal)", "512 tok, 64/8 heads", s, 2.0 * 512 * KV * 4,
              4.0 * 64 * HD * 512.0 * 513.0 / 2.0});
    s = time_best(isa == Isa::scalar ? 1 : 3, [&] {
      cpu::op_attention(&st, q512.data(), kc.data(), vc.data(), gptoss_kv_dtype_f32, &sinks, win.data(),
                        table.data(), 512, 64, 8, HD, P, 0.125f, out.data());
    });
    double win_keys = 0;
    for (const auto& tk : win) win_keys += double(tk.pos - tk.kv_start + 1);
    rows.add({name, "attention prefill (window 128)", "512 tok, 64/8 heads", s, 2.0 * 512 * KV * 4,
              4.0 * 64 * HD * win_keys});
    sample_rates(dev, name, reps, rows);
    compute_rates(isa, x64, y, rows);
  }

  // The whole run's ceiling, for rows whose read tests failed (no 1 GiB buffer): the higher of
  // two measurements, before and after the kernels.
  const double bw = rows.whole_run_gbs();
  const auto read_of = [&](const Row& r) { return r.read_gbs > 0 ? r.read_gbs : bw; };
  if (o.json) {
    std::printf("{\"threads\": %u, \"read_bandwidth_gbs\": %.3f, \"kernels\": [", threads, bw);
    const std::vector<Row>& all = rows.all();
    for (size_t i = 0; i < all.size(); ++i)
      std::printf(
          "%s{\"isa\": \"%s\", \"kernel\": \"%s\", \"shape\": \"%s\", \"ms\": %.4f, \"gbs\": %.3f, "
          "\"gflops\": %.3f, \"read_gbs\": %.3f}",
          i ? ", " : "", all[i].isa.c_str(), all[i].kernel.c_str(), all[i].shape.c_str(),
          1e3 * all[i].seconds, all[i].bytes / all[i].seconds / 1e9,
          all[i].flops / all[i].seconds / 1e9, read_of(all[i]));
    std::printf("]}\n");
    return 0;
  }
  std::printf("threads %u, measured read bandwidth %.2f GB/s (higher of before/after all rows)\n\n",
              threads, bw);
  std::printf(
      "| isa | kernel | shape | ms | bytes (napkin) | GB/s | read BW beside | %% of it | GFLOP "
      "(napkin) | GFLOP/s |\n");
  std::printf("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Row& r : rows.all())
    std::printf("| %s | %s | %s | %.3f | %.1f MB | %.2f | %.2f | %.0f %% | %.3f | %.2f |\n",
                r.isa.c_str(), r.kernel.c_str(), r.shape.c_str(), 1e3 * r.seconds, r.bytes / 1e6,
                r.bytes / r.seconds / 1e9, read_of(r),
                100.0 * r.bytes / r.seconds / 1e9 / read_of(r), r.flops / 1e9,
                r.flops / r.seconds / 1e9);
  std::printf(
      "\nbytes: weights/KV that must stream from memory per call (MXFP4 = 17 bytes, Q8_0 = 34 "
      "bytes per 32 values); a memory-bound kernel should approach the read bandwidth.\n"
      "read BW beside: the higher of two read tests (as the one above), just before and just after "
      "the row%s.\n"
      "compute rows: one thread over weights resident in L2, in CPU time (what one core computes "
      "when memory does not bound it; %% of it compares one core with all threads' reads).\n",
      rows.measured() ? "" : " (not measured here: the whole run's instead)");
  return 0;
}

}  // namespace gptoss::bench
