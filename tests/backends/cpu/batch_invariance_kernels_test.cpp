// Batch invariance of the CPU matmul kernels (docs/architecture.md, "Determinism"): at every
// level this CPU runs, a call over n tokens gives each token exactly, bit for bit, what a call
// over that token alone gives, whichever path (GEMV, pairs, row blocks, panels, int8 lanes)
// the token count picks, and however the caller cuts the rows. Random shapes from a fresh
// seed, printed on failure.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "attention_kernels.hpp"
#include "backends/cpu/test_weights.hpp"
#include "choose.hpp"
#include "dense_bf16_kernels.hpp"
#include "kernels.hpp"
#include "q8_storage.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu::test {
namespace {

// Token counts that reach every path of matmul_with and the chooser: one, pairs, the row
// blocks, the step GEMVs (<= 16), the panels and past a tile's width.
constexpr size_t kTokenCounts[] = {2, 3, 4, 5, 7, 8, 13, 16, 17, 23, 40, 64};

}  // namespace

TEST_CASE("matmul: every token count gives each token its one-token result", "[cpu-kernels]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (gptoss_dtype d : {gptoss_dtype_f32, gptoss_dtype_bf16, gptoss_dtype_f16, gptoss_dtype_q8_0,
                         gptoss_dtype_mxfp4})
    for (int shape = 0; shape < 3; ++shape) {
      const bool blocks = d == gptoss_dtype_mxfp4 || d == gptoss_dtype_q8_0;
      const size_t rows = 1 + rng() % 200;
      const size_t cols = blocks ? 32 * (1 + rng() % 100) : 1 + rng() % 3000;
      const Weight w = random_weight(d, rows, cols, uint32_t(rng()));
      const size_t n_tok = kTokenCounts[rng() % std::size(kTokenCounts)];
      std::vector<float> x = random_floats(n_tok * cols, uint32_t(rng()));
      if (d == gptoss_dtype_mxfp4) {
        std::vector<float> xk(x.size());
        permute_for_mxfp4(x.data(), cols, n_tok, cols, xk.data());
        x = xk;
      }
      for (Isa isa : supported_isas()) {
        INFO(isa_name(isa) << " dtype " << int(d) << " " << rows << "x" << cols << ", " << n_tok
                           << " tokens");
        const Kernels& k = kernels_for(isa);
        std::vector<float> batched(n_tok * rows), alone(n_tok * rows), cut(n_tok * rows);
        k.matmul(w, 0, rows, x.data(), cols, n_tok, batched.data(), rows);
        for (size_t t = 0; t < n_tok; ++t)
          k.matmul(w, 0, rows, x.data() + t * cols, cols, 1, alone.data() + t * rows, rows);
        CHECK(same_bits(batched, alone));
        const size_t a = rows / 3;  // the rows cut in two calls, as the ops' pieces cut them
        k.matmul(w, 0, a, x.data(), cols, n_tok, cut.data(), rows);
        k.matmul(w, a, rows - a, x.data(), cols, n_tok, cut.data() + a, rows);
        CHECK(same_bits(cut, alone));
      }
    }
}

TEST_CASE("q8: every token count gives each token its one-token result", "[cpu-kernels][q8]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int shape = 0; shape < 8; ++shape) {
    const size_t rows = 1 + rng() % 200, cols = 32 * (1 + rng() % 100);
    const size_t n_tok = kTokenCounts[rng() % std::size(kTokenCounts)];
    const gptoss_dtype dtype = shape % 2 ? gptoss_dtype_q8_0 : gptoss_dtype_mxfp4;
    const Weight w = random_weight(dtype, rows, cols, uint32_t(rng()), 0, -8);
    std::vector<float> x = random_floats((n_tok + 1) * cols, uint32_t(rng()));
    for (size_t i = 0; i < x.size(); i += 37) x[i] *= 40.0f;  // outliers: steps differ per block
    for (Isa isa : supported_isas()) {
      const Kernels& k = kernels_for(isa);
      const bool q8_0 = dtype == gptoss_dtype_q8_0;
      const auto matmul = q8_0 ? k.matmul_q8_0_q8 : k.matmul_mxfp4_q8;
      const auto gemv = q8_0 ? k.gemv_q8_0_q8 : k.gemv_mxfp4_q8;
      if (matmul == nullptr) continue;
      INFO(isa_name(isa) << (q8_0 ? " q8_0 " : " mxfp4 ") << rows << "x" << cols << ", " << n_tok
                         << " tokens");
      Q8Storage mem;
      Q8Acts& q = mem.prepare(n_tok + 1, cols);
      k.quantize_q8(x.data(), cols, n_tok + 1, q);
      std::vector<float> batched(n_tok * rows), alone(n_tok * rows), cut(n_tok * rows);
      for (size_t t = 0; t < n_tok; ++t)  // tokens 1.. (t0 != 0)
        matmul(w, 0, rows, q, 1 + t, 1, alone.data() + t * rows, rows);
      matmul(w, 0, rows, q, 1, n_tok, batched.data(), rows);
      CHECK(same_bits(batched, alone));
      const size_t a = rows / 3;
      matmul(w, 0, a, q, 1, n_tok, cut.data(), rows);
      matmul(w, a, rows - a, q, 1, n_tok, cut.data() + a, rows);
      CHECK(same_bits(cut, alone));
      if (gemv != nullptr && n_tok <= kGemvStepTokens) {
        std::vector<float> step(n_tok * rows);
        gemv(w, 0, rows, q, 1, n_tok, step.data(), rows);
        CHECK(same_bits(step, alone));
      }
    }
  }
}

// What an op runs: the chooser's kernel for every (step size, tokens of this weight) pair, in
// both precisions, must give a token the same bits as a one-token step does.
TEST_CASE("the chooser's kernels agree for every step size", "[cpu-kernels]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (gptoss_dtype d : {gptoss_dtype_bf16, gptoss_dtype_mxfp4, gptoss_dtype_q8_0})
    for (bool logits : {false, true}) {
      if (logits && d == gptoss_dtype_mxfp4) continue;
      const size_t rows = 1 + rng() % 150, cols = 32 * (1 + rng() % 60);
      Weight w = random_weight(d, rows, cols, uint32_t(rng()), 0, -8);
      w.logits_only = logits;
      const size_t n_tok = kTokenCounts[rng() % std::size(kTokenCounts)];
      const std::vector<float> x = random_floats(n_tok * cols, uint32_t(rng()));
      for (Isa isa : supported_isas()) {
        if (isa == Isa::scalar) continue;  // scalar devices run the reference ops
        const Kernels& k = kernels_for(isa);
        for (bool fast : {false, true}) {
          INFO(isa_name(isa) << (fast ? " fast" : " exact") << " dtype " << int(d)
                             << (logits ? " logits" : "") << " " << rows << "x" << cols << ", "
                             << n_tok << " tokens");
          // The activations as the op prepares them for its kernel.
          auto run = [&](size_t step_tokens, size_t t0, size_t n, float* y) {
            const MatmulKernel kernel = choose_matmul(k, w, step_tokens, n, fast);
            std::vector<float> buf;
            Q8Storage q8;
            Q16Storage q16;
            ActsView acts;
            switch (acts_of(kernel)) {
              case MatmulActs::bf16_pairs: {
                acts.ld = dense_bf16_pairs_stride(cols);
                buf.assign(n * acts.ld, 0.0f);
                for (size_t t = 0; t < n; ++t)
                  k.attention_bf16->round_pairs(x.data() + (t0 + t) * cols, cols / 2,
                                                buf.data() + t * acts.ld);
                acts.x = buf.data();
                break;
              }
              case MatmulActs::q8: {
                Q8Acts& q = q8.prepare(n, cols);
                k.quantize_q8(x.data() + t0 * cols, cols, n, q);
                acts.q8 = &q;
                break;
              }
              case MatmulActs::q16: {
                Q16Acts& q = q16.prepare(n, cols);
                k.quantize_q16(x.data() + t0 * cols, cols, n, q);
                acts.q16 = &q;
                break;
              }
              case MatmulActs::fp32:
                buf.resize(n * cols);
                if (d == gptoss_dtype_mxfp4)
                  permute_for_mxfp4(x.data() + t0 * cols, cols, n, cols, buf.data());
                else
                  std::copy(x.begin() + std::ptrdiff_t(t0 * cols),
                            x.begin() + std::ptrdiff_t((t0 + n) * cols), buf.begin());
                acts.x = buf.data();
                acts.ld = cols;
                break;
            }
            run_matmul(kernel, k, w, 0, rows, acts, 0, n, y, rows);
          };
          std::vector<float> batched(n_tok * rows), alone(n_tok * rows);
          run(n_tok, 0, n_tok, batched.data());
          for (size_t t = 0; t < n_tok; ++t) run(1, t, 1, alone.data() + t * rows);
          CHECK(same_bits(batched, alone));
        }
      }
    }
}

}  // namespace gptoss::cpu::test
