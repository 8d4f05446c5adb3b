// The SIMD attention tile kernels (attention_kernels.hpp) against the scalar table, at every
// instruction-set level this CPU supports, on random data with tails: partial key tiles,
// row counts that leave register tiles part-filled, head dims that are no multiple of 8 or
// 16, rows that see no key of a tile. Gathers must match exactly; arithmetic within
// 1e-5 * (1 + magnitude) (fp32, only summation order and the exp approximation differ).
#include <catch2/catch.hpp>
#include <cmath>
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
  for (Isa isa : supported_isas())
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
  for (Isa isa : supported_isas())
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
  for (Isa isa : supported_isas()) {
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

}  // namespace gptoss::cpu::test
