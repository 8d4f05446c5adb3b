// The sampler on hand-made logits: each option's documented effect.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "libgptoss/common/error.hpp"
#include "libgptoss/sampling/sampler.hpp"

using namespace gptoss;

static std::vector<float> ramp(size_t n) {  // logits 0, 1, ..., n-1: the last is best
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i) * 0.5f;
  return v;
}

TEST_CASE("greedy picks the argmax, lowest id on ties; NaN never wins", "[sampling]") {
  SamplerParams p;
  p.temperature = 0.0f;
  Sampler s(p);
  std::vector<float> l = {1.0f, 3.0f, 3.0f, NAN, -2.0f};
  CHECK(s.sample(l, {}) == 1u);
}

TEST_CASE("top-k restricts to the k best and top-k 1 is greedy", "[sampling]") {
  SamplerParams p;
  p.top_k = 3;
  p.seed = 5;
  Sampler s(p);
  const auto l = ramp(50);
  std::set<uint32_t> seen;
  for (int i = 0; i < 300; ++i) seen.insert(s.sample(l, {}));
  CHECK(seen == std::set<uint32_t>{47, 48, 49});
  p.top_k = 1;
  Sampler g(p);
  for (int i = 0; i < 20; ++i) CHECK(g.sample(l, {}) == 49u);
}

TEST_CASE("top-p keeps the smallest prefix reaching p; min-p cuts unlikely tokens", "[sampling]") {
  std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SamplerParams p;
  p.top_p = 0.75f;  // 0.5 + 0.3 reaches it
  Sampler s(p);
  std::set<uint32_t> seen;
  for (int i = 0; i < 400; ++i) seen.insert(s.sample(l, {}));
  CHECK(seen == std::set<uint32_t>{0, 1});
  p.top_p = 1.0f;
  p.min_p = 0.25f;  // keeps p >= 0.125: tokens 0, 1, 2
  Sampler m(p);
  seen.clear();
  for (int i = 0; i < 400; ++i) seen.insert(m.sample(l, {}));
  CHECK(seen == std::set<uint32_t>{0, 1, 2});
}

TEST_CASE("frequencies follow the softmax at temperature 1", "[sampling]") {
  std::vector<float> l = {std::log(0.7f), std::log(0.2f), std::log(0.1f)};
  SamplerParams p;
  p.seed = 123;
  Sampler s(p);
  std::map<uint32_t, int> count;
  const int n = 20000;
  for (int i = 0; i < n; ++i) count[s.sample(l, {})]++;
  CHECK(std::abs(count[0] / double(n) - 0.7) < 0.02);
  CHECK(std::abs(count[1] / double(n) - 0.2) < 0.02);
  CHECK(std::abs(count[2] / double(n) - 0.1) < 0.02);
}

TEST_CASE("same seed gives the same sequence; reseed restarts it", "[sampling]") {
  const auto l = std::vector<float>(1000, 0.0f);
  SamplerParams p;
  p.seed = 99;
  Sampler a(p), b(p);
  std::vector<uint32_t> x, y;
  for (int i = 0; i < 50; ++i) {
    x.push_back(a.sample(l, {}));
    y.push_back(b.sample(l, {}));
  }
  CHECK(x == y);
  a.reseed(99);
  std::vector<uint32_t> z;
  for (int i = 0; i < 50; ++i) z.push_back(a.sample(l, {}));
  CHECK(z == x);
}

TEST_CASE("penalties push down recent tokens within the window only", "[sampling]") {
  std::vector<float> l = {2.0f, 1.9f, 0.0f};
  SamplerParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.5f;
  std::vector<uint32_t> history = {0};
  CHECK(Sampler(p).sample(l, history) == 1u);  // 2.0/1.5 < 1.9
  p.repetition_penalty = 1.0f;
  p.presence_penalty = 0.5f;
  CHECK(Sampler(p).sample(l, history) == 1u);
  p.presence_penalty = 0.0f;
  p.frequency_penalty = 0.04f;
  CHECK(Sampler(p).sample(l, std::vector<uint32_t>{0}) == 0u);       // 1.96 > 1.9
  CHECK(Sampler(p).sample(l, std::vector<uint32_t>{0, 0, 0}) == 1u);  // 1.88 < 1.9
  p.penalty_window = 1;
  CHECK(Sampler(p).sample(l, std::vector<uint32_t>{0, 0, 2}) == 0u);  // 0 is outside the window
}

TEST_CASE("log-probabilities of the chosen token and the top alternatives", "[sampling]") {
  std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplerParams p;
  p.temperature = 0.0f;
  p.top_logprobs = 2;
  Sampler s(p);
  CHECK_FALSE(s.has_last());
  CHECK(s.sample(l, {}) == 0u);
  CHECK(s.last_chosen().logprob == Approx(std::log(0.6)).margin(1e-6));
  REQUIRE(s.last_alternatives().size() == 2);
  CHECK(s.last_alternatives()[1].token == 1u);
  CHECK(s.last_alternatives()[1].logprob == Approx(std::log(0.3)).margin(1e-6));

  // They are computed when asked for, from the last sample's logits: after a second sample
  // (asked for or not in between), they describe that one.
  std::vector<float> l2 = {std::log(0.2f), std::log(0.1f), std::log(0.7f)};
  CHECK(s.sample(l2, {}) == 2u);
  CHECK(s.sample(l, {}) == 0u);
  CHECK(s.sample(l2, {}) == 2u);
  CHECK(s.last_chosen().token == 2u);
  CHECK(s.last_chosen().logprob == Approx(std::log(0.7)).margin(1e-6));
  CHECK(s.last_chosen().logprob == Approx(std::log(0.7)).margin(1e-6));  // asked twice
  REQUIRE(s.last_alternatives().size() == 2);
  CHECK(s.last_alternatives()[0].token == 2u);
  CHECK(s.last_alternatives()[1].token == 0u);
  CHECK(s.last_alternatives()[1].logprob == Approx(std::log(0.2)).margin(1e-6));
}

TEST_CASE("out-of-range options are rejected by name", "[sampling][bad-input]") {
  auto rejects = [](auto mutate, const char* field) {
    SamplerParams p;
    mutate(p);
    try {
      Sampler s(p);
      FAIL("accepted bad " << field);
    } catch (const Error& e) {
      CHECK(e.status() == gptoss_status_invalid_argument);
      CHECK(std::string(e.what()).find(field) != std::string::npos);
    }
  };
  rejects([](SamplerParams& p) { p.temperature = -1.0f; }, "temperature");
  rejects([](SamplerParams& p) { p.temperature = NAN; }, "temperature");
  rejects([](SamplerParams& p) { p.top_p = 0.0f; }, "top_p");
  rejects([](SamplerParams& p) { p.top_p = 1.5f; }, "top_p");
  rejects([](SamplerParams& p) { p.min_p = 1.0f; }, "min_p");
  rejects([](SamplerParams& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty");
  rejects([](SamplerParams& p) { p.presence_penalty = INFINITY; }, "presence_penalty");
  rejects([](SamplerParams& p) { p.top_logprobs = 21; }, "top_logprobs");
}

TEST_CASE("truncation over a full-size vocabulary matches a brute-force reference", "[sampling]") {
  // 201088 logits, a few hundred of them large: top-p and min-p must cut exactly where a
  // fully sorted distribution says, whichever internal shortcut is taken.
  std::vector<float> l(201088, -5.0f);
  for (size_t i = 0; i < 300; ++i) l[(i * 7919) % l.size()] = 3.0f + float(i % 17) * 0.25f;
  for (float top_p : {0.3f, 0.9f, 1.0f}) {
    for (float min_p : {0.0f, 0.5f}) {
      // Reference: the kept set from a full sort.
      std::vector<double> pr(l.size());
      double z = 0;
      for (size_t i = 0; i < l.size(); ++i) z += pr[i] = std::exp(double(l[i]));
      std::vector<uint32_t> idx(l.size());
      std::iota(idx.begin(), idx.end(), 0u);
      std::sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
      size_t n = idx.size();
      if (min_p > 0) {
        size_t k = 1;
        while (k < n && pr[idx[k]] >= min_p * pr[idx[0]]) ++k;
        n = k;
      }
      if (top_p < 1) {
        double mass = 0;
        size_t k = 0;
        while (k < n) {
          mass += pr[idx[k++]] / z;
          if (mass >= top_p) break;
        }
        n = k;
      }
      std::set<uint32_t> allowed(idx.begin(), idx.begin() + std::ptrdiff_t(n));
      SamplerParams p;
      p.top_p = top_p;
      p.min_p = min_p;
      p.seed = 3;
      Sampler s(p);
      for (int i = 0; i < 200; ++i) {
        const uint32_t t = s.sample(l, {});
        INFO("top_p " << top_p << " min_p " << min_p << " token " << t);
        if (top_p < 1 || min_p > 0) REQUIRE(allowed.count(t) == 1);
      }
    }
  }
}

TEST_CASE("a token mask restricts every sampling mode to allowed tokens", "[sampling]") {
  const size_t V = 100;
  std::vector<float> l(V);
  for (size_t i = 0; i < V; ++i) l[i] = float(i % 7) * 0.3f + (i == 97 ? 1.0f : 0.0f);
  std::vector<uint32_t> mask((V + 31) / 32, 0);
  for (uint32_t t : {3u, 40u, 64u, 97u}) mask[t / 32] |= 1u << (t % 32);
  const std::set<uint32_t> allowed = {3, 40, 64, 97};
  SamplerParams greedy;
  greedy.temperature = 0.0f;
  CHECK(Sampler(greedy).sample(l, {}, mask) == 97u);
  for (int mode = 0; mode < 4; ++mode) {
    SamplerParams p;
    p.temperature = 2.0f;
    p.seed = 17;
    if (mode == 1) p.top_k = 2;
    if (mode == 2) p.top_p = 0.5f;
    if (mode == 3) p.min_p = 0.2f;
    Sampler s(p);
    std::map<uint32_t, int> seen;
    for (int i = 0; i < 400; ++i) ++seen[s.sample(l, {}, mask)];
    for (const auto& [t, n] : seen) CHECK(allowed.count(t) == 1);
    if (mode == 0) CHECK(seen.size() >= 3);  // sampling, not argmax
  }
}

TEST_CASE("a mask whose allowed logits are all -inf still yields an allowed token", "[sampling]") {
  std::vector<float> l(64, 1.0f);
  l[5] = -INFINITY;
  l[50] = NAN;
  std::vector<uint32_t> mask = {1u << 5, 1u << (50 - 32)};
  SamplerParams p;
  p.seed = 3;
  Sampler s(p);
  for (int i = 0; i < 50; ++i) {
    const uint32_t t = s.sample(l, {}, mask);
    CHECK((t == 5u || t == 50u));
  }
  p.temperature = 0.0f;
  CHECK(Sampler(p).sample(l, {}, mask) == 5u);
}

TEST_CASE("a mask that allows nothing is an error, not a forbidden token", "[sampling]") {
  std::vector<float> l = ramp(40);
  std::vector<uint32_t> none = {0u, 0u};
  Sampler s(SamplerParams{});
  CHECK_THROWS_AS(s.sample(l, {}, none), Error);
  std::vector<uint32_t> beyond = {0u, 0u, 0xffffffffu};  // bits past the logits do not count
  CHECK_THROWS_AS(s.sample(l, {}, beyond), Error);
  std::vector<uint32_t> short_mask = {1u << 7};  // words missing: those tokens are not allowed
  CHECK(s.sample(l, {}, short_mask) == 7u);
}
