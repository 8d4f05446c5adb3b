// The fast ops (ops_fast.cpp, ops_moe.cpp, ops_attention.cpp) against the scalar reference
// ops (cpu_ops.cpp) at every supported instruction-set level, on random data with real-ish
// tails: MoE with several tokens per expert (the grouped GEMM) and one token (GEMV), attention
// over pages with a sliding window, GQA, f32 and bf16 caches, and the split-KV decode path.
// Tolerance: |fast - ref| <= 1e-4 * (1 + |ref|) (both are fp32; only summation order differs).
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "ops.hpp"

namespace gptoss::cpu::test {
namespace {

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-4f * (1.0f + std::fabs(want[i]))) && bad++ < 5)
      UNSCOPED_INFO("element " << i << ": got " << got[i] << " want " << want[i]);
  CHECK(bad == 0);
}

// `fast` runs exact (fp32) unless quantize is set: the int8 fast mode has its own test below.
struct Devices {
  explicit Devices(Isa isa, unsigned threads = 2, bool quantize = false)
      : ref(1, Isa::scalar), fast(threads, isa) {
    fast.quantize_activations = quantize;
  }
  Device ref, fast;
  Stream ref_stream{&ref}, fast_stream{&fast};
};

}  // namespace

TEST_CASE("linear and router: fast ops match the reference", "[cpu-ops]") {
  for (Isa isa : supported_isas()) {
    Devices d(isa, 3);
    for (gptoss_dtype dt : {gptoss_dtype_bf16, gptoss_dtype_mxfp4, gptoss_dtype_f32})
      for (size_t T : {1, 6}) {
        const size_t n_in = 96, n_out = 77;
        const Weight w = random_weight(dt, n_out, n_in, 3), b = random_weight(gptoss_dtype_bf16, 1, n_out, 4);
        const auto x = random_floats(T * n_in, 9);
        std::vector<float> want(T * n_out), got(T * n_out);
        REQUIRE(ref_linear(&d.ref_stream, x.data(), &w, &b, T, n_in, n_out, want.data()) == gptoss_status_success);
        REQUIRE(op_linear(&d.fast_stream, x.data(), &w, &b, T, n_in, n_out, got.data()) == gptoss_status_success);
        check_close(got, want);
        CHECK(op_linear(&d.fast_stream, x.data(), &w, &b, T, n_in + 1, n_out, got.data()) == gptoss_status_invalid_argument);
      }
    const size_t T = 5, dim = 64, E = 32, K = 4;
    const Weight w = random_weight(gptoss_dtype_bf16, E, dim, 11), b = random_weight(gptoss_dtype_bf16, 1, E, 12);
    const auto x = random_floats(T * dim, 13);
    std::vector<int32_t> ids_ref(T * K), ids(T * K);
    std::vector<float> g_ref(T * K), g(T * K);
    REQUIRE(ref_router(&d.ref_stream, x.data(), &w, &b, T, dim, E, K, ids_ref.data(), g_ref.data()) == gptoss_status_success);
    REQUIRE(op_router(&d.fast_stream, x.data(), &w, &b, T, dim, E, K, ids.data(), g.data()) == gptoss_status_success);
    CHECK(ids == ids_ref);
    check_close(g, g_ref);
    CHECK(op_router(&d.fast_stream, x.data(), &w, &b, T, dim, E, 0, ids.data(), g.data()) == gptoss_status_invalid_argument);
  }
}

TEST_CASE("moe: grouped-by-expert fast op matches the reference", "[cpu-ops]") {
  const size_t dim = 96, inter = 64, E = 8, K = 3;
  // Scales like a real checkpoint's (2^-12..2^-1): large ones make the fp32 sums so
  // ill-conditioned that summation order alone moves outputs by more than the tolerance.
  const Weight w1 = random_weight(gptoss_dtype_mxfp4, E * 2 * inter, dim, 21, E, -12);
  const Weight w2 = random_weight(gptoss_dtype_mxfp4, E * dim, inter, 22, E, -12);
  const Weight b1 = random_weight(gptoss_dtype_bf16, E, 2 * inter, 23);
  const Weight b2 = random_weight(gptoss_dtype_bf16, E, dim, 24);
  for (Isa isa : supported_isas())
    for (size_t T : {1, 2, 37}) {
      Devices d(isa);
      // Several tokens per expert, experts in no particular order, one expert unused.
      std::vector<int32_t> ids(T * K);
      for (size_t i = 0; i < T * K; ++i) ids[i] = int32_t((i * 5 + i / K) % (E - 1));
      for (size_t t = 0; t < T; ++t)  // distinct experts per token
        for (size_t k = 1; k < K; ++k)
          if (ids[t * K + k] == ids[t * K + k - 1]) ids[t * K + k] = int32_t((ids[t * K + k] + 1) % (E - 1));
      const auto gates = random_floats(T * K, 25, 0.1f, 1.0f);
      const auto x = random_floats(T * dim, 26, -2.0f, 2.0f);
      std::vector<float> want(T * dim), got(T * dim);
      REQUIRE(ref_moe(&d.ref_stream, x.data(), ids.data(), gates.data(), &w1, &b1, &w2, &b2, T, dim,
                      inter, K, 7.0f, want.data()) == gptoss_status_success);
      REQUIRE(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &w1, &b1, &w2, &b2, T, dim,
                     inter, K, 7.0f, got.data()) == gptoss_status_success);
      check_close(got, want);
      ids[0] = int32_t(E);
      CHECK(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &w1, &b1, &w2, &b2, T, dim,
                   inter, K, 7.0f, got.data()) == gptoss_status_invalid_argument);
    }
}

namespace {
// Attention over `n_ctx` cached positions of one sequence whose pages are scattered; the
// queries are the last T positions; window 0 = full attention.
void attention_case(Isa isa, gptoss_kv_dtype dt, size_t T, size_t n_ctx, size_t window,
                    size_t n_heads, size_t n_kv, size_t hd) {
  const size_t P = 16, pages = (n_ctx + P - 1) / P, kv_dim = n_kv * hd;
  std::vector<int32_t> table(pages);
  for (size_t i = 0; i < pages; ++i) table[i] = int32_t((i * 7 + 3) % (pages + 5));  // scattered
  const size_t slots = (pages + 5) * P;
  const auto kf = random_floats(slots * kv_dim, 31), vf = random_floats(slots * kv_dim, 32);
  std::vector<uint16_t> kb(kf.size()), vb(vf.size());
  for (size_t i = 0; i < kf.size(); ++i) {
    kb[i] = f32_to_bf16(kf[i]);
    vb[i] = f32_to_bf16(vf[i]);
  }
  const void* kc = dt == gptoss_kv_dtype_f32 ? static_cast<const void*>(kf.data()) : kb.data();
  const void* vc = dt == gptoss_kv_dtype_f32 ? static_cast<const void*>(vf.data()) : vb.data();
  std::vector<gptoss_attn_token> toks(T);
  for (size_t t = 0; t < T; ++t) {
    const int32_t pos = int32_t(n_ctx - T + t);
    const int32_t start = window && size_t(pos) + 1 > window ? int32_t(size_t(pos) + 1 - window) : 0;
    toks[t] = {pos, start, 0, 0};
  }
  const Weight sinks = random_weight(gptoss_dtype_bf16, 1, n_heads, 33);
  const auto q = random_floats(T * n_heads * hd, 34, -3.0f, 3.0f);
  std::vector<float> want(q.size()), got(q.size());
  Devices d(isa);
  const float scale = 1.0f / std::sqrt(float(hd));
  REQUIRE(ref_attention(&d.ref_stream, q.data(), kc, vc, dt, &sinks, toks.data(), table.data(), T,
                        n_heads, n_kv, hd, P, scale, want.data()) == gptoss_status_success);
  REQUIRE(op_attention(&d.fast_stream, q.data(), kc, vc, dt, &sinks, toks.data(), table.data(), T,
                       n_heads, n_kv, hd, P, scale, got.data()) == gptoss_status_success);
  check_close(got, want);
  CHECK(op_attention(&d.fast_stream, q.data(), kc, vc, dt, &sinks, toks.data(), table.data(), T,
                     n_heads, 3, hd, P, scale, got.data()) == gptoss_status_invalid_argument);
}
}  // namespace

TEST_CASE("attention: tiled GQA fast op matches the reference", "[cpu-ops]") {
  for (Isa isa : supported_isas())
    for (gptoss_kv_dtype dt : {gptoss_kv_dtype_f32, gptoss_kv_dtype_bf16}) {
      attention_case(isa, dt, 1, 1, 0, 8, 2, 64);       // first token: only the sink and itself
      attention_case(isa, dt, 1, 300, 0, 8, 1, 64);     // decode, one KV head: split over keys
      attention_case(isa, dt, 1, 300, 128, 8, 1, 64);   // decode in a sliding window
      attention_case(isa, dt, 20, 77, 0, 16, 2, 64);    // prefill, GQA 8
      attention_case(isa, dt, 40, 200, 128, 4, 4, 40);  // window, head_dim with a tail
    }
}

}  // namespace gptoss::cpu::test

namespace gptoss::cpu::test {
namespace {
double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}
}  // namespace

// The fast precision mode quantizes activations to int8 for MXFP4 weights: the MoE and an
// MXFP4 linear then differ from the exact reference by the quantization error (~0.4% of a
// block's largest activation per element, so well under 2% in relative L2), and the grouped
// GEMM path (several tokens per expert) agrees with the GEMV path (one token) because both
// compute the same integer block sums.
TEST_CASE("fast precision: int8 MoE and MXFP4 linear stay close to the exact reference", "[cpu-ops][q8]") {
  const size_t dim = 160, inter = 96, E = 6, K = 2;  // 5 and 3 blocks: partial 4-block groups
  const Weight w1 = random_weight(gptoss_dtype_mxfp4, E * 2 * inter, dim, 31, E, -12);
  const Weight w2 = random_weight(gptoss_dtype_mxfp4, E * dim, inter, 32, E, -12);
  const Weight b1 = random_weight(gptoss_dtype_bf16, E, 2 * inter, 33);
  const Weight b2 = random_weight(gptoss_dtype_bf16, E, dim, 34);
  for (Isa isa : supported_isas()) {
    if (kernels_for(isa).matmul_mxfp4_q8 == nullptr) continue;
    Devices d(isa, 2, /*quantize=*/true);
    const size_t T = 9;
    std::vector<int32_t> ids(T * K);
    for (size_t t = 0; t < T; ++t) ids[t * K] = int32_t(t % E), ids[t * K + 1] = int32_t((t + 2) % E);
    const auto gates = random_floats(T * K, 35, 0.1f, 1.0f);
    const auto x = random_floats(T * dim, 36, -2.0f, 2.0f);
    std::vector<float> want(T * dim), got(T * dim), one(dim);
    REQUIRE(ref_moe(&d.ref_stream, x.data(), ids.data(), gates.data(), &w1, &b1, &w2, &b2, T, dim,
                    inter, K, 7.0f, want.data()) == gptoss_status_success);
    REQUIRE(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &w1, &b1, &w2, &b2, T, dim,
                   inter, K, 7.0f, got.data()) == gptoss_status_success);
    INFO(isa_name(isa));
    CHECK(rel_l2(got, want) < 0.02);
    CHECK(got != want);  // the int8 path ran (exact fp32 would match to ~1e-6)
    for (size_t t = 0; t < T; ++t) {  // token alone (GEMV) = token in the batch (GEMM panels)
      REQUIRE(op_moe(&d.fast_stream, x.data() + t * dim, ids.data() + t * K, gates.data() + t * K,
                     &w1, &b1, &w2, &b2, 1, dim, inter, K, 7.0f, one.data()) == gptoss_status_success);
      for (size_t i = 0; i < dim; ++i)
        CHECK(std::fabs(one[i] - got[t * dim + i]) <= 1e-4f * (1.0f + std::fabs(got[t * dim + i])));
    }
    const Weight w = random_weight(gptoss_dtype_mxfp4, 70, dim, 37, 0, -8);
    std::vector<float> lw(T * 70), lg(T * 70);
    REQUIRE(ref_linear(&d.ref_stream, x.data(), &w, nullptr, T, dim, 70, lw.data()) == gptoss_status_success);
    REQUIRE(op_linear(&d.fast_stream, x.data(), &w, nullptr, T, dim, 70, lg.data()) == gptoss_status_success);
    CHECK(rel_l2(lg, lw) < 0.02);
    // Exact precision on the same device level stays within the fp32 tolerance.
    Devices e(isa, 2, /*quantize=*/false);
    REQUIRE(op_linear(&e.fast_stream, x.data(), &w, nullptr, T, dim, 70, lg.data()) == gptoss_status_success);
    check_close(lg, lw);
  }
}

}  // namespace gptoss::cpu::test
