// The fast mode's int8 kernels (quantize_q8; matmul_mxfp4_q8, gemv_mxfp4_q8 and their Q8_0
// twins matmul_q8_0_q8, gemv_q8_0_q8) of every level that has them, on random data, against
// their scalar definitions (scalar/matmul.cpp) and against the exact fp32 product:
//   - quantization is bit-identical to the reference (same float operations, RNE rounding);
//   - the SIMD matmul equals the reference up to fp32 summation order:
//       |y - ref| <= 1e-6 + 4e-6 * sum_b |s_b d_b / 2| (|S_b| + 12 |Q_b|)      (MXFP4)
//       |y - ref| <= 1e-6 + 4e-6 * sum_b |e_b| d_b sum_k |w_k q_k|             (Q8_0)
//     (the integer block sums S_b are exact; only their scaled fp32 sum is rounded);
//   - the reference is within the quantization bound of the exact dot product:
//       |ref - w.x| <= sum_b (d_b / 2) sum_k |w_k| * (1 + 1e-5) + 1e-6 * sum |w x|
//     since each activation moves by at most half a step d_b of its block.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "avx2/int8.hpp"
#include "avx2vnni/avx2vnni.hpp"
#include "backends/cpu/test_weights.hpp"
#include "choose.hpp"
#include "formats.hpp"
#include "kernels.hpp"
#include "q8_storage.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu::test {
namespace {

// Kernel-order position (evens, then odds) of natural element j of a 32-block.
size_t kernel_pos(size_t j) { return (j & 1) ? 16 + j / 2 : j / 2; }

std::vector<Isa> q8_isas() { return isas_with(&Kernels::matmul_mxfp4_q8); }

std::vector<Isa> q8_0_isas() { return isas_with(&Kernels::matmul_q8_0_q8); }

void check_quantize_q8(Isa isa, size_t n_tok, size_t cols) {
  const auto x = outlier_activations(n_tok, cols, uint32_t(cols + n_tok));
  Q8Storage ref_mem, got_mem;
  Q8Acts& ref = ref_mem.prepare(n_tok, cols);
  Q8Acts& got = got_mem.prepare(n_tok, cols);
  quantize_q8_reference(x.data(), cols, n_tok, ref);
  // Garbage first: the kernel must write every byte of the padding too.
  for (size_t i = 0; i < n_tok * got.q_stride; ++i) got.q[i] = int8_t(i * 7 + 3);
  for (size_t i = 0; i < n_tok * got.b_stride; ++i)
    got.half_d[i] = got.q12f[i] = 1e30f, got.neg_q12[i] = got.neg_q128[i] = 77;
  kernels_for(isa).quantize_q8(x.data(), cols, n_tok, got);
  size_t bad = 0;
  for (size_t i = 0; i < n_tok * ref.q_stride; ++i) bad += ref.q[i] != got.q[i];
  for (size_t i = 0; i < n_tok * ref.b_stride; ++i)
    bad += ref.half_d[i] != got.half_d[i] || ref.q12f[i] != got.q12f[i] ||
           ref.neg_q12[i] != got.neg_q12[i] || ref.neg_q128[i] != got.neg_q128[i];
  INFO(isa_name(isa) << " tokens " << n_tok << " cols " << cols);
  CHECK(bad == 0);
  // Every block uses its full range and the reconstruction is within half a step.
  for (size_t t = 0; t < n_tok; ++t)
    for (size_t b = 0; b < cols / 32; ++b) {
      int amax = 0;
      for (size_t j = 0; j < 32; ++j) {
        const int q = ref.q[t * ref.q_stride + q8_pos(b, kernel_pos(j))];
        amax = std::max(amax, std::abs(q));
        const float d = 2.0f * ref.half_d[t * ref.b_stride + b];
        CHECK(std::fabs(x[t * cols + 32 * b + j] - float(q) * d) <= 0.5f * d * 1.0001f);
      }
      CHECK(amax == 127);
    }
}

using MatmulQ8 = decltype(Kernels::matmul_mxfp4_q8);

// The size of a row's terms for token t, which the contract's rounding bound scales with:
// sum_b s_b d_b / 2 (|S_b| + 12 |Q_b|), with S_b = sum (2v + 12) q and s_b |2v| = 2 |w|.
// `row`: the row decoded (natural order), `scales`: its E8M0 bytes, or null for a Q8_0 row,
// whose terms are sum_b d_b sum_k |w_k q_k| (its offset is added in integers).
double row_terms(const float* row, const uint8_t* scales, const Q8Acts& q, size_t t, size_t nb) {
  const int8_t* qt = q.q + t * q.q_stride;
  double mag = 0.0;
  for (size_t b = 0; b < nb; ++b) {
    const double hd = q.half_d[t * q.b_stride + b];
    const double sb = scales != nullptr ? gptoss_e8m0_to_f32(scales[b]) : 0.0;
    double wq = 0.0, qabs = 0.0;
    for (size_t j = 0; j < 32; ++j) {
      const int q8 = qt[q8_pos(b, kernel_pos(j))];
      wq += std::fabs(double(row[32 * b + j])) * std::abs(q8);
      qabs += std::abs(q8);
    }
    mag += hd * (2.0 * wq + 24.0 * sb * qabs);
  }
  return mag;
}

void check_matmul_fn(const char* name, MatmulQ8 matmul, size_t rows, size_t cols, size_t n_tok,
                     size_t first = 0, size_t count = 0, uint32_t seed = 0,
                     gptoss_dtype dtype = gptoss_dtype_mxfp4) {
  if (count == 0) count = rows;
  const Weight w = random_weight(dtype, rows, cols, uint32_t(rows * 13 + cols) + seed, 0, -12);
  const MatmulQ8 reference =
      dtype == gptoss_dtype_q8_0 ? matmul_q8_0_q8_reference : matmul_mxfp4_q8_reference;
  const auto x = outlier_activations(n_tok, cols, uint32_t(cols * 3 + n_tok) + seed);
  Q8Storage mem;
  Q8Acts& q = mem.prepare(n_tok + 2, cols);
  // Two extra leading tokens: the kernels must honour t0.
  std::vector<float> xx(2 * cols, 0.5f);
  xx.insert(xx.end(), x.begin(), x.end());
  quantize_q8_reference(xx.data(), cols, n_tok + 2, q);
  const size_t ldy = count + 5;
  std::vector<float> want(n_tok * ldy, -777.0f), got(n_tok * ldy, -777.0f);
  reference(w, first, count, q, 2, n_tok, want.data(), ldy);
  matmul(w, first, count, q, 2, n_tok, got.data(), ldy);

  std::vector<float> row(cols);
  size_t bad = 0, bad_exact = 0;
  const size_t nb = cols / 32;
  for (size_t i = 0; i < count; ++i) {
    decode_row(w, first + i, row.data());  // natural order, like x
    for (size_t t = 0; t < n_tok; ++t) {
      const double mag = row_terms(
          row.data(), w.scales != nullptr ? w.scales + (first + i) * nb : nullptr, q, t + 2, nb);
      double bound = 0.0, exact = 0.0, exact_mag = 0.0;
      for (size_t b = 0; b < nb; ++b) {
        const double hd = q.half_d[(t + 2) * q.b_stride + b];
        double wabs = 0.0;
        for (size_t j = 0; j < 32; ++j) {
          const double wk = row[32 * b + j];
          wabs += std::fabs(wk);
          exact += wk * x[t * cols + 32 * b + j];
          exact_mag += std::fabs(wk * x[t * cols + 32 * b + j]);
        }
        bound += hd * wabs;
      }
      const double y_ref = want[t * ldy + i], y = got[t * ldy + i];
      if (!(std::fabs(y - y_ref) <= 1e-6 + 4e-6 * mag) && bad++ < 5)
        UNSCOPED_INFO(name << " row " << first + i << " token " << t << ": got " << y
                                    << " reference " << y_ref);
      if (!(std::fabs(y_ref - exact) <= bound * (1 + 1e-5) + 1e-6 * exact_mag + 1e-30) && bad_exact++ < 5)
        UNSCOPED_INFO("reference row " << first + i << " token " << t << ": " << y_ref << " vs exact "
                                       << exact << " (bound " << bound << ")");
    }
    for (size_t t = 0; t < n_tok; ++t)
      for (size_t j = count; j < ldy; ++j) CHECK(got[t * ldy + j] == -777.0f);
  }
  INFO(name << " " << rows << "x" << cols << " tokens " << n_tok);
  CHECK(bad == 0);
  CHECK(bad_exact == 0);
}

void check_matmul(Isa isa, size_t rows, size_t cols, size_t n_tok, size_t first = 0, size_t count = 0) {
  check_matmul_fn(isa_name(isa), kernels_for(isa).matmul_mxfp4_q8, rows, cols, n_tok, first, count);
}

void check_matmul_q8_0(Isa isa, size_t rows, size_t cols, size_t n_tok, size_t first = 0,
                       size_t count = 0) {
  check_matmul_fn(isa_name(isa), kernels_for(isa).matmul_q8_0_q8, rows, cols, n_tok, first, count,
                  0, gptoss_dtype_q8_0);
}

}  // namespace

TEST_CASE("q8: quantization is bit-identical to the reference", "[cpu-kernels][q8]") {
  for (Isa isa : q8_isas())
    for (size_t cols : {32, 64, 96, 544, 2880})
      for (size_t n_tok : {1, 3}) check_quantize_q8(isa, n_tok, cols);
}

TEST_CASE("q8: MXFP4 x int8 matmul, tails of rows, blocks and tokens", "[cpu-kernels][q8]") {
  for (Isa isa : q8_isas()) {
    for (size_t cols : {32, 64, 96, 544})        // 1, 2, 3 and 17 blocks (odd pair, 16-block scales)
      for (size_t rows : {1, 5, 16, 37})
        for (size_t n_tok : {1, 2, 9, 17}) check_matmul(isa, rows, cols, n_tok);
    check_matmul(isa, 40, 96, 3, 7, 30);  // a row offset
  }
}

TEST_CASE("q8: MXFP4 x int8 matmul at real gpt-oss shapes", "[cpu-kernels][q8]") {
  for (Isa isa : q8_isas()) {
    check_matmul(isa, 5760, 2880, 1, 0, 256);
    check_matmul(isa, 5760, 2880, 1, 5700, 60);
    check_matmul(isa, 2880, 2880, 12, 2850, 30);
    check_matmul(isa, 2880, 2880, 64, 0, 48);
  }
}

TEST_CASE("q8: Q8_0 x int8 matmul, tails of rows, blocks and tokens", "[cpu-kernels][q8]") {
  for (Isa isa : q8_0_isas()) {
    for (size_t cols : {32, 64, 96, 128, 160, 544})  // partial and whole groups of 4 blocks
      for (size_t rows : {1, 5, 16, 37})
        for (size_t n_tok : {1, 2, 9, 17}) check_matmul_q8_0(isa, rows, cols, n_tok);
    check_matmul_q8_0(isa, 40, 96, 3, 7, 30);  // a row offset
  }
  if (q8_0_isas().empty()) WARN("no level of this CPU has the Q8_0 int8 kernels: not tested");
}

// The attention projections of gpt-oss-20b (q, k, v fused: 5120 x 2880; output: 2880 x 4096),
// tails of them, as a decode token, a step and a prefill chunk.
TEST_CASE("q8: Q8_0 x int8 matmul at real gpt-oss shapes", "[cpu-kernels][q8]") {
  for (Isa isa : q8_0_isas()) {
    check_matmul_q8_0(isa, 5120, 2880, 1, 0, 256);
    check_matmul_q8_0(isa, 5120, 2880, 1, 5060, 60);
    check_matmul_q8_0(isa, 2880, 4096, 8, 2850, 30);
    check_matmul_q8_0(isa, 2880, 4096, 64, 0, 48);
  }
}

// f16 steps at the ends of their range, which the random weights never draw: zero, the smallest
// subnormal (2^-24), a subnormal with every mantissa bit, the largest finite (65504), negative
// ones, in whole rows and alternating. The bound is relative to the row's terms with no absolute
// slack, so a step decoded wrongly fails it even where the results are tiny.
TEST_CASE("q8: extreme Q8_0 steps give the reference's results", "[cpu-kernels][q8]") {
  const size_t rows = 9, cols = 544, nb = cols / 32;
  Weight w = random_weight(gptoss_dtype_q8_0, rows, cols, 51);
  const uint16_t steps[][2] = {{0x0000, 0x0000}, {0x0001, 0x0001}, {0x03ff, 0x83ff},
                               {0x7bff, 0x7bff}, {0x0001, 0x7bff}, {0xbc00, 0x3c00},
                               {0x0400, 0x8001}, {0x7bff, 0x0000}, {0x3555, 0xfbff}};
  for (size_t r = 0; r < rows; ++r)
    for (size_t b = 0; b < nb; ++b)
      std::memcpy(w.owned_data.data() + r * w.row_bytes + 34 * b, &steps[r][b % 2], 2);
  std::vector<float> row(cols);
  for (size_t n_tok : {1u, 3u, 9u}) {
    const auto x = outlier_activations(n_tok, cols, uint32_t(54 + n_tok));
    Q8Storage mem;
    Q8Acts& q = mem.prepare(n_tok, cols);
    quantize_q8_reference(x.data(), cols, n_tok, q);
    std::vector<float> want(n_tok * rows), got(n_tok * rows);
    matmul_q8_0_q8_reference(w, 0, rows, q, 0, n_tok, want.data(), rows);
    for (Isa isa : q8_0_isas()) {
      const Kernels& k = kernels_for(isa);
      for (const auto& [name, fn] :
           {std::pair{"matmul", k.matmul_q8_0_q8}, std::pair{"gemv", k.gemv_q8_0_q8}}) {
        if (fn == nullptr || (fn == k.gemv_q8_0_q8 && n_tok > kGemvStepTokens)) continue;
        std::fill(got.begin(), got.end(), -777.0f);
        fn(w, 0, rows, q, 0, n_tok, got.data(), rows);
        for (size_t i = 0; i < rows; ++i) {
          decode_row(w, i, row.data());
          for (size_t t = 0; t < n_tok; ++t) {
            const double mag = row_terms(row.data(), nullptr, q, t, nb);
            const double y_ref = want[t * rows + i], y = got[t * rows + i];
            INFO(isa_name(isa) << " " << name << " row " << i << " token " << t << " of " << n_tok
                               << ": got " << y << " reference " << y_ref << " (terms " << mag
                               << ")");
            CHECK(std::fabs(y - y_ref) <= 4e-6 * mag + 1e-44);
            if (i == 0) CHECK(y == 0.0f);
          }
        }
      }
    }
  }
}

// Which Q8_0 weights take int8 activations: the unembedding in fast precision, at every token
// count, where the level has the kernels; never the projections (int8 activations there about
// double the fast precision's error on the logits set), never in exact precision.
TEST_CASE("q8: the chooser gives int8 activations to a Q8_0 unembedding only",
          "[cpu-kernels][q8]") {
  Weight w = random_weight(gptoss_dtype_q8_0, 8, 64, 5);
  for (Isa isa : supported_isas()) {
    if (isa == Isa::scalar) continue;
    const Kernels& k = kernels_for(isa);
    for (size_t n : {1, 2, 4, 5, 8, 16, 17, 64})
      for (bool logits : {false, true})
        for (bool fast : {false, true}) {
          w.logits_only = logits;
          INFO(isa_name(isa) << " " << n << " tokens" << (logits ? " logits" : "")
                             << (fast ? " fast" : " exact"));
          const bool int8 = logits && fast && k.matmul_q8_0_q8 != nullptr;
          CHECK((acts_for(k, w, n, fast) == MatmulActs::q8) == int8);
        }
  }
}

// Fresh random shapes, weights and activations each run (the seed is printed on failure), at
// every level this CPU has: the matmul (any token count: GEMV, panels) and the decode step's
// several-token GEMV against the scalar reference, within the contract's bound.
TEST_CASE("q8: every level against the reference on fresh random shapes", "[cpu-kernels][q8]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t lo, size_t hi) {
    return std::uniform_int_distribution<size_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 12; ++round) {
    const size_t cols = 32 * pick(1, 100), rows = pick(1, 80), first = pick(0, rows - 1);
    const size_t count = pick(1, rows - first), n_tok = pick(1, 20);
    const uint32_t s = uint32_t(rng());
    INFO("round " << round << ": " << rows << "x" << cols << ", rows " << first << "+" << count
                  << ", " << n_tok << " tokens");
    for (Isa isa : q8_isas()) {
      const Kernels& k = kernels_for(isa);
      check_matmul_fn(isa_name(isa), k.matmul_mxfp4_q8, rows, cols, n_tok, first, count, s);
      if (k.gemv_mxfp4_q8 != nullptr && n_tok <= kGemvStepTokens)
        check_matmul_fn(isa_name(isa), k.gemv_mxfp4_q8, rows, cols, n_tok, first, count, s);
      const gptoss_dtype q8_0 = gptoss_dtype_q8_0;
      if (k.matmul_q8_0_q8 != nullptr)
        check_matmul_fn(isa_name(isa), k.matmul_q8_0_q8, rows, cols, n_tok, first, count, s, q8_0);
      if (k.gemv_q8_0_q8 != nullptr && n_tok <= kGemvStepTokens)
        check_matmul_fn(isa_name(isa), k.gemv_q8_0_q8, rows, cols, n_tok, first, count, s, q8_0);
    }
  }
}

// E8M0 scales at the ends of the range, which the random weights above never draw: 0 (the
// subnormal 2^-127), 1 (the smallest normal), 200, in whole rows, alternating, and spread over
// 0..200. The bound is relative to the row's terms with no absolute slack, so a scale decoded as
// zero or as another power of two fails it even where the results are ~1e-37.
TEST_CASE("q8: extreme E8M0 scales give the reference's results", "[cpu-kernels][q8]") {
  const size_t rows = 8, cols = 544, nb = cols / 32;
  Weight w = random_weight(gptoss_dtype_mxfp4, rows, cols, 41, 0, -12);
  std::mt19937 rng(43);
  uint8_t* sc = w.owned_scales.data();
  for (size_t b = 0; b < nb; ++b) {
    sc[0 * nb + b] = 0;
    sc[1 * nb + b] = 1;
    sc[2 * nb + b] = uint8_t(b % 2);
    sc[3 * nb + b] = 200;
    sc[4 * nb + b] = b % 2 ? 0 : 200;
    for (size_t r = 5; r < rows; ++r) sc[r * nb + b] = uint8_t(rng() % 201);
  }
  std::vector<float> row(cols);
  for (size_t n_tok : {1u, 3u, 9u}) {
    const auto x = outlier_activations(n_tok, cols, uint32_t(44 + n_tok));
    Q8Storage mem;
    Q8Acts& q = mem.prepare(n_tok, cols);
    quantize_q8_reference(x.data(), cols, n_tok, q);
    std::vector<float> want(n_tok * rows), got(n_tok * rows);
    matmul_mxfp4_q8_reference(w, 0, rows, q, 0, n_tok, want.data(), rows);
    for (Isa isa : q8_isas()) {
      const Kernels& k = kernels_for(isa);
      for (const auto& [name, fn] :
           {std::pair{"matmul", k.matmul_mxfp4_q8}, std::pair{"gemv", k.gemv_mxfp4_q8}}) {
        if (fn == nullptr || (fn == k.gemv_mxfp4_q8 && n_tok > kGemvStepTokens)) continue;
        std::fill(got.begin(), got.end(), -777.0f);
        fn(w, 0, rows, q, 0, n_tok, got.data(), rows);
        for (size_t i = 0; i < rows; ++i) {
          decode_row(w, i, row.data());
          for (size_t t = 0; t < n_tok; ++t) {
            const double mag = row_terms(row.data(), sc + i * nb, q, t, nb);
            const double y_ref = want[t * rows + i], y = got[t * rows + i];
            INFO(isa_name(isa) << " " << name << " row " << i << " token " << t << " of " << n_tok
                               << ": got " << y << " reference " << y_ref << " (terms " << mag
                               << ")");
            CHECK(std::fabs(y - y_ref) <= 4e-6 * mag + 1e-44);
            if (i < 3) CHECK(std::fabs(y_ref) < 1e-30);  // the scales' small end did reach it
          }
        }
      }
    }
  }
}

// Decode rows go through the kernels in quads a quarter of the range apart (row_streams.hpp):
// a row's result must not depend on how the caller split the rows.
TEST_CASE("q8: one token's results do not depend on how the rows are split", "[cpu-kernels][q8]") {
  const size_t rows = 45, cols = 544;
  const auto x = outlier_activations(1, cols, 96);
  for (gptoss_dtype dtype : {gptoss_dtype_mxfp4, gptoss_dtype_q8_0}) {
    const Weight w = random_weight(dtype, rows, cols, 97);
    for (Isa isa : q8_isas()) {
      const Kernels& k = kernels_for(isa);
      const MatmulQ8 matmul = dtype == gptoss_dtype_q8_0 ? k.matmul_q8_0_q8 : k.matmul_mxfp4_q8;
      if (matmul == nullptr) continue;
      Q8Storage mem;
      Q8Acts& q = mem.prepare(1, cols);
      k.quantize_q8(x.data(), cols, 1, q);
      std::vector<float> whole(rows), split(rows);
      matmul(w, 0, rows, q, 0, 1, whole.data(), rows);
      for (size_t r0 = 0, n = 1; r0 < rows; r0 += n, n = n % 9 + 2)
        matmul(w, r0, std::min(n, rows - r0), q, 0, 1, split.data() + r0, rows);
      INFO(isa_name(isa) << (dtype == gptoss_dtype_q8_0 ? " q8_0" : " mxfp4"));
      CHECK(whole == split);
    }
  }
}

// A decode step's tokens of one expert (gemv_mxfp4_q8, where a level has it): each token bit
// for bit its one-token GEMV, for any number of tokens (groups of up to 4 share the decoded
// codes; more go through L2 blocks), rows split anyhow, columns ending in a partial group of
// 4 blocks (160 = 5 blocks) or one block.
TEST_CASE("q8: a step's tokens of one weight each get their one-token GEMV", "[cpu-kernels][q8]") {
  bool any = false;
  for (gptoss_dtype dtype : {gptoss_dtype_mxfp4, gptoss_dtype_q8_0})
    for (Isa isa : q8_isas()) {
      const Kernels& k = kernels_for(isa);
      const bool q8_0 = dtype == gptoss_dtype_q8_0;
      const MatmulQ8 step = q8_0 ? k.gemv_q8_0_q8 : k.gemv_mxfp4_q8;
      const MatmulQ8 matmul = q8_0 ? k.matmul_q8_0_q8 : k.matmul_mxfp4_q8;
      if (step == nullptr) continue;
      any = true;
      for (size_t cols : {2880, 160, 32})
        for (size_t rows : {1, 2, 7, 45, 300})
          for (size_t n_tok : {1, 2, 3, 4, 5, 8, 9, 16}) {
            INFO(isa_name(isa) << (q8_0 ? " q8_0 " : " mxfp4 ") << rows << "x" << cols << ", "
                               << n_tok << " tokens");
            const Weight w = random_weight(dtype, rows, cols, uint32_t(101 + rows + cols), 0, -8);
            const auto x = outlier_activations(n_tok + 1, cols, uint32_t(102 + n_tok));
            Q8Storage mem;
            Q8Acts& q = mem.prepare(n_tok + 1, cols);
            k.quantize_q8(x.data(), cols, n_tok + 1, q);
            std::vector<float> got(n_tok * rows), alone(n_tok * rows), cut(n_tok * rows);
            step(w, 0, rows, q, 1, n_tok, got.data(), rows);  // tokens 1.. (t0 != 0)
            for (size_t t = 0; t < n_tok; ++t)
              matmul(w, 0, rows, q, 1 + t, 1, alone.data() + t * rows, rows);
            CHECK(got == alone);
            const size_t a = rows / 3;
            step(w, 0, a, q, 1, n_tok, cut.data(), rows);
            step(w, a, rows - a, q, 1, n_tok, cut.data() + a, rows);
            CHECK(got == cut);
          }
    }
  if (!any) WARN("no level of this CPU has the several-token int8 GEMV: not tested");
}

// The avx2 and avx2vnni levels hold the two AVX2 variants (vpmaddubsw; AVX-VNNI's vpdpbusd):
// test both wherever they can run, the matmul against the reference and the several-token GEMV
// of a decode step against the variant's own one-token matmul.
TEST_CASE("q8: both AVX2 matmul variants (vpmaddubsw and AVX-VNNI)", "[cpu-kernels][q8]") {
  if (int(isa_detect()) < int(Isa::avx2)) return;
  struct Variant {
    const char* name;
    MatmulQ8 matmul, step;
  };
  std::vector<Variant> variants = {{"avx2 maddubs", matmul_mxfp4_q8_avx2, gemv_mxfp4_q8_avx2}};
  if (cpu_has_avxvnni()) variants.push_back({"avx2 avxvnni", matmul_mxfp4_q8_avxvnni, gemv_mxfp4_q8_avxvnni});
  else WARN("no AVX-VNNI on this CPU: its variant is not tested");
  for (const Variant& v : variants) {
    for (size_t cols : {32, 64, 96, 544})
      for (size_t rows : {1, 5, 16, 37})
        for (size_t n_tok : {1, 2, 9, 17}) check_matmul_fn(v.name, v.matmul, rows, cols, n_tok);
    check_matmul_fn(v.name, v.matmul, 40, 96, 3, 7, 30);
    check_matmul_fn(v.name, v.matmul, 5760, 2880, 1, 5700, 60);
    check_matmul_fn(v.name, v.matmul, 2880, 2880, 12, 2850, 30);
    for (size_t cols : {2880, 160, 32})
      for (size_t n_tok : {2, 3, 4, 5, 16}) {
        const size_t rows = 45;
        const Weight w = random_weight(gptoss_dtype_mxfp4, rows, cols, uint32_t(7 + cols), 0, -8);
        const auto x = outlier_activations(n_tok, cols, uint32_t(8 + n_tok));
        Q8Storage mem;
        Q8Acts& q = mem.prepare(n_tok, cols);
        quantize_q8_reference(x.data(), cols, n_tok, q);
        std::vector<float> got(n_tok * rows), alone(n_tok * rows);
        v.step(w, 0, rows, q, 0, n_tok, got.data(), rows);
        for (size_t t = 0; t < n_tok; ++t) v.matmul(w, 0, rows, q, t, 1, alone.data() + t * rows, rows);
        INFO(v.name << " " << rows << "x" << cols << ", " << n_tok << " tokens");
        CHECK(got == alone);
      }
  }
}

}  // namespace gptoss::cpu::test
