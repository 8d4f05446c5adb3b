// The fast ops (ops_fast.cpp, ops_moe.cpp, ops_attention.cpp) against the scalar reference
// ops (cpu_ops.cpp) at every supported instruction-set level, on random data with real-ish
// tails: MoE with several tokens per expert (the grouped GEMM) and one token (GEMV), attention
// over pages with a sliding window, GQA, f32 and bf16 caches, and the split-KV decode path.
// Tolerance: |fast - ref| <= 1e-4 * (1 + |ref|) (both are fp32; only summation order differs).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>
#include <random>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "attention_kernels.hpp"
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

// A MoE layer's weights: E experts of MXFP4 with scales like a real checkpoint's (2^-12..2^-1:
// large ones make the fp32 sums so ill-conditioned that summation order alone moves outputs by
// more than the tolerance) and bf16 biases; seeds seed .. seed + 3.
struct MoeWeights {
  MoeWeights(size_t E, size_t dim, size_t inter, uint32_t seed)
      : w1(random_weight(gptoss_dtype_mxfp4, E * 2 * inter, dim, seed, E, -12)),
        w2(random_weight(gptoss_dtype_mxfp4, E * dim, inter, seed + 1, E, -12)),
        b1(random_weight(gptoss_dtype_bf16, E, 2 * inter, seed + 2)),
        b2(random_weight(gptoss_dtype_bf16, E, dim, seed + 3)) {}
  Weight w1, w2, b1, b2;
};

}  // namespace

TEST_CASE("linear and router: fast ops match the reference", "[cpu-ops]") {
  for (Isa isa : simd_isas()) {
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
  const MoeWeights m(E, dim, inter, 21);
  for (Isa isa : simd_isas())
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
      REQUIRE(ref_moe(&d.ref_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, T, dim,
                      inter, K, 7.0f, want.data()) == gptoss_status_success);
      REQUIRE(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, T, dim,
                     inter, K, 7.0f, got.data()) == gptoss_status_success);
      check_close(got, want);
      ids[0] = -1;  // ids past the held experts add nothing (expert slices); negative ones are errors
      CHECK(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, T, dim,
                   inter, K, 7.0f, got.data()) == gptoss_status_invalid_argument);
    }
}

// Expert parallelism: two devices holding experts [0, 5) and [5, 8) each add their experts'
// share; the two parts sum to the whole block (fast op and reference alike).
TEST_CASE("moe: expert slices give partial sums that add up to the block", "[cpu-ops]") {
  const size_t dim = 96, inter = 64, E = 8, K = 3, T = 11;
  const MoeWeights m(E, dim, inter, 61);
  std::vector<int32_t> ids(T * K);
  for (size_t t = 0; t < T; ++t)
    for (size_t k = 0; k < K; ++k) ids[t * K + k] = int32_t((t * 3 + k * 2) % E);
  const auto gates = random_floats(T * K, 62, 0.1f, 1.0f);
  const auto x = random_floats(T * dim, 63, -2.0f, 2.0f);
  const Weight parts[2][4] = {
      {expert_slice(m.w1, 0, 5), expert_slice(m.b1, 0, 5), expert_slice(m.w2, 0, 5), expert_slice(m.b2, 0, 5)},
      {expert_slice(m.w1, 5, 8), expert_slice(m.b1, 5, 8), expert_slice(m.w2, 5, 8), expert_slice(m.b2, 5, 8)}};
  for (Isa isa : supported_isas()) {
    INFO(isa_name(isa));
    Devices d(isa);
    std::vector<float> whole(T * dim), sum(T * dim, 0.0f), part(T * dim);
    REQUIRE(ref_moe(&d.ref_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, T,
                    dim, inter, K, 7.0f, whole.data()) == gptoss_status_success);
    for (const auto& p : parts) {
      REQUIRE(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &p[0], &p[1], &p[2], &p[3], T,
                     dim, inter, K, 7.0f, part.data()) == gptoss_status_success);
      CHECK(part != std::vector<float>(T * dim, 0.0f));
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    }
    check_close(sum, whole);
  }
}

// Fast mode: a step of 2-16 tokens (sequences decoding together) runs the one-token int8 GEMV
// per token (matmul_q8_step), so each token's MoE and MXFP4 linear output is exactly what it
// gets alone, shared experts included; larger steps keep the panel kernels for groups of 2+.
TEST_CASE("moe and linear: a step of a few tokens gives each token its one-token result", "[cpu-ops]") {
  const size_t dim = 2880, inter = 96, E = 6, K = 4;
  const MoeWeights m(E, dim, inter, 51);
  const Weight lw = random_weight(gptoss_dtype_mxfp4, 600, dim, 55);  // 4 blocks of 168 rows
  for (Isa isa : supported_isas()) {
    Devices d(isa, 2, true);
    if (d.fast.kernels->matmul_mxfp4_q8 == nullptr) continue;
    for (size_t T : {2, 3, 4, 8, 16}) {
      INFO(isa_name(isa) << ", " << T << " tokens");
      // Tokens share experts 0 and 1 (groups of T tokens), and each has two of its own.
      std::vector<int32_t> ids(T * K);
      for (size_t t = 0; t < T; ++t)
        for (size_t k = 0; k < K; ++k) ids[t * K + k] = int32_t(k < 2 ? k : (2 + t + k) % E);
      const auto gates = random_floats(T * K, 56, 0.1f, 1.0f);
      const auto x = random_floats(T * dim, 57, -2.0f, 2.0f);
      std::vector<float> together(T * dim), alone(T * dim);
      REQUIRE(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, T, dim,
                     inter, K, 7.0f, together.data()) == gptoss_status_success);
      for (size_t t = 0; t < T; ++t)
        REQUIRE(op_moe(&d.fast_stream, x.data() + t * dim, ids.data() + t * K, gates.data() + t * K, &m.w1,
                       &m.b1, &m.w2, &m.b2, 1, dim, inter, K, 7.0f, alone.data() + t * dim) == gptoss_status_success);
      CHECK(together == alone);
      std::vector<float> lin(T * 600), lin1(T * 600);
      REQUIRE(op_linear(&d.fast_stream, x.data(), &lw, nullptr, T, dim, 600, lin.data()) == gptoss_status_success);
      for (size_t t = 0; t < T; ++t)
        REQUIRE(op_linear(&d.fast_stream, x.data() + t * dim, &lw, nullptr, 1, dim, 600, lin1.data() + t * 600) ==
                gptoss_status_success);
      CHECK(lin == lin1);
    }
  }
}

namespace {
// One attention call over a paged KV cache: sequences whose pages are scattered over the
// slots (a shuffled page table), random K and V in both dtypes, random queries and sinks.
class AttnCase {
 public:
  AttnCase(size_t n_heads, size_t n_kv, size_t hd) : n_heads_(n_heads), n_kv_(n_kv), hd_(hd) {}
  // Pages for a sequence of n_ctx positions; returns its page_table_offset.
  int32_t sequence(size_t n_ctx) {
    const int32_t offset = int32_t(pages_);
    pages_ += (n_ctx + kPage - 1) / kPage;
    return offset;
  }
  // A query of the sequence at `offset` at position pos; window 0 = full attention.
  AttnCase& query(int32_t offset, size_t pos, size_t window) {
    const size_t start = window && pos + 1 > window ? pos + 1 - window : 0;
    toks_.push_back({int32_t(pos), int32_t(start), offset, 0});
    return *this;
  }
  // Queries at positions [first, last] of one sequence.
  AttnCase& queries(int32_t offset, size_t first, size_t last, size_t window) {
    for (size_t pos = first; pos <= last; ++pos) query(offset, pos, window);
    return *this;
  }
  // Fast precision over a bf16 cache: on CPUs with AVX512-BF16 the op takes bf16 dot products
  // (queries and probabilities rounded to bf16). Against the fp32 reference over the same
  // cache: mean error under 1.5 % of the mean output, every element within 5e-2 (1 + |want|)
  // (measured: 0.4-0.6 % mean, comparable to what rounding the cache to bf16 costs); and,
  // where the path is taken, not the fp32 path's result.
  void check_fast_bf16(Isa isa) const {
    INFO(isa_name(isa) << " fast bf16 KV, " << toks_.size() << " tokens, heads " << n_heads_ << "/"
                       << n_kv_ << ", head_dim " << hd_);
    const Inputs in = inputs();
    std::vector<float> want(in.q.size()), exact(in.q.size()), got(in.q.size());
    Devices e(isa), f(isa, 2, true);
    const auto run = [&](Stream* st, std::vector<float>& out) {
      return op_attention(st, in.q.data(), in.kb.data(), in.vb.data(), gptoss_kv_dtype_bf16, &in.sinks,
                          toks_.data(), in.table.data(), toks_.size(), n_heads_, n_kv_, hd_, kPage,
                          in.scale, out.data());
    };
    REQUIRE(run(&e.ref_stream, want) == gptoss_status_success);
    REQUIRE(run(&e.fast_stream, exact) == gptoss_status_success);
    REQUIRE(run(&f.fast_stream, got) == gptoss_status_success);
    double err = 0, mag = 0;
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      err += std::fabs(got[i] - want[i]);
      mag += std::fabs(want[i]);
      if (!(std::fabs(got[i] - want[i]) <= 5e-2f * (1.0f + std::fabs(want[i]))) && bad++ < 5)
        UNSCOPED_INFO("element " << i << ": got " << got[i] << " want " << want[i]);
    }
    CHECK(bad == 0);
    CHECK(err <= 0.015 * mag);
    if (attention_bf16_kernels_for(isa) != nullptr && hd_ % 2 == 0) CHECK(got != exact);
    else CHECK(got == exact);
  }
  void check(Isa isa, gptoss_kv_dtype dt) const {
    INFO(isa_name(isa) << (dt == gptoss_kv_dtype_f32 ? " f32" : " bf16") << " KV, " << toks_.size()
                       << " tokens, heads " << n_heads_ << "/" << n_kv_ << ", head_dim " << hd_);
    const Inputs in = inputs();
    const size_t T = toks_.size();
    const void* kc = dt == gptoss_kv_dtype_f32 ? static_cast<const void*>(in.kf.data()) : in.kb.data();
    const void* vc = dt == gptoss_kv_dtype_f32 ? static_cast<const void*>(in.vf.data()) : in.vb.data();
    std::vector<float> want(in.q.size()), got(in.q.size());
    Devices d(isa);
    REQUIRE(ref_attention(&d.ref_stream, in.q.data(), kc, vc, dt, &in.sinks, toks_.data(), in.table.data(), T,
                          n_heads_, n_kv_, hd_, kPage, in.scale, want.data()) == gptoss_status_success);
    REQUIRE(op_attention(&d.fast_stream, in.q.data(), kc, vc, dt, &in.sinks, toks_.data(), in.table.data(), T,
                         n_heads_, n_kv_, hd_, kPage, in.scale, got.data()) == gptoss_status_success);
    check_close(got, want);
    CHECK(op_attention(&d.fast_stream, in.q.data(), kc, vc, dt, &in.sinks, toks_.data(), in.table.data(), T,
                       n_heads_, n_heads_ + 1, hd_, kPage, in.scale, got.data()) == gptoss_status_invalid_argument);
  }

 private:
  static constexpr size_t kPage = 16;
  // Random caches (f32, and the same values rounded to bf16) behind a shuffled page table with
  // 5 spare pages no sequence uses, sinks and queries: the same for every check of a case.
  struct Inputs {
    std::vector<int32_t> table;
    std::vector<float> kf, vf, q;
    std::vector<uint16_t> kb, vb;
    Weight sinks;
    float scale;
  };
  Inputs inputs() const {
    Inputs in;
    in.table.resize(pages_ + 5);
    std::iota(in.table.begin(), in.table.end(), 0);
    std::shuffle(in.table.begin(), in.table.end(), std::mt19937(7));
    const size_t kv_dim = n_kv_ * hd_, slots = in.table.size() * kPage;
    in.kf = random_floats(slots * kv_dim, 31);
    in.vf = random_floats(slots * kv_dim, 32);
    for (size_t i = 0; i < in.kf.size(); ++i) {
      in.kb.push_back(f32_to_bf16(in.kf[i]));
      in.vb.push_back(f32_to_bf16(in.vf[i]));
    }
    in.sinks = random_weight(gptoss_dtype_bf16, 1, n_heads_, 33);
    in.q = random_floats(toks_.size() * n_heads_ * hd_, 34, -3.0f, 3.0f);
    in.scale = 1.0f / std::sqrt(float(hd_));
    return in;
  }
  size_t n_heads_, n_kv_, hd_, pages_ = 0;
  std::vector<AttnToken> toks_;
};

// One sequence of n_ctx cached positions whose last T positions are the queries.
AttnCase last_positions(size_t T, size_t n_ctx, size_t window, size_t n_heads, size_t n_kv, size_t hd) {
  AttnCase c(n_heads, n_kv, hd);
  c.queries(c.sequence(n_ctx), n_ctx - T, n_ctx - 1, window);
  return c;
}

void check_all(const AttnCase& c) {
  for (Isa isa : simd_isas())
    for (gptoss_kv_dtype dt : {gptoss_kv_dtype_f32, gptoss_kv_dtype_bf16}) c.check(isa, dt);
}
}  // namespace

TEST_CASE("attention: tiled GQA fast op matches the reference", "[cpu-ops]") {
  check_all(last_positions(1, 1, 0, 8, 2, 64));       // first token: only the sink and itself
  check_all(last_positions(1, 300, 0, 8, 1, 64));     // decode, one KV head, one item
  check_all(last_positions(1, 1100, 0, 8, 1, 64));    // ... over 1024 keys: split over keys
  check_all(last_positions(1, 300, 128, 8, 1, 64));   // decode in a sliding window
  check_all(last_positions(20, 77, 0, 16, 2, 64));    // prefill, GQA 8
  check_all(last_positions(40, 200, 128, 4, 4, 40));  // window, head_dim with a tail
}

// Blocks of consecutive query tokens share key tiles; every row must still see exactly its
// own [kv_start, pos]: tiles where some rows see nothing, block sizes that do not divide the
// prompt, rows of a register tile left over, head dims that are not a multiple of 8.
TEST_CASE("attention: query blocks mask each row's causal limit and window", "[cpu-ops]") {
  AttnCase window(16, 2, 64);  // GQA 8:1; 37 tokens is no multiple of a block
  window.queries(window.sequence(37), 0, 36, 16);
  check_all(window);
  check_all(last_positions(31, 131, 0, 16, 2, 64));   // prefill at positions 100..130
  check_all(last_positions(31, 131, 40, 16, 2, 64));  // ... in a window
  check_all(last_positions(25, 60, 8, 6, 2, 20));     // G = 3, head_dim 20
}

TEST_CASE("attention: one call mixing sequences matches the reference", "[cpu-ops]") {
  AttnCase mixed(16, 2, 64);
  const int32_t a = mixed.sequence(60), b = mixed.sequence(45);
  mixed.queries(a, 50, 57, 0).query(b, 20, 16).query(b, 21, 16).query(a, 58, 0);
  mixed.query(b, 40, 16).query(a, 59, 0);  // interleaved and non-consecutive
  check_all(mixed);
  AttnCase decode(8, 1, 64);  // two sequences' decode: few items, over 1024 keys split
  const int32_t c = decode.sequence(1100), e = decode.sequence(131);
  decode.query(c, 1099, 0).query(e, 130, 64);
  check_all(decode);
  AttnCase wide(64, 8, 64);  // gpt-oss heads: every KV head in one item, keys split
  const int32_t f = wide.sequence(1100), g = wide.sequence(70);
  wide.query(f, 1099, 0).query(g, 69, 0).query(f, 200, 128);
  check_all(wide);
  AttnCase short_keys(64, 8, 64);  // the same under 1024 keys: 3 items, no split
  const int32_t h = short_keys.sequence(333), i = short_keys.sequence(70);
  short_keys.query(h, 332, 0).query(i, 69, 0).query(h, 200, 128);
  check_all(short_keys);
}

// The 20b decode shape: 64 query heads over 8 KV heads, one token. Over 1024 keys one item
// takes every KV head and the keys are split, in a full and a sliding-window layer (the
// window's first tile is partial); under it the KV heads are split into two items of 4.
TEST_CASE("attention: decode with all KV heads in one item matches the reference", "[cpu-ops]") {
  check_all(last_positions(1, 1100, 0, 64, 8, 64));
  check_all(last_positions(1, 1300, 1100, 64, 8, 64));
  check_all(last_positions(1, 517, 0, 64, 8, 64));
  check_all(last_positions(1, 517, 128, 64, 8, 64));
  check_all(last_positions(1, 40, 0, 64, 8, 64));
  check_all(last_positions(2, 300, 0, 32, 8, 64)); // two tokens: 64 rows, still one item
}

TEST_CASE("attention: fast precision over a bf16 cache stays close to the reference", "[cpu-ops]") {
  const std::vector<AttnCase> cases = {
      last_positions(1, 517, 0, 64, 8, 64),     // 20b decode, KV heads split
      last_positions(1, 1100, 0, 64, 8, 64),    // ... keys split
      last_positions(1, 1300, 1100, 64, 8, 64), // ... in a window
      last_positions(20, 77, 0, 16, 2, 64),     // prefill, GQA 8
      last_positions(40, 200, 128, 4, 4, 40),   // window, head_dim 40: 20 pairs
      last_positions(9, 50, 0, 6, 2, 21),       // odd head_dim: the fp32 path
  };
  for (const AttnCase& c : cases)
    for (Isa isa : supported_isas())
      if (isa != Isa::scalar) c.check_fast_bf16(isa);
}

namespace {
// Queries at the last T of n cached positions (head_dim 64, f32 cache, window 0 = full): the
// rows of one call over all T must equal, bit for bit, those of calls over each chunk.
void check_chunks_equal_whole(size_t n, size_t T, size_t H, size_t KV, size_t window,
                              std::initializer_list<size_t> chunks, uint32_t seed) {
  const size_t hd = 64, P = 16;
  const auto k = random_floats(n * KV * hd, seed), v = random_floats(n * KV * hd, seed + 1);
  const auto q = random_floats(T * H * hd, seed + 2, -3.0f, 3.0f);
  const Weight sinks = random_weight(gptoss_dtype_bf16, 1, H, seed + 3);
  std::vector<int32_t> table(n / P + 1);
  std::iota(table.begin(), table.end(), 0);
  std::vector<AttnToken> toks(T);
  for (size_t t = 0; t < T; ++t) {
    const size_t pos = n - T + t;
    toks[t] = {int32_t(pos), int32_t(window && pos + 1 > window ? pos + 1 - window : 0), 0, 0};
  }
  const auto run = [&](Stream* st, size_t t0, size_t c, float* out) {
    return op_attention(st, q.data() + t0 * H * hd, k.data(), v.data(), gptoss_kv_dtype_f32, &sinks,
                        toks.data() + t0, table.data(), c, H, KV, hd, P, 0.125f, out);
  };
  for (Isa isa : supported_isas()) {
    Devices d(isa);
    std::vector<float> whole(q.size());
    REQUIRE(run(&d.fast_stream, 0, T, whole.data()) == gptoss_status_success);
    for (size_t chunk : chunks) {
      std::vector<float> parts(q.size());
      for (size_t t = 0; t < T; t += chunk)
        REQUIRE(run(&d.fast_stream, t, std::min(chunk, T - t), parts.data() + t * H * hd) == gptoss_status_success);
      INFO(isa_name(isa) << ", " << n << " positions, chunks of " << chunk);
      CHECK(parts == whole);
    }
  }
}
}  // namespace

// Tiles sit at fixed multiples of the tile size, so a query row's result does not depend on
// which other tokens share its call: prefill in one call, in chunks and token by token agree
// bit for bit (as long as no call splits the keys: here there are too few).
TEST_CASE("attention: a row's output does not depend on the tokens batched with it", "[cpu-ops]") {
  check_chunks_equal_whole(70, 70, 16, 2, 16, {13, 1}, 41);
}

// Under 1024 keys a 20b decode step splits the KV heads, not the keys: its row is exactly the
// one the same token gets inside a prefill call (which takes one KV head per item).
TEST_CASE("attention: a short-context decode row equals its prefill row bit for bit", "[cpu-ops]") {
  check_chunks_equal_whole(517, 9, 64, 8, 0, {1}, 51);
}

TEST_CASE("attention: tokens whose key range is empty or negative are rejected", "[cpu-ops]") {
  const Weight sinks = random_weight(gptoss_dtype_bf16, 1, 8, 33);
  const auto q = random_floats(8 * 64, 34), kv = random_floats(16 * 64, 35);
  const std::vector<int32_t> table = {0};
  std::vector<float> out(q.size());
  for (Isa isa : supported_isas())
    for (AttnToken bad : {AttnToken{3, 4, 0, 0}, AttnToken{3, -1, 0, 0}}) {
      Devices d(isa);
      CHECK(op_attention(&d.fast_stream, q.data(), kv.data(), kv.data(), gptoss_kv_dtype_f32, &sinks,
                         &bad, table.data(), 1, 8, 1, 64, 16, 0.125f, out.data()) ==
            gptoss_status_invalid_argument);
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
  const MoeWeights m(E, dim, inter, 31);
  for (Isa isa : supported_isas()) {
    if (kernels_for(isa).matmul_mxfp4_q8 == nullptr) continue;
    Devices d(isa, 2, /*quantize=*/true);
    const size_t T = 9;
    std::vector<int32_t> ids(T * K);
    for (size_t t = 0; t < T; ++t) ids[t * K] = int32_t(t % E), ids[t * K + 1] = int32_t((t + 2) % E);
    const auto gates = random_floats(T * K, 35, 0.1f, 1.0f);
    const auto x = random_floats(T * dim, 36, -2.0f, 2.0f);
    std::vector<float> want(T * dim), got(T * dim), one(dim);
    REQUIRE(ref_moe(&d.ref_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, T, dim,
                    inter, K, 7.0f, want.data()) == gptoss_status_success);
    REQUIRE(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, T, dim,
                   inter, K, 7.0f, got.data()) == gptoss_status_success);
    INFO(isa_name(isa));
    CHECK(rel_l2(got, want) < 0.02);
    CHECK(got != want);  // the int8 path ran (exact fp32 would match to ~1e-6)
    for (size_t t = 0; t < T; ++t) {  // token alone (GEMV) = token in the batch (GEMM panels)
      REQUIRE(op_moe(&d.fast_stream, x.data() + t * dim, ids.data() + t * K, gates.data() + t * K,
                     &m.w1, &m.b1, &m.w2, &m.b2, 1, dim, inter, K, 7.0f, one.data()) == gptoss_status_success);
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

// Decode (one token) large enough to run on the pool (the tests above run one token on the
// calling thread alone). 1 to 4 experts, 2 to 4 threads: bit for bit the result of one
// thread (the kernels' rows do not depend on the split, tested in kernels_test), which is
// close to the reference; int8 likewise against its one-thread run.
TEST_CASE("moe: one token over the pool matches the reference", "[cpu-ops]") {
  const size_t dim = 256, inter = 352, E = 8;  // every K is above kMinParallelWork
  const MoeWeights m(E, dim, inter, 41);
  const auto x = random_floats(dim, 46, -2.0f, 2.0f);
  for (Isa isa : simd_isas())
    for (size_t K : {1, 2, 4}) {
      std::vector<int32_t> ids(K);
      for (size_t k = 0; k < K; ++k) ids[k] = int32_t(7 - 2 * k);  // 7, 5, 3, 1
      const auto gates = random_floats(K, 45, 0.1f, 1.0f);
      auto run = [&](unsigned threads, bool quantize) {
        Devices d(isa, threads, quantize);
        std::vector<float> out(dim);
        REQUIRE(op_moe(&d.fast_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, 1,
                       dim, inter, K, 7.0f, out.data()) == gptoss_status_success);
        return out;
      };
      Devices d(isa);
      std::vector<float> want(dim);
      REQUIRE(ref_moe(&d.ref_stream, x.data(), ids.data(), gates.data(), &m.w1, &m.b1, &m.w2, &m.b2, 1,
                      dim, inter, K, 7.0f, want.data()) == gptoss_status_success);
      const bool has_q8 = kernels_for(isa).matmul_mxfp4_q8 != nullptr;
      const auto serial = run(1, false), serial_q8 = has_q8 ? run(1, true) : serial;
      INFO(isa_name(isa) << ", top " << K);
      CHECK(rel_l2(serial, want) < 1e-4);
      if (has_q8) CHECK(rel_l2(serial_q8, want) < 0.02);
      for (unsigned threads : {2u, 3u, 4u})
        for (int rep = 0; rep < 3; ++rep) {  // pieces go to threads by timing: run it again
          INFO(threads << " threads");
          CHECK(run(threads, false) == serial);
          if (has_q8) CHECK(run(threads, true) == serial_q8);
        }
    }
}

}  // namespace gptoss::cpu::test
