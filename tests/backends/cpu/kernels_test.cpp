// The SIMD kernel tables against a double-precision reference, on random data, at every
// instruction-set level this CPU supports. Tolerance per output:
//   |y - ref| <= 1e-6 + 2e-5 * sum_k |w_k x_k|
// (fp32 accumulation of K products errs by about sqrt(K) * 6e-8 of that sum; 2e-5 leaves a
// wide margin at K = 5760 yet catches any wrong element, row, scale or nibble).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "kernels.hpp"
#include "support/cpu_levels.hpp"

namespace gptoss::cpu::test {
namespace {

class MatmulTester {
 public:
  MatmulTester& dtype(gptoss_dtype d) { dtype_ = d; return *this; }
  MatmulTester& rows(size_t n) { rows_ = n; return *this; }
  MatmulTester& cols(size_t n) { cols_ = n; return *this; }
  MatmulTester& tokens(size_t n) { tokens_ = n; return *this; }
  // Test only rows [first, first + count) of the weight (cheap checks of huge shapes).
  MatmulTester& row_range(size_t first, size_t count) { first_ = first; count_ = count; return *this; }
  MatmulTester& x_stride_pad(size_t pad) { pad_ = pad; return *this; }

  void test(Isa isa) const {
    const Weight w = random_weight(dtype_, rows_, cols_, uint32_t(rows_ * 31 + cols_ * 7 + tokens_));
    const size_t first = count_ ? first_ : 0, count = count_ ? count_ : rows_;
    const size_t ldx = cols_ + pad_, ldy = count + 3;
    const std::vector<float> x = random_floats(tokens_ * ldx, uint32_t(cols_ + 17 * tokens_));
    std::vector<float> xk(tokens_ * ldx);
    if (dtype_ == gptoss_dtype_mxfp4) {
      for (size_t t = 0; t < tokens_; ++t) permute_for_mxfp4(x.data() + t * ldx, ldx, 1, cols_, xk.data() + t * ldx);
    } else {
      xk = x;
    }
    std::vector<float> y(tokens_ * ldy, -12345.0f);
    kernels_for(isa).matmul(w, first, count, xk.data(), ldx, tokens_, y.data(), ldy);

    std::vector<float> row(cols_);
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
      decode_row(w, first + i, row.data());  // natural order, formats.hpp
      for (size_t t = 0; t < tokens_; ++t) {
        double ref = 0.0, mag = 0.0;
        for (size_t k = 0; k < cols_; ++k) {
          ref += double(row[k]) * double(x[t * ldx + k]);
          mag += std::fabs(double(row[k]) * double(x[t * ldx + k]));
        }
        const double got = y[t * ldy + i];
        if (!(std::fabs(got - ref) <= 1e-6 + 2e-5 * mag)) {
          if (bad++ < 5)
            UNSCOPED_INFO(isa_name(isa) << " row " << first + i << " token " << t << ": got " << got
                                        << " want " << ref << " (sum|wx| " << mag << ")");
        }
      }
      // Columns past n_rows of y are left alone.
      for (size_t t = 0; t < tokens_; ++t)
        for (size_t j = count; j < ldy; ++j) CHECK(y[t * ldy + j] == -12345.0f);
    }
    CHECK(bad == 0);
  }
  void test_all_isas() const {
    for (Isa isa : supported_isas()) test(isa);
  }

 private:
  gptoss_dtype dtype_ = gptoss_dtype_bf16;
  size_t rows_ = 1, cols_ = 32, tokens_ = 1, first_ = 0, count_ = 0, pad_ = 0;
};

}  // namespace

TEST_CASE("matmul: one SIMD group, tails and many groups, every dtype", "[cpu-kernels]") {
  for (gptoss_dtype d : {gptoss_dtype_f32, gptoss_dtype_bf16, gptoss_dtype_f16}) {
    for (size_t cols : {1, 7, 8, 15, 16, 17, 31, 33, 64, 100})
      for (size_t rows : {1, 3, 4, 5, 17, 33})
        for (size_t tokens : {1, 2, 3, 4, 5, 7})
          MatmulTester().dtype(d).rows(rows).cols(cols).tokens(tokens).test_all_isas();
  }
  for (gptoss_dtype d : {gptoss_dtype_mxfp4, gptoss_dtype_q8_0})  // whole 32-blocks only
    for (size_t cols : {32, 64, 96, 160})
      for (size_t rows : {1, 3, 4, 5, 17, 33})
        for (size_t tokens : {1, 2, 3, 4, 5, 7})
          MatmulTester().dtype(d).rows(rows).cols(cols).tokens(tokens).test_all_isas();
}

// Batches of 16+ tokens of dense weights take the AVX-512 blocked GEMM (gemm_avx512.cpp):
// 32-row panels (partial ones too), K chunks of 128 with a tail, token tiles of 12 with a
// tail. (MXFP4 cases here cover the 16-row panels at prefill sizes.)
TEST_CASE("matmul: prefill-sized batches (blocked GEMM)", "[cpu-kernels]") {
  for (gptoss_dtype d : {gptoss_dtype_f32, gptoss_dtype_bf16, gptoss_dtype_f16})
    for (size_t cols : {7, 16, 100, 129, 300})
      for (size_t rows : {1, 17, 32, 45})
        for (size_t tokens : {16, 25})
          MatmulTester().dtype(d).rows(rows).cols(cols).tokens(tokens).test_all_isas();
  for (size_t cols : {32, 160, 288})  // Q8_0: whole 32-blocks
    for (size_t rows : {1, 17, 32, 45})
      for (size_t tokens : {16, 25})
        MatmulTester().dtype(gptoss_dtype_q8_0).rows(rows).cols(cols).tokens(tokens).test_all_isas();
  for (gptoss_dtype d : {gptoss_dtype_mxfp4, gptoss_dtype_q8_0, gptoss_dtype_f16})
    for (size_t rows : {5, 33})
      MatmulTester().dtype(d).rows(rows).cols(160).tokens(64).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_bf16).rows(70).cols(2880).tokens(37).row_range(3, 60).x_stride_pad(13).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_mxfp4).rows(40).cols(2880).tokens(65).row_range(2, 35).test_all_isas();
}

TEST_CASE("matmul: strided activations and a row offset", "[cpu-kernels]") {
  for (gptoss_dtype d : {gptoss_dtype_f32, gptoss_dtype_bf16, gptoss_dtype_f16, gptoss_dtype_q8_0,
                         gptoss_dtype_mxfp4})
    for (size_t tokens : {1, 6})
      MatmulTester().dtype(d).rows(40).cols(96).tokens(tokens).row_range(5, 30).x_stride_pad(13).test_all_isas();
}

TEST_CASE("matmul: real gpt-oss shapes", "[cpu-kernels]") {
  // MoE: mlp1 [5760, 2880] and mlp2 [2880, 2880] in MXFP4; decode (1 token) and prefill.
  MatmulTester().dtype(gptoss_dtype_mxfp4).rows(5760).cols(2880).tokens(1).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_mxfp4).rows(5760).cols(2880).tokens(5).row_range(5700, 60).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_mxfp4).rows(2880).cols(2880).tokens(1).test_all_isas();
  // Attention projections in bf16: q [4096, 2880], o [2880, 4096].
  MatmulTester().dtype(gptoss_dtype_bf16).rows(4096).cols(2880).tokens(1).row_range(0, 512).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_bf16).rows(2880).cols(4096).tokens(3).row_range(2800, 80).test_all_isas();
  // The same in Q8_0 and f16, as llama.cpp's GGUF files store them (ggml-org's MXFP4 release:
  // Q8_0 attention, embedding and output; F16 conversions).
  MatmulTester().dtype(gptoss_dtype_q8_0).rows(4096).cols(2880).tokens(1).row_range(0, 512).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_q8_0).rows(2880).cols(4096).tokens(3).row_range(2800, 80).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_f16).rows(4096).cols(2880).tokens(1).row_range(0, 512).test_all_isas();
  // The unembedding's 201088 rows (at the conformance model's hidden size, to stay cheap).
  MatmulTester().dtype(gptoss_dtype_bf16).rows(201088).cols(64).tokens(1).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_q8_0).rows(201088).cols(64).tokens(1).test_all_isas();
}

// The SwiGLU of every level against a double-precision evaluation of the formula, over the
// whole range the clamp lets through (and far below it: sigmoid underflow), with tails.
TEST_CASE("swiglu matches the formula at every level", "[cpu-kernels]") {
  for (Isa isa : supported_isas()) {
    const Kernels& k = kernels_for(isa);
    for (size_t n : {1, 5, 8, 15, 16, 17, 33, 1440}) {
      auto h = random_floats(2 * n, uint32_t(n), -12.0f, 12.0f);
      const auto b = random_floats(2 * n, uint32_t(n + 1), -1.0f, 1.0f);
      if (n > 4) h[0] = -120.0f, h[2] = 90.0f, h[3] = -90.0f;  // exp overflow / clamps
      for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
        std::vector<float> out(n + 3, -777.0f);
        k.swiglu(h.data(), bias, n, 7.0f, out.data());
        size_t bad = 0;
        for (size_t i = 0; i < n; ++i) {
          double g = double(h[2 * i]) + (bias ? bias[2 * i] : 0.0);
          double l = double(h[2 * i + 1]) + (bias ? bias[2 * i + 1] : 0.0);
          g = std::min(g, 7.0);
          l = std::clamp(l, -7.0, 7.0);
          const double want = g / (1.0 + std::exp(-1.702 * g)) * (l + 1.0);
          if (!(std::fabs(out[i] - want) <= 1e-6 * (1.0 + std::fabs(want))) && bad++ < 3)
            UNSCOPED_INFO(isa_name(isa) << " n " << n << " i " << i << ": " << out[i] << " want " << want);
        }
        CHECK(bad == 0);
        for (size_t i = n; i < n + 3; ++i) CHECK(out[i] == -777.0f);  // nothing past n
      }
    }
  }
}

TEST_CASE("MXFP4 kernel order and permutation agree with the checkpoint order", "[cpu-kernels]") {
  const Weight w = random_weight(gptoss_dtype_mxfp4, 3, 96, 5);
  std::vector<float> natural(96), kernel(96), permuted(96);
  for (size_t r = 0; r < 3; ++r) {
    decode_row(w, r, natural.data());
    decode_row_kernel_order(w, r, kernel.data());
    permute_for_mxfp4(natural.data(), 96, 1, 96, permuted.data());
    CHECK(kernel == permuted);  // exact: both are the same decoded values
  }
}

TEST_CASE("ISA selection honours GPTOSS_CPU_ISA and never exceeds the CPU", "[cpu-kernels]") {
  const Isa best = isa_detect();
  setenv("GPTOSS_CPU_ISA", "scalar", 1);
  CHECK(isa_selected() == Isa::scalar);
  setenv("GPTOSS_CPU_ISA", "avx512", 1);
  CHECK(int(isa_selected()) <= int(best));
  setenv("GPTOSS_CPU_ISA", "bogus", 1);
  CHECK(isa_selected() == best);
  unsetenv("GPTOSS_CPU_ISA");
  CHECK(isa_selected() == best);
  CHECK(kernels_for(Isa::scalar).isa == Isa::scalar);
}

// ctest's gate for the runs at a named level (invariance.<level>, backend-ops.cpu-<level>;
// tests/CMakeLists.txt): exit 77, which ctest reports as skipped, where this CPU lacks the
// level GPTOSS_CPU_ISA names, as such a run would repeat the level below it. A name the backend
// does not know fails.
TEST_CASE("GPTOSS_CPU_ISA names a level this CPU runs", "[.][cpu-level-here]") {
  const char* env = std::getenv("GPTOSS_CPU_ISA");
  REQUIRE(env != nullptr);
  const std::vector<std::string> known = gptoss::test::cpu_levels();
  REQUIRE(std::count(known.begin(), known.end(), env) == 1);
  const std::vector<std::string> here = gptoss::test::cpu_levels_here();
  if (std::count(here.begin(), here.end(), env) == 0) {
    std::printf("GPTOSS_CPU_ISA=%s: this CPU runs %s, skipped\n", env, isa_name(isa_selected()));
    std::exit(77);
  }
}

// The second gate of the invariance runs at a named level (tests/CMakeLists.txt): exit 77 where
// GPTOSS_CPU_ISA names the level this CPU picks by itself and the run is on one device, as the
// tests' own run (no GPTOSS_CPU_ISA, one device) has already run the same tests there.
TEST_CASE("GPTOSS_CPU_ISA names a level the default run does not", "[.][cpu-level-not-default]") {
  const char* env = std::getenv("GPTOSS_CPU_ISA");
  REQUIRE(env != nullptr);
  const char* devices = std::getenv("GPTOSS_CPU_DEVICES");
  const bool one_device = devices == nullptr || *devices == '\0' || std::string(devices) == "1";
  if (one_device && std::string(env) == isa_name(isa_detect())) {
    std::printf(
        "GPTOSS_CPU_ISA=%s: the level this CPU runs by default, covered by the default run; "
        "skipped\n",
        env);
    std::exit(77);
  }
}

// Decode GEMVs take rows in quads a quarter of the range apart (row_streams.hpp), so which
// rows share a kernel call depends on the caller's split; each row's result must not.
TEST_CASE("matmul: one token's results do not depend on how the rows are split", "[cpu-kernels]") {
  for (gptoss_dtype d : {gptoss_dtype_f32, gptoss_dtype_bf16, gptoss_dtype_f16, gptoss_dtype_q8_0,
                         gptoss_dtype_mxfp4}) {
    const size_t rows = 45, cols = d == gptoss_dtype_mxfp4 || d == gptoss_dtype_q8_0 ? 544 : 530;
    const Weight w = random_weight(d, rows, cols, 99);
    std::vector<float> x = random_floats(cols, 98);
    if (d == gptoss_dtype_mxfp4) {
      std::vector<float> xk(cols);
      permute_for_mxfp4(x.data(), cols, 1, cols, xk.data());
      x = xk;
    }
    for (Isa isa : supported_isas()) {
      std::vector<float> whole(rows), split(rows);
      kernels_for(isa).matmul(w, 0, rows, x.data(), cols, 1, whole.data(), rows);
      for (size_t r0 = 0, n = 1; r0 < rows; r0 += n, n = n % 9 + 2)  // pieces of 1, 3, 5, ... rows
        kernels_for(isa).matmul(w, r0, std::min(n, rows - r0), x.data(), cols, 1, split.data() + r0, rows);
      INFO(isa_name(isa) << " dtype " << int(d));
      CHECK(whole == split);
    }
  }
}

// 2-4 tokens (a few sequences decoding together) run the one-token GEMV per token over blocks
// of rows that stay in L2 (row_streams.hpp), and bf16, f16 and Q8_0 weights keep it up to 16
// tokens (their two-token GEMV on pairs; bf16 and Q8_0 on groups of four at AVX-512;
// AVX2 has none for Q8_0 and takes the panels): every
// token must get exactly its one-token result, over shapes of
// several blocks (2880-wide rows: 44 bf16 rows, 168 MXFP4 rows a block), and agree with the
// double reference.
TEST_CASE("matmul: a few tokens give each token its one-token result, bit for bit", "[cpu-kernels]") {
  for (gptoss_dtype d : {gptoss_dtype_f32, gptoss_dtype_bf16, gptoss_dtype_f16, gptoss_dtype_q8_0,
                         gptoss_dtype_mxfp4}) {
    const size_t rows = 365, cols = 2880;
    const Weight w = random_weight(d, rows, cols, 77);
    const bool two_token = d == gptoss_dtype_bf16 || d == gptoss_dtype_f16 || d == gptoss_dtype_q8_0;
    for (size_t n_tok : {2, 3, 4, 5, 7, 8, 16}) {
      if (n_tok > 4 && !two_token) continue;
      std::vector<float> x = random_floats(n_tok * cols, uint32_t(78 + n_tok));
      if (d == gptoss_dtype_mxfp4) {
        std::vector<float> xk(x.size());
        permute_for_mxfp4(x.data(), cols, n_tok, cols, xk.data());
        x = xk;
      }
      for (Isa isa : supported_isas()) {
        // (avx2's fp32 matmul, also avx2vnni's, has no several-token Q8_0 GEMV.)
        if (n_tok > 4 && kernels_for(isa).matmul == kernels_for(Isa::avx2).matmul &&
            d == gptoss_dtype_q8_0)
          continue;
        std::vector<float> batched(n_tok * rows), single(n_tok * rows);
        kernels_for(isa).matmul(w, 0, rows, x.data(), cols, n_tok, batched.data(), rows);
        for (size_t t = 0; t < n_tok; ++t)
          kernels_for(isa).matmul(w, 0, rows, x.data() + t * cols, cols, 1, single.data() + t * rows, rows);
        INFO(isa_name(isa) << " dtype " << int(d) << ", " << n_tok << " tokens");
        CHECK(batched == single);
      }
    }
  }
  MatmulTester().dtype(gptoss_dtype_bf16).rows(100).cols(2880).tokens(3).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_bf16).rows(300).cols(2880).tokens(9).row_range(7, 290).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_f16).rows(200).cols(2880).tokens(16).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_q8_0).rows(300).cols(2880).tokens(8).row_range(5, 280).test_all_isas();
  MatmulTester().dtype(gptoss_dtype_mxfp4).rows(400).cols(2880).tokens(4).row_range(30, 360).test_all_isas();
}

// The fast ops decode the bias slice of each piece's rows (decode_row_range); it must equal
// the same columns of the whole decoded row for every dtype a bias can have.
TEST_CASE("decode_row_range equals the slice of decode_row", "[cpu-kernels]") {
  for (gptoss_dtype d : {gptoss_dtype_f32, gptoss_dtype_bf16, gptoss_dtype_mxfp4}) {
    const size_t rows = 3, cols = 160;
    const Weight w = random_weight(d, rows, cols, 11);
    std::vector<float> whole(cols), part(cols);
    for (size_t row = 0; row < rows; ++row) {
      decode_row(w, row, whole.data());
      for (size_t c0 : {0, 1, 31, 100})
        for (size_t n : {1, 7, 60}) {
          if (c0 + n > cols) continue;
          std::fill(part.begin(), part.end(), -7.0f);
          decode_row_range(w, row, c0, n, part.data());
          INFO("dtype " << int(d) << " row " << row << " cols " << c0 << "+" << n);
          CHECK(std::equal(part.begin(), part.begin() + std::ptrdiff_t(n), whole.begin() + std::ptrdiff_t(c0)));
          CHECK(part[n] == -7.0f);  // nothing written past n
        }
    }
  }
}

}  // namespace gptoss::cpu::test

namespace gptoss::cpu::test {

// The sample op's normaliser at every SIMD level against std::exp in double: inputs over the
// whole useful range below the shift, -inf and NaN (adding nothing), every tail length.
TEST_CASE("sum_exp matches the double-precision reference at every level", "[cpu-kernels]") {
  for (Isa isa : simd_isas())
    for (size_t n : {1, 7, 8, 15, 16, 17, 33, 1000, 201088}) {
      INFO(isa_name(isa) << " n " << n);
      std::vector<float> x = random_floats(n, uint32_t(n), -30.0f, 3.0f);
      if (n > 3) {
        x[1] = -INFINITY;
        x[2] = NAN;
      }
      const float shift = *std::max_element(x.begin(), x.end(), [](float a, float b) { return !(a >= b); });
      const double want = sum_exp_reference(x.data(), n, shift);
      const double got = kernels_for(isa).sum_exp(x.data(), n, shift);
      CHECK(std::fabs(got - want) <= 1e-6 * want);
    }
}

}  // namespace gptoss::cpu::test
