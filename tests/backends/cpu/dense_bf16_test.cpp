// The bf16-pair dense matmul (dense_bf16_kernels.hpp): fast precision's bf16 weights times
// activations rounded to bf16, on CPUs with AVX512-BF16. The scalar reference against the
// fp32 matmul on activations that are exact in bf16 (pins down which half of a pair is which),
// the AVX512-BF16 kernel against the reference on random rows with tails, every token's result
// independent of the tokens and rows beside it, and the op: decode steps take the pairs, the
// router and prefill keep fp32.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "attention_kernels.hpp"
#include "backends/cpu/test_weights.hpp"
#include "dense_bf16_kernels.hpp"
#include "ops.hpp"

namespace gptoss::cpu::test {
namespace {

// n_tok rows of x as pairs (the op's layout: ld = dense_bf16_pairs_stride(cols), zero padded).
std::vector<float> pairs_of(const std::vector<float>& x, size_t n_tok, size_t cols) {
  const size_t ld = dense_bf16_pairs_stride(cols);
  std::vector<float> x2(n_tok * ld, 0.0f);
  for (size_t t = 0; t < n_tok; ++t)
    attention_bf16_kernels_for(Isa::scalar)->round_pairs(x.data() + t * cols, cols / 2, x2.data() + t * ld);
  return x2;
}

// |got - want| within 1e-5 of the sum of |w x| of that output (fp32 sums in another order).
void check_sums(const Weight& w, const std::vector<float>& x, size_t n_tok, const std::vector<float>& got,
                const std::vector<float>& want) {
  std::vector<float> row(w.cols);
  size_t bad = 0;
  for (size_t r = 0; r < w.rows; ++r) {
    decode_row_kernel_order(w, r, row.data());
    for (size_t t = 0; t < n_tok; ++t) {
      double mag = 0;
      for (size_t k = 0; k < w.cols; ++k) mag += std::fabs(double(row[k]) * x[t * w.cols + k]);
      const size_t i = t * w.rows + r;
      if (!(std::fabs(double(got[i]) - want[i]) <= 1e-5 * mag + 1e-7) && bad++ < 5)
        UNSCOPED_INFO("row " << r << " token " << t << ": got " << got[i] << " want " << want[i]);
    }
  }
  CHECK(bad == 0);
}

std::vector<const DenseBf16Kernels*> simd_tables() {
  std::vector<const DenseBf16Kernels*> v;
  for (Isa isa : simd_isas())
    if (dense_bf16_kernels_for(isa) != nullptr) v.push_back(dense_bf16_kernels_for(isa));
  return v;
}

}  // namespace

TEST_CASE("bf16 pairs: the reference is the fp32 matmul of the rounded activations", "[cpu-bf16-dense]") {
  const DenseBf16Kernels* ref = dense_bf16_kernels_for(Isa::scalar);
  REQUIRE(ref != nullptr);
  const Weight w = random_weight(gptoss_dtype_bf16, 13, 96, 71);
  auto x = random_floats(3 * 96, 72, -3.0f, 3.0f);
  const std::vector<float> x2 = pairs_of(x, 3, 96);
  for (float& v : x) v = bf16_to_f32(f32_to_bf16(v));
  std::vector<float> got(3 * 13), want(3 * 13);
  ref->matmul(w, 0, 13, x2.data(), dense_bf16_pairs_stride(96), 3, got.data(), 13);
  kernels_for(Isa::scalar).matmul(w, 0, 13, x.data(), 96, 3, want.data(), 13);
  check_sums(w, x, 3, got, want);
}

TEST_CASE("bf16 pairs: the AVX512-BF16 kernel matches the reference, each token as if alone", "[cpu-bf16-dense]") {
  const auto simd = simd_tables();
  if (simd.empty()) {
    WARN("this CPU has no AVX512-BF16: the bf16-pair dense kernel is not tested");
    return;
  }
  const DenseBf16Kernels* ref = dense_bf16_kernels_for(Isa::scalar);
  // Columns with tails (40, 2: a partial vector), rows that leave 4-row groups part-filled and
  // span several L2 blocks (2880 columns: 45 rows a block), 1 to 16 tokens.
  for (size_t cols : {2880, 96, 40, 2})
    for (size_t rows : {1, 7, 130})
      for (size_t T : {1, 2, 3, 4, 5, 8, 9, 16}) {
        INFO(rows << "x" << cols << ", " << T << " tokens");
        const Weight w = random_weight(gptoss_dtype_bf16, rows, cols, uint32_t(73 + cols + rows));
        auto x = random_floats(T * cols, 74, -2.0f, 2.0f);
        const std::vector<float> x2 = pairs_of(x, T, cols);
        const size_t ld = dense_bf16_pairs_stride(cols);
        std::vector<float> want(T * rows), got(T * rows), alone(T * rows), cut(T * rows);
        ref->matmul(w, 0, rows, x2.data(), ld, T, want.data(), rows);
        for (float& v : x) v = bf16_to_f32(f32_to_bf16(v));
        for (const DenseBf16Kernels* k : simd) {
          k->matmul(w, 0, rows, x2.data(), ld, T, got.data(), rows);
          check_sums(w, x, T, got, want);
          for (size_t t = 0; t < T; ++t) k->matmul(w, 0, rows, x2.data() + t * ld, ld, 1, alone.data() + t * rows, rows);
          CHECK(got == alone);
          const size_t a = rows / 3;  // the rows in two calls
          k->matmul(w, 0, a, x2.data(), ld, T, cut.data(), rows);
          k->matmul(w, a, rows - a, x2.data(), ld, T, cut.data() + a, rows);
          CHECK(got == cut);
        }
      }
}

// The op in fast precision: a decode step's unembedding takes the pairs where the CPU has them
// (within bf16 rounding of the fp32 reference, and not the fp32 result), each token its
// one-token result, and so does a prefill chunk (more than 16 tokens); the other bf16 matrices
// (whose outputs feed the next layers: on the conformance model, rounding them too lost top-1
// agreement on p2_harmony to 0.5 against llama.cpp's 0.861) and the router keep fp32.
TEST_CASE("bf16 pairs: the fast unembedding rounds activations, nothing else does",
          "[cpu-bf16-dense]") {
  const size_t n_in = 2880, n_out = 300, T = 8;
  Weight w = random_weight(gptoss_dtype_bf16, n_out, n_in, 81);
  const Weight b = random_weight(gptoss_dtype_bf16, 1, n_out, 82);
  w.logits_only = true;
  const auto x = random_floats(20 * n_in, 83, -2.0f, 2.0f);
  Device ref_dev(1, Isa::scalar);
  Stream ref_stream{&ref_dev};
  std::vector<float> want(20 * n_out);
  REQUIRE(ref_linear(&ref_stream, x.data(), &w, &b, 20, n_in, n_out, want.data()) == gptoss_status_success);
  for (Isa isa : simd_isas()) {
    INFO(isa_name(isa));
    Device dev(2, isa);
    dev.quantize_activations = true;
    Stream st{&dev};
    const bool pairs = dense_bf16_kernels_for(isa) != nullptr;
    std::vector<float> got(T * n_out), one(n_out);
    REQUIRE(op_linear(&st, x.data(), &w, &b, T, n_in, n_out, got.data()) == gptoss_status_success);
    double err = 0, mag = 0, max_rel = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      err += std::fabs(double(got[i]) - want[i]);
      mag += std::fabs(double(want[i]));
      max_rel = std::max(max_rel, std::fabs(double(got[i]) - want[i]) / (1.0 + std::fabs(double(want[i]))));
    }
    CHECK(err / mag < 2e-2);  // bf16 rounding of x: ~2^-9 per element (measured ~2e-3 here)
    if (pairs) CHECK(max_rel > 1e-4);  // the pairs ran: fp32 would agree to ~1e-6
    else CHECK(max_rel <= 1e-4);
    for (size_t t = 0; t < T && pairs; ++t) {  // (AVX2 keeps the fp32 panels past 4 tokens)
      REQUIRE(op_linear(&st, x.data() + t * n_in, &w, &b, 1, n_in, n_out, one.data()) == gptoss_status_success);
      CHECK(std::vector<float>(got.begin() + long(t * n_out), got.begin() + long((t + 1) * n_out)) == one);
    }
    const auto fp32_like_reference = [&](const Weight& m, size_t n, std::vector<float>& y) {
      REQUIRE(op_linear(&st, x.data(), &m, &b, n, n_in, n_out, y.data()) == gptoss_status_success);
      size_t bad = 0;
      for (size_t i = 0; i < n * n_out; ++i)
        if (!(std::fabs(y[i] - want[i]) <= 1e-4f * (1.0f + std::fabs(want[i])))) ++bad;
      return bad == 0;
    };
    std::vector<float> y(20 * n_out);
    // A prefill chunk's unembedding takes the pairs too: a token's logits do not depend on the
    // size of its step (docs/architecture.md, "Determinism").
    CHECK(fp32_like_reference(w, 20, y) == !pairs);
    Weight projection = w;
    projection.logits_only = false;
    CHECK(fp32_like_reference(projection, T, y));
    // The router: expert choices and weights as the fp32 reference's.
    const size_t E = 32, K = 4, dim = 2880;
    const Weight rw = random_weight(gptoss_dtype_bf16, E, dim, 84), rb = random_weight(gptoss_dtype_bf16, 1, E, 85);
    std::vector<int32_t> ids(T * K), ids_ref(T * K);
    std::vector<float> g(T * K), g_ref(T * K);
    REQUIRE(ref_router(&ref_stream, x.data(), &rw, &rb, T, dim, E, K, ids_ref.data(), g_ref.data()) == gptoss_status_success);
    REQUIRE(op_router(&st, x.data(), &rw, &rb, T, dim, E, K, ids.data(), g.data()) == gptoss_status_success);
    CHECK(ids == ids_ref);
    // bf16-rounded activations move these logits (~36 in size) by ~0.05, the gates by ~1e-2.
    for (size_t i = 0; i < g.size(); ++i) CHECK(std::fabs(g[i] - g_ref[i]) <= 1e-4f);
  }
}

}  // namespace gptoss::cpu::test
