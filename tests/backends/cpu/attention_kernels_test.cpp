// The SIMD attention tile kernels (attention_kernels.hpp) against the scalar table, at every
// instruction-set level this CPU supports, on random data with tails: partial key tiles,
// row counts that leave register tiles part-filled, head dims that are no multiple of 8 or
// 16, rows that see no key of a tile. Gathers must match exactly; arithmetic within
// 1e-5 * (1 + magnitude) (fp32, only summation order and the exp approximation differ).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attention_kernels.hpp"
#include "backends/cpu/test_weights.hpp"

namespace gptoss::cpu::test {
namespace {

void check_near(const float* got, const float* want, size_t n, float tol = 1e-5f) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * (1.0f + std::fabs(want[i]))) && bad++ < 5)
      UNSCOPED_INFO("element " << i << ": got " << got[i] << " want " << want[i]);
  CHECK(bad == 0);
}

// n rows of hd values in both formats, as row pointers like the op's gather builds.
struct Rows {
  Rows(size_t n, size_t hd, uint32_t seed) : f(random_floats(n * hd, seed)), b(f.size()) {
    for (size_t i = 0; i < f.size(); ++i) b[i] = f32_to_bf16(f[i]);
    for (size_t i = 0; i < n; ++i) pf.push_back(f.data() + i * hd), pb.push_back(b.data() + i * hd);
  }
  std::vector<float> f;
  std::vector<uint16_t> b;
  std::vector<const void*> pf, pb;
};

}  // namespace

TEST_CASE("attention kernels: gathers match the scalar table exactly", "[cpu-attn-kernels]") {
  const AttnKernels& ref = attention_kernels_for(Isa::scalar);
  for (Isa isa : simd_isas())
    for (size_t hd : {64, 20, 40})
      for (size_t n : {32, 31, 17, 16, 13, 8, 1}) {
        INFO(isa_name(isa) << " hd " << hd << " n " << n);
        const AttnKernels& k = attention_kernels_for(isa);
        const Rows rows(n, hd, uint32_t(hd + n));
        for (int bf16 : {0, 1}) {
          std::vector<float> want(kAttnTile * hd), got(kAttnTile * hd, 7.0f);
          ref.load_k_tile(bf16 ? rows.pb.data() : rows.pf.data(), n, hd, bf16, want.data());
          k.load_k_tile(bf16 ? rows.pb.data() : rows.pf.data(), n, hd, bf16, got.data());
          CHECK(got == want);
        }
        std::vector<float> want(n * hd), got(n * hd);
        ref.widen_rows(rows.pb.data(), n, hd, want.data());
        k.widen_rows(rows.pb.data(), n, hd, got.data());
        CHECK(got == want);
      }
}

TEST_CASE("attention kernels: scores and P.V match the scalar table", "[cpu-attn-kernels]") {
  const AttnKernels& ref = attention_kernels_for(Isa::scalar);
  for (Isa isa : simd_isas())
    for (size_t hd : {64, 40, 20, 100})
      for (size_t rows : {1, 3, 8, 13, 64}) {
        INFO(isa_name(isa) << " hd " << hd << " rows " << rows);
        const AttnKernels& k = attention_kernels_for(isa);
        const auto q = random_floats(rows * hd, 1), kt = random_floats(kAttnTile * hd, 2);
        std::vector<float> want(rows * kAttnTile), got(rows * kAttnTile);
        ref.scores(q.data(), rows, hd, kt.data(), want.data());
        k.scores(q.data(), rows, hd, kt.data(), got.data());
        check_near(got.data(), want.data(), got.size(), 1e-5f * float(hd));  // sums of hd terms
        for (size_t n : {32, 5}) {
          const Rows v(n, hd, 3);
          std::vector<const float*> vp;
          for (const void* p : v.pf) vp.push_back(static_cast<const float*>(p));
          const auto p = random_floats(rows * kAttnTile, 4, 0.0f, 1.0f);
          const auto corr = random_floats(rows, 5, 0.0f, 1.0f);
          const auto acc0 = random_floats(rows * hd, 6);
          std::vector<float> a_want = acc0, a_got = acc0;
          ref.pv(p.data(), rows, vp.data(), n, hd, corr.data(), a_want.data());
          k.pv(p.data(), rows, vp.data(), n, hd, corr.data(), a_got.data());
          check_near(a_got.data(), a_want.data(), a_got.size(), 1e-5f * float(n));
        }
      }
}

TEST_CASE("attention kernels: the online-softmax step masks rows and never makes NaN", "[cpu-attn-kernels]") {
  const AttnKernels& ref = attention_kernels_for(Isa::scalar);
  const float inf = std::numeric_limits<float>::infinity();
  // Tile of keys [100, 125) (25 keys). Rows: all keys, the causal first few, a window in the
  // middle, none (range ends before), none (range starts after), one key; first half of the
  // rows fresh (m = -inf), the others with a running max above and below the tile's scores.
  const std::vector<int32_t> begin = {0, 0, 105, 0, 125, 124, 0, 0, 110, 50, 130, 100};
  const std::vector<int32_t> end = {200, 103, 115, 100, 200, 125, 200, 101, 125, 100, 140, 200};
  const size_t rows = begin.size();
  std::vector<float> m0(rows, -inf), l0(rows, 0.0f);
  for (size_t r = rows / 2; r < rows; ++r) m0[r] = r % 2 ? 9.0f : -9.0f, l0[r] = 2.5f;
  const auto s0 = random_floats(rows * kAttnTile, 8, -6.0f, 6.0f);
  std::vector<float> s_want = s0, m_want = m0, l_want = l0, c_want(rows);
  ref.softmax_step(s_want.data(), rows, begin.data(), end.data(), 100, 25, m_want.data(),
                   l_want.data(), c_want.data());
  for (Isa isa : simd_isas()) {
    INFO(isa_name(isa));
    std::vector<float> s = s0, m = m0, l = l0, c(rows, -1.0f);
    attention_kernels_for(isa).softmax_step(s.data(), rows, begin.data(), end.data(), 100, 25,
                                            m.data(), l.data(), c.data());
    CHECK(m == m_want);  // maxima are exact
    check_near(s.data(), s_want.data(), s.size());
    check_near(l.data(), l_want.data(), rows);
    check_near(c.data(), c_want.data(), rows);
    for (float x : s) CHECK(std::isfinite(x));
    CHECK(c[3] == 1.0f);  // rows without a key of the tile keep their state
    CHECK(c[4] == 1.0f);
    CHECK(l[3] == 0.0f);
  }
}

// The bf16-pair kernels (fast precision over a bf16 cache). First the scalar reference against
// the fp32 one on values that are exact in bf16 (so only summation order differs): this pins
// down which half of a pair is which. Then the AVX512-BF16 table, where the CPU has it,
// against the scalar reference: conversions and gathers exactly, sums within tolerance.
TEST_CASE("attention kernels: bf16 pairs match the fp32 kernels and the scalar table", "[cpu-attn-kernels]") {
  const AttnKernels& f32 = attention_kernels_for(Isa::scalar);
  const AttnBf16Kernels* ref = attention_bf16_kernels_for(Isa::scalar);
  REQUIRE(ref != nullptr);
  std::vector<const AttnBf16Kernels*> simd;
  for (Isa isa : supported_isas())
    if (isa != Isa::scalar && attention_bf16_kernels_for(isa) != nullptr) simd.push_back(attention_bf16_kernels_for(isa));
  if (simd.empty()) WARN("this CPU has no AVX512-BF16: only the scalar bf16-pair kernels are tested");
  for (size_t hd : {64, 40, 20, 100})
    for (size_t rows : {1, 3, 8, 13, 64}) {
      INFO("hd " << hd << " rows " << rows);
      const size_t hd2 = hd / 2;
      auto q = random_floats(rows * hd, 11, -3.0f, 3.0f);
      std::vector<float> q2(rows * hd2), q2_simd(rows * hd2);
      ref->round_pairs(q.data(), rows * hd2, q2.data());
      for (const AttnBf16Kernels* k : simd) {
        k->round_pairs(q.data(), rows * hd2, q2_simd.data());
        CHECK(std::memcmp(q2.data(), q2_simd.data(), q2.size() * 4) == 0);
      }
      for (float& x : q) x = bf16_to_f32(f32_to_bf16(x));  // what the pairs hold
      const Rows keys(kAttnTile, hd, 12);
      std::vector<float> kt(kAttnTile * hd), kt2(kAttnTile * hd2);
      f32.load_k_tile(keys.pb.data(), kAttnTile, hd, 1, kt.data());
      f32.load_k_tile(keys.pb.data(), kAttnTile, hd2, 0, kt2.data());  // pairs, bit for bit
      std::vector<float> s_f32(rows * kAttnTile), s_ref(rows * kAttnTile), s_simd(rows * kAttnTile);
      f32.scores(q.data(), rows, hd, kt.data(), s_f32.data());
      ref->scores(q2.data(), rows, hd2, kt2.data(), s_ref.data());
      check_near(s_ref.data(), s_f32.data(), s_ref.size(), 1e-5f * float(hd));
      for (const AttnBf16Kernels* k : simd) {
        k->scores(q2.data(), rows, hd2, kt2.data(), s_simd.data());
        check_near(s_simd.data(), s_ref.data(), s_ref.size(), 1e-5f * float(hd));
      }
      for (size_t n : {32, 31, 5, 1}) {
        INFO("keys " << n);
        const Rows v(n, hd, 13);
        std::vector<float> vt2((kAttnTile / 2) * hd, 7.0f), vt2_simd((kAttnTile / 2) * hd, 7.0f);
        ref->pair_rows(v.pb.data(), n, hd, vt2.data());
        for (const AttnBf16Kernels* k : simd) {
          k->pair_rows(v.pb.data(), n, hd, vt2_simd.data());
          CHECK(std::memcmp(vt2.data(), vt2_simd.data(), (n + 1) / 2 * hd * 4) == 0);
        }
        auto p = random_floats(rows * kAttnTile, 14, 0.0f, 1.0f);
        const auto corr = random_floats(rows, 15, 0.0f, 1.0f);
        const auto acc0 = random_floats(rows * hd, 16);
        std::vector<float> a_ref = acc0, a_f32 = acc0, a_simd = acc0;
        ref->pv(p.data(), rows, vt2.data(), n, hd, corr.data(), a_ref.data());
        for (const AttnBf16Kernels* k : simd) {
          a_simd = acc0;
          k->pv(p.data(), rows, vt2.data(), n, hd, corr.data(), a_simd.data());
          check_near(a_simd.data(), a_ref.data(), a_ref.size(), 1e-5f * float(n));
        }
        for (float& x : p) x = bf16_to_f32(f32_to_bf16(x));
        std::vector<float> vw(n * hd);
        f32.widen_rows(v.pb.data(), n, hd, vw.data());
        std::vector<const float*> vp;
        for (size_t i = 0; i < n; ++i) vp.push_back(vw.data() + i * hd);
        f32.pv(p.data(), rows, vp.data(), n, hd, corr.data(), a_f32.data());
        check_near(a_ref.data(), a_f32.data(), a_ref.size(), 1e-5f * float(n));
      }
    }
}

}  // namespace gptoss::cpu::test
