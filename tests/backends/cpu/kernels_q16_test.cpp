// The fast mode's int16 kernels for Q8_0 weights (quantize_q16, matmul_q8_0_q16) of every level
// that has them, on random data, against their scalar definitions (scalar/matmul.cpp) and
// against the exact fp32 product:
//   - quantization is bit-identical to the reference (same float operations, RNE rounding);
//   - the SIMD matmul equals the reference up to fp32 rounding of the block sums and their
//     scaled sum: |y - ref| <= 1e-6 + 4e-6 * sum_b |e_b| d_b sum_k |w_k q_k|;
//   - the reference is within the quantization bound of the exact dot product:
//       |ref - w.x| <= sum_b (d_b / 2) sum_k |w_k| * (1 + 1e-5) + 1e-6 * sum |w x|;
//   - every token count and every split of the rows gives a token its one-token bits;
//   - every level's matmul gives the bits of the order of a row's sum the levels share (16
//     chains, written out in scalar code below), on the rows and on a weight repacked as the
//     upload does (Weight::q8_0_lanes).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "choose.hpp"
#include "cpu_memory.hpp"
#include "formats.hpp"
#include "kernels.hpp"
#include "q8_storage.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu::test {
namespace {

std::vector<Isa> q16_isas() { return isas_with(&Kernels::matmul_q8_0_q16); }
std::vector<Isa> quantize_q16_isas() { return isas_with(&Kernels::quantize_q16); }

void check_quantize_q16(Isa isa, size_t n_tok, size_t cols) {
  const auto x = outlier_activations(n_tok, cols, uint32_t(cols + n_tok));
  Q16Storage ref_mem, got_mem;
  Q16Acts& ref = ref_mem.prepare(n_tok, cols);
  Q16Acts& got = got_mem.prepare(n_tok, cols);
  quantize_q16_reference(x.data(), cols, n_tok, ref);
  // Garbage first: the kernel must write every value of the padding too.
  for (size_t i = 0; i < n_tok * got.q_stride; ++i) got.q[i] = int16_t(i * 7 + 3);
  for (size_t i = 0; i < n_tok * got.b_stride; ++i) got.d[i] = 1e30f;
  kernels_for(isa).quantize_q16(x.data(), cols, n_tok, got);
  size_t bad = 0;
  for (size_t i = 0; i < n_tok * ref.q_stride; ++i) bad += ref.q[i] != got.q[i];
  for (size_t i = 0; i < n_tok * ref.b_stride; ++i) bad += ref.d[i] != got.d[i];
  INFO(isa_name(isa) << " tokens " << n_tok << " cols " << cols);
  CHECK(bad == 0);
  // Every block uses its full range and the reconstruction is within half a step, plus the
  // rounding of x * (1 / d) in float (relative 2^-23 of up to 32767 steps: 0.004 of a step).
  for (size_t t = 0; t < n_tok; ++t)
    for (size_t b = 0; b < cols / 32; ++b) {
      int amax = 0;
      const double d = ref.d[t * ref.b_stride + b];
      for (size_t j = 0; j < 32; ++j) {
        const int q = ref.q[t * ref.q_stride + 32 * b + j];
        amax = std::max(amax, std::abs(q));
        CHECK(std::fabs(double(x[t * cols + 32 * b + j]) - q * d) <= 0.505 * d);
      }
      CHECK(amax == 32767);
    }
}

using MatmulQ16 = decltype(Kernels::matmul_q8_0_q16);

// The contract's bounds (top of the file) for rows [first, first + count) of a random Q8_0
// weight and n_tok random tokens (two leading tokens the kernel must skip: t0 = 2).
void check_matmul(const char* name, MatmulQ16 matmul, const Weight& w, size_t n_tok, size_t first,
                  size_t count, uint32_t seed) {
  const size_t cols = w.cols, nb = cols / 32;
  const auto x = outlier_activations(n_tok, cols, seed);
  Q16Storage mem;
  Q16Acts& q = mem.prepare(n_tok + 2, cols);
  std::vector<float> xx(2 * cols, 0.5f);
  xx.insert(xx.end(), x.begin(), x.end());
  quantize_q16_reference(xx.data(), cols, n_tok + 2, q);
  const size_t ldy = count + 5;
  std::vector<float> want(n_tok * ldy, -777.0f), got(n_tok * ldy, -777.0f);
  matmul_q8_0_q16_reference(w, first, count, q, 2, n_tok, want.data(), ldy);
  matmul(w, first, count, q, 2, n_tok, got.data(), ldy);
  std::vector<float> row(cols);
  size_t bad = 0, bad_exact = 0;
  for (size_t i = 0; i < count; ++i) {
    decode_row(w, first + i, row.data());
    for (size_t t = 0; t < n_tok; ++t) {
      const int16_t* qt = q.q + (t + 2) * q.q_stride;
      double mag = 0.0, bound = 0.0, exact = 0.0, exact_mag = 0.0;
      for (size_t b = 0; b < nb; ++b) {
        const double d = q.d[(t + 2) * q.b_stride + b];
        double wabs = 0.0;
        for (size_t j = 0; j < 32; ++j) {
          const double wk = row[32 * b + j], xk = x[t * cols + 32 * b + j];
          mag += d * std::fabs(wk) * std::abs(qt[32 * b + j]);
          wabs += std::fabs(wk);
          exact += wk * xk;
          exact_mag += std::fabs(wk * xk);
        }
        bound += 0.5 * d * wabs;
      }
      const double y_ref = want[t * ldy + i], y = got[t * ldy + i];
      if (!(std::fabs(y - y_ref) <= 1e-6 + 4e-6 * mag) && bad++ < 5)
        UNSCOPED_INFO(name << " row " << first + i << " token " << t << ": got " << y
                           << " reference " << y_ref);
      if (!(std::fabs(y_ref - exact) <= bound * (1 + 1e-5) + 1e-6 * exact_mag + 1e-30) &&
          bad_exact++ < 5)
        UNSCOPED_INFO("reference row " << first + i << " token " << t << ": " << y_ref
                                       << " vs exact " << exact << " (bound " << bound << ")");
    }
    for (size_t t = 0; t < n_tok; ++t)
      for (size_t j = count; j < ldy; ++j) CHECK(got[t * ldy + j] == -777.0f);
  }
  INFO(name << " " << w.rows << "x" << cols << " rows " << first << "+" << count << ", " << n_tok
            << " tokens");
  CHECK(bad == 0);
  CHECK(bad_exact == 0);
}

void check_shape(Isa isa, size_t rows, size_t cols, size_t n_tok, size_t first = 0,
                 size_t count = 0) {
  const Weight w = random_weight(gptoss_dtype_q8_0, rows, cols, uint32_t(rows * 13 + cols));
  check_matmul(isa_name(isa), kernels_for(isa).matmul_q8_0_q16, w, n_tok, first,
               count == 0 ? rows : count, uint32_t(cols * 3 + n_tok));
}

}  // namespace

TEST_CASE("q16: quantization is bit-identical to the reference", "[cpu-kernels][q16]") {
  for (Isa isa : quantize_q16_isas())
    for (size_t cols : {32, 64, 96, 544, 2880})
      for (size_t n_tok : {1, 3}) check_quantize_q16(isa, n_tok, cols);
  if (quantize_q16_isas().empty()) WARN("no level of this CPU has the int16 kernels: not tested");
}

TEST_CASE("q16: Q8_0 x int16 matmul, tails of rows, blocks and tokens", "[cpu-kernels][q16]") {
  for (Isa isa : q16_isas()) {
    for (size_t cols : {32, 64, 96, 160, 512, 544})  // partial and whole chunks of 16 blocks
      for (size_t rows : {1, 5, 16, 17, 37})
        for (size_t n_tok : {1, 2, 9, 17}) check_shape(isa, rows, cols, n_tok);
    check_shape(isa, 40, 96, 3, 7, 30);  // a row offset
  }
}

// The attention projections of gpt-oss-20b (q, k, v fused: 5120 x 2880; output: 2880 x 4096).
TEST_CASE("q16: Q8_0 x int16 matmul at real gpt-oss shapes", "[cpu-kernels][q16]") {
  for (Isa isa : q16_isas()) {
    check_shape(isa, 5120, 2880, 1, 0, 256);
    check_shape(isa, 5120, 2880, 1, 5060, 60);
    check_shape(isa, 2880, 4096, 8, 2850, 30);
    check_shape(isa, 2880, 4096, 64, 0, 48);
  }
}

// Fresh random shapes, weights and activations each run (the seed is printed on failure).
TEST_CASE("q16: every level against the reference on fresh random shapes", "[cpu-kernels][q16]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t lo, size_t hi) {
    return std::uniform_int_distribution<size_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 12; ++round) {
    const size_t cols = 32 * pick(1, 100), rows = pick(1, 80), first = pick(0, rows - 1);
    const size_t count = pick(1, rows - first), n_tok = pick(1, 20);
    const Weight w = random_weight(gptoss_dtype_q8_0, rows, cols, uint32_t(rng()));
    const uint32_t s = uint32_t(rng());
    INFO("round " << round);
    for (Isa isa : q16_isas())
      check_matmul(isa_name(isa), kernels_for(isa).matmul_q8_0_q16, w, n_tok, first, count, s);
  }
}

// f16 steps at the ends of their range (zero, subnormals, 65504, negative), in whole rows and
// alternating; the bound has no absolute slack, so a step decoded wrongly fails it.
TEST_CASE("q16: extreme Q8_0 steps give the reference's results", "[cpu-kernels][q16]") {
  const size_t rows = 9, cols = 544, nb = cols / 32;
  Weight w = random_weight(gptoss_dtype_q8_0, rows, cols, 61);
  const uint16_t steps[][2] = {{0x0000, 0x0000}, {0x0001, 0x0001}, {0x03ff, 0x83ff},
                               {0x7bff, 0x7bff}, {0x0001, 0x7bff}, {0xbc00, 0x3c00},
                               {0x0400, 0x8001}, {0x7bff, 0x0000}, {0x3555, 0xfbff}};
  for (size_t r = 0; r < rows; ++r)
    for (size_t b = 0; b < nb; ++b)
      std::memcpy(w.owned_data.data() + r * w.row_bytes + 34 * b, &steps[r][b % 2], 2);
  for (size_t n_tok : {1u, 3u, 9u})
    for (Isa isa : q16_isas()) {
      const auto matmul = kernels_for(isa).matmul_q8_0_q16;
      const auto x = outlier_activations(n_tok, cols, uint32_t(64 + n_tok));
      Q16Storage mem;
      Q16Acts& q = mem.prepare(n_tok, cols);
      quantize_q16_reference(x.data(), cols, n_tok, q);
      std::vector<float> want(n_tok * rows), got(n_tok * rows, -777.0f);
      matmul_q8_0_q16_reference(w, 0, rows, q, 0, n_tok, want.data(), rows);
      matmul(w, 0, rows, q, 0, n_tok, got.data(), rows);
      std::vector<float> row(cols);
      for (size_t i = 0; i < rows; ++i) {
        decode_row(w, i, row.data());
        for (size_t t = 0; t < n_tok; ++t) {
          double mag = 0.0;
          for (size_t k = 0; k < cols; ++k)
            mag += q.d[t * q.b_stride + k / 32] * std::fabs(row[k]) *
                   std::abs(q.q[t * q.q_stride + k]);
          INFO(isa_name(isa) << " row " << i << " token " << t << " of " << n_tok << ": got "
                             << got[t * rows + i] << " reference " << want[t * rows + i]);
          CHECK(std::fabs(double(got[t * rows + i]) - want[t * rows + i]) <= 4e-6 * mag + 1e-44);
          if (i == 0) CHECK(got[t * rows + i] == 0.0f);
        }
      }
    }
}

// Every token count gives each token its one-token GEMV's bits, whatever the split of the rows.
TEST_CASE("q16: every token count gives each token its one-token result", "[cpu-kernels][q16]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int shape = 0; shape < 8; ++shape) {
    const size_t rows = 1 + rng() % 200, cols = 32 * (1 + rng() % 100);
    const size_t n_tok = 2 + rng() % 40;
    const Weight w = random_weight(gptoss_dtype_q8_0, rows, cols, uint32_t(rng()));
    const auto x = outlier_activations(n_tok + 1, cols, uint32_t(rng()));
    for (Isa isa : q16_isas()) {
      const Kernels& k = kernels_for(isa);
      INFO(isa_name(isa) << " " << rows << "x" << cols << ", " << n_tok << " tokens");
      Q16Storage mem;
      Q16Acts& q = mem.prepare(n_tok + 1, cols);
      k.quantize_q16(x.data(), cols, n_tok + 1, q);
      std::vector<float> batched(n_tok * rows), alone(n_tok * rows), cut(n_tok * rows), split(rows);
      for (size_t t = 0; t < n_tok; ++t)  // tokens 1.. (t0 != 0)
        k.matmul_q8_0_q16(w, 0, rows, q, 1 + t, 1, alone.data() + t * rows, rows);
      k.matmul_q8_0_q16(w, 0, rows, q, 1, n_tok, batched.data(), rows);
      CHECK(std::memcmp(batched.data(), alone.data(), batched.size() * 4) == 0);
      const size_t a = rows / 3;
      k.matmul_q8_0_q16(w, 0, a, q, 1, n_tok, cut.data(), rows);
      k.matmul_q8_0_q16(w, a, rows - a, q, 1, n_tok, cut.data() + a, rows);
      CHECK(std::memcmp(cut.data(), alone.data(), cut.size() * 4) == 0);
      for (size_t r0 = 0, n = 1; r0 < rows; r0 += n, n = n % 9 + 2)  // one token, rows split anyhow
        k.matmul_q8_0_q16(w, r0, std::min(n, rows - r0), q, 1, 1, split.data() + r0, rows);
      CHECK(std::memcmp(split.data(), alone.data(), rows * 4) == 0);
    }
  }
}

// Which activations a Q8_0 weight takes in fast precision where the level has both paths: int8
// for the unembedding, int16 for any other matrix (the projections), at every token count;
// fp32 in exact precision.
TEST_CASE("q16: the chooser gives int16 activations to the Q8_0 projections",
          "[cpu-kernels][q16]") {
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
          const bool int16 = !logits && fast && k.matmul_q8_0_q16 != nullptr;
          CHECK((acts_for(k, w, n, fast) == MatmulActs::q16) == int16);
        }
  }
}

}  // namespace gptoss::cpu::test

namespace gptoss::cpu::test {
namespace {

std::vector<Isa> q16_lanes_isas() { return isas_with(&Kernels::matmul_q8_0_lanes_q16); }

// w (rows % 16 == 0) repacked as the upload repacks it.
Weight q8_0_lanes_of(const Weight& w) {
  Weight l = w;
  l.owned_data.assign(w.owned_data.size(), 0xa5);
  repack_q8_0_lanes(w.data, w.cols, 0, w.rows / 16, l.owned_data.data());
  l.data = l.owned_data.data();
  l.q8_0_lanes = true;
  return l;
}

// The levels' order of a row's sum (Kernels::matmul_q8_0_q16), written out in scalar code: per
// block the exact integer sum S_b of w q, fma(float(S_b), e_b * d_b, .) into chain b % 16 in
// increasing b, then the chains added as a tree: chain L with L + 8, then + 4, + 2, + 1.
float sixteen_chains(const Weight& w, size_t row, const Q16Acts& x, size_t t) {
  const int16_t* q = x.q + t * x.q_stride;
  float chain[16] = {};
  for (size_t b = 0; b < w.cols / 32; ++b) {
    const uint8_t* block = w.data + row * w.row_bytes + 34 * b;
    uint16_t e16;
    std::memcpy(&e16, block, 2);
    int32_t s = 0;
    for (size_t j = 0; j < 32; ++j) s += int32_t(int8_t(block[2 + j])) * q[32 * b + j];
    const float c = f16_to_f32(e16) * x.d[t * x.b_stride + b];
    chain[b % 16] = std::fma(float(s), c, chain[b % 16]);
  }
  for (size_t half = 8; half >= 1; half /= 2)
    for (size_t l = 0; l < half; ++l) chain[l] += chain[l + half];
  return chain[0];
}

}  // namespace

TEST_CASE("q16 lanes: the repack keeps every weight and step (decode_row reads both layouts)",
          "[cpu-kernels][q16]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int shape = 0; shape < 6; ++shape) {
    const size_t rows = 16 * (1 + rng() % 12), cols = 32 * (1 + rng() % 40);
    const Weight w = random_weight(gptoss_dtype_q8_0, rows, cols, uint32_t(rng()));
    INFO(rows << "x" << cols);
    CHECK(rows_decoded_differently(w, q8_0_lanes_of(w), 1, true) == 0);
  }
}

// The kernel on the repacked weight, and the same level's kernel on the rows where it has one,
// against the sixteen chains: the same bits for every token count and every cut at a tile, and
// the reference's bounds directly.
TEST_CASE("q16 lanes: the repacked layout gives the sixteen chains' bits at every token count",
          "[cpu-kernels][q16]") {
  if (q16_lanes_isas().empty()) WARN("no level of this CPU reads Q8_0 lanes: not tested");
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  struct Shape {
    size_t rows, cols, n_tok;
  };
  std::vector<Shape> shapes = {{16, 32, 1},     {48, 96, 8},    {32, 512, 3},  {80, 2880, 1},
                               {80, 2880, 8},   {64, 544, 24},  {16, 2880, 9}, {96, 4096, 5},
                               {5120, 2880, 1}, {2880, 4096, 2}};
  for (int i = 0; i < 8; ++i)
    shapes.push_back({16 * (1 + rng() % 20), 32 * (1 + rng() % 100), 1 + rng() % 40});
  for (const Shape& sh : shapes) {
    const Weight w = random_weight(gptoss_dtype_q8_0, sh.rows, sh.cols, uint32_t(rng()));
    const Weight l = q8_0_lanes_of(w);
    const auto x = outlier_activations(sh.n_tok + 1, sh.cols, uint32_t(rng()));
    for (Isa isa : q16_lanes_isas()) {
      const Kernels& k = kernels_for(isa);
      INFO(isa_name(isa) << " " << sh.rows << "x" << sh.cols << ", " << sh.n_tok << " tokens");
      Q16Storage mem;
      Q16Acts& q = mem.prepare(sh.n_tok + 1, sh.cols);
      k.quantize_q16(x.data(), sh.cols, sh.n_tok + 1, q);
      const size_t rows = sh.rows, n = sh.n_tok;
      std::vector<float> want(n * rows), got(n * rows, -1.0f), alone(n * rows), cut(n * rows);
      for (size_t t = 0; t < n; ++t)
        for (size_t r = 0; r < rows; ++r) want[t * rows + r] = sixteen_chains(w, r, q, 1 + t);
      if (k.matmul_q8_0_q16 != nullptr) {
        std::vector<float> in_rows(n * rows, -1.0f);
        k.matmul_q8_0_q16(w, 0, rows, q, 1, n, in_rows.data(), rows);
        CHECK(same_bits(in_rows, want));
      }
      k.matmul_q8_0_lanes_q16(l, 0, rows, q, 1, n, got.data(), rows);
      CHECK(same_bits(got, want));
      for (size_t t = 0; t < n; ++t)
        k.matmul_q8_0_lanes_q16(l, 0, rows, q, 1 + t, 1, alone.data() + t * rows, rows);
      CHECK(same_bits(alone, want));
      const size_t a = 16 * (rows / 16 / 3);  // cut at a tile, as the ops' pieces are
      k.matmul_q8_0_lanes_q16(l, 0, a, q, 1, n, cut.data(), rows);
      k.matmul_q8_0_lanes_q16(l, a, rows - a, q, 1, n, cut.data() + a, rows);
      CHECK(same_bits(cut, want));
      if (rows * sh.cols <= 200 * 3200)
        check_matmul(isa_name(isa), k.matmul_q8_0_lanes_q16, l, n, 16 * (rows / 32),
                     rows - 16 * (rows / 32), uint32_t(rng()));
    }
  }
}

TEST_CASE("q16 lanes: the chooser and the upload", "[cpu-kernels][q16]") {
  const Weight src = random_weight(gptoss_dtype_q8_0, 64, 96, 95);
  for (Isa isa : q16_lanes_isas()) {
    const Kernels& k = kernels_for(isa);
    const Weight l = q8_0_lanes_of(src);
    for (size_t n : {1, 2, 5, 8, 64}) {
      INFO(isa_name(isa) << " " << n << " tokens");
      CHECK(choose_matmul(k, l, n, n, true) == MatmulKernel::q16_lanes);
    }
  }
  gptoss_tensor_desc d = persistent_desc(src, "layers.0.attn.q", gptoss_tensor_attn_q);
  ThreadPool pool(2);
  auto upload = [&](gptoss_tensor_role role, bool lanes) {
    d.role = role;
    auto w = uploaded(pool, d, UploadRepacks{nullptr, lanes ? repack_q8_0_lanes : nullptr});
    REQUIRE(w);
    return w;
  };
  // The attention projections and the unembedding; in exact precision (no repack) none.
  for (gptoss_tensor_role role : {gptoss_tensor_attn_q, gptoss_tensor_attn_k, gptoss_tensor_attn_v,
                                  gptoss_tensor_attn_out, gptoss_tensor_unembedding}) {
    INFO("role " << int(role));
    const auto w = upload(role, true);
    CHECK(w->q8_0_lanes);
    CHECK(!w->bf16_lanes);
    CHECK(w->data != src.data);
    CHECK(rows_decoded_differently(src, *w, 7) == 0);
    CHECK(!upload(role, false)->q8_0_lanes);
  }
  CHECK(!upload(gptoss_tensor_embedding, true)->q8_0_lanes);
  const Weight again = random_weight(gptoss_dtype_q8_0, 64, 96, 95);
  CHECK(src.owned_data == again.owned_data);  // the host's memory is left as it was
  d.shape[0] = 40;                            // not whole tiles of 16 rows: kept as rows
  d.data_size = 40 * 34 * 3;
  CHECK(!upload(gptoss_tensor_attn_q, true)->q8_0_lanes);
  CHECK(!upload(gptoss_tensor_unembedding, true)->q8_0_lanes);
}

}  // namespace gptoss::cpu::test
