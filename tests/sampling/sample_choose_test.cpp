// The shared token choice (backends/common/sampling.hpp) against the slot's algorithm written
// out plainly (include/gptoss/backend.h, steps 2 and 3): every candidate sorted, sums one by
// one, std::exp. The choice takes shortcuts (sparse masks walked as lists, weights summed by
// block, truncations that sort only the buckets they reach, its own exp); on fresh random rows
// it must take the reference's token wherever the draw and the cuts lie beyond rounding of a
// boundary, and a token the reference could keep anywhere.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backends/common/sampling.hpp"

namespace {

using gptoss::backends::SampleTruncation;

struct Row {
  std::vector<float> work;     // NaN and disallowed tokens already -inf
  std::vector<uint32_t> mask;  // empty: every token allowed
  size_t n_allowed = 0, first_allowed = 0;
};

bool allowed(const Row& row, size_t i) {
  return row.mask.empty() || ((row.mask[i / 32] >> (i % 32)) & 1u);
}

// What the reference accepts for one draw: the token, unless a boundary lies within rounding
// (then any token of `may`, the tokens some rounding could keep).
struct Expected {
  uint32_t token;
  bool exact;
  std::vector<uint32_t> may;
};

constexpr double kRounding = 1e-9;  // relative: far above double rounding, far below any weight

// The position j at which r minus the running sum of w drops below 0 (else the last w > 0),
// and whether r lies within rounding of a running sum.
size_t draw(double r, const std::vector<double>& w, double total, bool& near) {
  double run = 0.0;
  near = false;
  size_t chosen = w.size();
  for (size_t j = 0; j < w.size(); ++j) {
    run += w[j];
    if (std::abs(run - r) <= kRounding * total) near = true;
    if (chosen == w.size() && r - run < 0.0) chosen = j;
  }
  if (chosen == w.size())
    for (size_t j = w.size(); j-- > 0;)
      if (w[j] > 0.0) return j;
  return chosen;
}

Expected reference(const SampleTruncation& p, double u, const Row& row) {
  const size_t V = row.work.size();
  std::vector<uint32_t> cand;
  for (size_t i = 0; i < V; ++i)
    if (allowed(row, i)) cand.push_back(uint32_t(i));
  size_t best = cand[0];
  for (uint32_t i : cand)
    if (row.work[i] > row.work[best]) best = i;
  if (p.temperature == 0.0f) return {uint32_t(best), true, {}};
  if (row.work[best] == -INFINITY) {
    const size_t k = std::min(cand.size() - 1, size_t(u * double(cand.size())));
    return {cand[k], true, {}};
  }
  const double top = row.work[best], T = p.temperature;
  auto weight = [&](uint32_t i) { return std::exp((double(row.work[i]) - top) / T); };
  const bool keeps_all = p.top_p >= 1.0f && p.min_p <= 0.0f && (p.top_k == 0 || p.top_k >= V);
  if (keeps_all) {
    std::vector<double> w;
    double total = 0.0;
    for (uint32_t i : cand) total += w.emplace_back(weight(i));
    bool near = false;
    const size_t j = draw(u * total, w, total, near);
    Expected e{cand[j], !near, {}};
    if (near)
      for (size_t k = 0; k < cand.size(); ++k)
        if (w[k] > 0.0) e.may.push_back(cand[k]);
    return e;
  }
  std::sort(cand.begin(), cand.end(), [&](uint32_t a, uint32_t b) {
    return row.work[a] > row.work[b] || (row.work[a] == row.work[b] && a < b);
  });
  size_t n = (p.top_k > 0 && p.top_k < cand.size()) ? p.top_k : cand.size();
  std::vector<double> probs(n);
  double sum = 0.0;
  for (size_t k = 0; k < n; ++k) sum += probs[k] = weight(cand[k]);
  for (double& q : probs) q /= sum;
  bool exact = true;
  // min-p: a candidate within rounding of min_p x the best's could go either way.
  size_t keep = n, keep_most = n;
  if (p.min_p > 0.0f) {
    const double cut = double(p.min_p) * probs[0];
    keep = 1;
    while (keep < n && probs[keep] >= cut) ++keep;
    keep_most = keep;
    while (keep_most < n && probs[keep_most] >= cut * (1.0 - kRounding)) ++keep_most;
    if (keep_most != keep || (keep > 1 && probs[keep - 1] < cut * (1.0 + kRounding))) exact = false;
  }
  // top-p: the shortest leading run reaching top_p; a run within rounding of it too.
  size_t kept = keep, kept_most = keep_most;
  if (p.top_p < 1.0f) {
    double mass = 0.0;
    kept = 0;
    while (kept < keep) {
      mass += probs[kept++];
      if (mass >= p.top_p) break;
    }
    mass = 0.0;
    kept_most = 0;
    while (kept_most < keep_most) {
      mass += probs[kept_most++];
      if (mass >= double(p.top_p) * (1.0 + kRounding)) break;
    }
    double before = 0.0;
    for (size_t k = 0; k + 1 < kept; ++k) before += probs[k];
    if (kept_most != kept || before >= double(p.top_p) * (1.0 - kRounding)) exact = false;
  }
  std::vector<double> w(probs.begin(), probs.begin() + std::ptrdiff_t(kept));
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  bool near = false;
  const size_t j = draw(u * total, w, total, near);
  Expected e{cand[j], exact && !near, {}};
  if (!e.exact)
    for (size_t k = 0; k < kept_most; ++k)
      if (probs[k] > 0.0) e.may.push_back(cand[k]);
  return e;
}

uint32_t choose(const SampleTruncation& p, double u, const Row& row,
                gptoss::backends::SampleScratch& scratch) {
  return gptoss::backends::sample_choose(p, u, row.work.data(), row.work.size(),
                                         row.mask.empty() ? nullptr : row.mask.data(),
                                         row.n_allowed, row.first_allowed, scratch);
}

void check(const SampleTruncation& p, double u, const Row& row,
           gptoss::backends::SampleScratch& scratch) {
  const Expected e = reference(p, u, row);
  const uint32_t got = choose(p, u, row, scratch);
  INFO("T " << p.temperature << " top_k " << p.top_k << " top_p " << p.top_p << " min_p " << p.min_p
            << " u " << u << " V " << row.work.size() << " allowed " << row.n_allowed
            << " reference " << e.token << (e.exact ? "" : " (within rounding)") << " got " << got);
  if (e.exact) CHECK(got == e.token);
  else CHECK(std::find(e.may.begin(), e.may.end(), got) != e.may.end());
}

// A random row: logits of a random spread, some tied (rounded to a grid), some NaN or -inf as
// the caller leaves them, under no mask, a sparse one (walked as a list) or a dense one.
Row random_row(std::mt19937_64& rng, size_t V) {
  Row row;
  row.work.resize(V);
  const float spread = std::uniform_real_distribution<float>(0.05f, 12.0f)(rng);
  const bool ties = rng() % 3 == 0;
  std::normal_distribution<float> logit(0.0f, spread);
  for (float& l : row.work) {
    l = logit(rng);
    if (ties) l = std::round(l * 4.0f) / 4.0f;
    if (rng() % 100 == 0) l = -INFINITY;
  }
  const int masking = int(rng() % 3);
  if (masking > 0) {
    row.mask.assign((V + 31) / 32, 0u);
    const double share = masking == 1 ? 0.5 / double(gptoss::backends::kSparseMaskRatio) : 0.7;
    for (size_t i = 0; i < V; ++i)
      if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) < share)
        row.mask[i / 32] |= 1u << (i % 32);
    row.mask[(rng() % V) / 32] |= ~0u;  // at least one token, and bits past V in the last word
  }
  row.first_allowed = V;
  for (size_t i = 0; i < V; ++i) {
    if (!allowed(row, i)) {
      row.work[i] = -INFINITY;
      continue;
    }
    ++row.n_allowed;
    row.first_allowed = std::min(row.first_allowed, i);
  }
  return row;
}

SampleTruncation random_truncation(std::mt19937_64& rng, size_t V) {
  SampleTruncation p{};
  p.temperature = rng() % 8 == 0 ? 0.0f : std::uniform_real_distribution<float>(0.2f, 3.0f)(rng);
  const uint32_t k_choices[] = {0, 0, 1, 5, 40, uint32_t(V - 1), uint32_t(V), uint32_t(V + 3)};
  p.top_k = k_choices[rng() % 8];
  const float p_choices[] = {1.0f, 1.0f, 0.3f, 0.9f, 0.95f, 0.999f};
  p.top_p = p_choices[rng() % 6];
  const float m_choices[] = {0.0f, 0.0f, 0.0f, 0.05f, 0.5f, 1e-6f};
  p.min_p = m_choices[rng() % 6];
  return p;
}

}  // namespace

TEST_CASE("sample_exp is within 2 ulp of std::exp down to the subnormals", "[sampling]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto ulps = [](double a, double b) {
    const int64_t ia = std::bit_cast<int64_t>(a), ib = std::bit_cast<int64_t>(b);
    return ia > ib ? ia - ib : ib - ia;
  };
  for (const auto& [lo, hi] :
       {std::pair{-1.0, 0.0}, {-40.0, -1.0}, {-708.0, -40.0}, {-746.0, -708.0}}) {
    std::uniform_real_distribution<double> x(lo, hi);
    int64_t worst = 0;
    for (int i = 0; i < 200000; ++i) {
      const double v = x(rng);
      worst = std::max(worst, ulps(gptoss::backends::sample_exp(v), std::exp(v)));
    }
    INFO("[" << lo << ", " << hi << "]");
    CHECK(worst <= 2);
  }
  CHECK(gptoss::backends::sample_exp(0.0) == 1.0);
  CHECK(gptoss::backends::sample_exp(-0.0) == 1.0);
  CHECK(gptoss::backends::sample_exp(-INFINITY) == 0.0);
  CHECK(gptoss::backends::sample_exp(-800.0) == 0.0);
  CHECK(gptoss::backends::sample_exp(-745.0) == std::exp(-745.0));  // the least subnormal
}

TEST_CASE("the token choice takes the algorithm's token on fresh random rows", "[sampling]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  gptoss::backends::SampleScratch scratch;
  for (int trial = 0; trial < 600; ++trial) {
    const size_t sizes[] = {1, 2, 31, 33, 100, 1000, 5000, 40000};
    const size_t V = sizes[rng() % 8];
    const Row row = random_row(rng, V);
    for (int draw = 0; draw < 4; ++draw) {
      INFO("trial " << trial << " draw " << draw);
      check(random_truncation(rng, V), std::uniform_real_distribution<double>(0.0, 1.0)(rng), row,
            scratch);
    }
  }
}

TEST_CASE("the token choice over a full-size vocabulary takes the algorithm's token",
          "[sampling]") {
  // The 20b's 201,088 logits: buckets, blocks and sparse masks at their real sizes.
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  gptoss::backends::SampleScratch scratch;
  for (int trial = 0; trial < 12; ++trial) {
    const Row row = random_row(rng, 201088);
    for (int draw = 0; draw < 3; ++draw) {
      INFO("trial " << trial << " draw " << draw);
      check(random_truncation(rng, 201088), std::uniform_real_distribution<double>(0.0, 1.0)(rng),
            row, scratch);
    }
  }
}

TEST_CASE("top-p at a cut within rounding keeps a run the algorithm could keep", "[sampling]") {
  // 1024 tokens at logit 0, then 110 a hair below: the first 1024's probabilities summed one
  // by one stop a few ulps short of top_p (the constants were searched for that), so whether
  // the run ends at the 1024th or the 1025th token is rounding's call; nothing past those.
  constexpr size_t kHead = 1024, kTail = 110;
  constexpr float kTopP = 0x1.ce55ccp-1f;         // 0.902998328
  constexpr float kTailLogit = -0x1.199132p-20f;  // -1.04891944e-06
  Row row;
  row.work.assign(kHead + kTail, 0.0f);
  for (size_t i = kHead; i < row.work.size(); ++i) row.work[i] = kTailLogit;
  row.n_allowed = row.work.size();
  SampleTruncation p{1.0f, 0, kTopP, 0.0f};
  gptoss::backends::SampleScratch scratch;
  for (double u : {0.0, 0.5, 0.9999, 1.0 - 1e-12}) {
    INFO("uniform " << u);
    CHECK(choose(p, u, row, scratch) <= kHead);
    check(p, u, row, scratch);
  }
}

TEST_CASE("a +inf logit is the token, whatever the truncation", "[sampling]") {
  Row row;
  row.work = {1.0f, INFINITY, 3.0f, -INFINITY, 2.0f};
  row.n_allowed = row.work.size();
  gptoss::backends::SampleScratch scratch;
  for (const SampleTruncation& p :
       {SampleTruncation{1.0f, 0, 1.0f, 0.0f}, SampleTruncation{0.7f, 2, 1.0f, 0.0f},
        SampleTruncation{1.0f, 0, 0.5f, 0.1f}, SampleTruncation{0.0f, 0, 1.0f, 0.0f}})
    for (double u : {0.0, 0.7}) CHECK(choose(p, u, row, scratch) == 1u);
}
