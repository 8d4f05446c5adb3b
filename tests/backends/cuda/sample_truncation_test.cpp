// The GPU sampler's truncation walk (backends/cuda/device/sample_truncation.cuh), on the host:
// the host sampler's token for the same logits and draw, and never a read past the
// candidates the kernel holds sorted (its 1024-token head), even when rounding leaves the
// head's summed probabilities short of top_p.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backends/common/sampling.hpp"
#include "backends/cuda/device/sample_truncation.cuh"

namespace cu = gptoss::cuda;

TEST_CASE("cuda sampler: the truncation walk takes the host sampler's token", "[cuda][sampling]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  gptoss::backends::SampleScratch scratch;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t V = 100 + rng() % 3000;
    std::normal_distribution<float> logit(0.0f, 1.0f + float(rng() % 4));
    std::vector<float> work(V);
    for (float& l : work) l = rng() % 50 == 0 ? -INFINITY : logit(rng);
    work[rng() % V] = 3.0f;  // at least one finite logit
    gptoss::backends::SampleTruncation p{};
    p.temperature = std::uniform_real_distribution<float>(0.3f, 2.0f)(rng);
    p.top_k = rng() % 2 == 0 ? uint32_t(1 + rng() % std::min<size_t>(V - 1, 1024)) : 0;
    p.top_p = rng() % 2 == 0 ? std::uniform_real_distribution<float>(0.05f, 1.0f)(rng) : 1.0f;
    p.min_p = rng() % 2 == 0 ? std::uniform_real_distribution<float>(0.0f, 0.3f)(rng) : 0.0f;
    if (p.top_k == 0 && p.top_p >= 1.0f && p.min_p <= 0.0f) p.top_k = 40;  // not the keep-all path
    const double uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    INFO("trial " << trial << " V " << V << " T " << p.temperature << " top_k " << p.top_k
                  << " top_p " << p.top_p << " min_p " << p.min_p << " u " << uniform);
    const uint32_t host =
        gptoss::backends::sample_choose(p, uniform, work.data(), V, nullptr, V, 0, scratch);

    // The kernel's candidates: every token by (logit descending, index ascending), cut to
    // top_k, weights over their sum, as sampling.cu computes them.
    std::vector<uint32_t> order(V);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return work[a] > work[b]; });
    const int n = p.top_k > 0 ? int(p.top_k) : int(V);
    const double top = work[order[0]], T = p.temperature;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += std::exp((double(work[order[size_t(i)]]) - top) / T);
    auto prob = [&](int i) {
      REQUIRE(i >= 0);
      REQUIRE(i < n);
      return std::exp((double(work[order[size_t(i)]]) - top) / T) / sum;
    };
    const int chosen = cu::sample_truncate_draw(prob, n, n, p.min_p, p.top_p, uniform);
    CHECK(order[size_t(chosen)] == host);
  }
}

// The case of sampling.cu's top-p over the sorted head: the head's test passed, yet the
// probabilities summed one by one stop short of top_p (rounding). The walk must keep the head
// and never read candidate 1024, which lies past the kernel's shared-memory head.
TEST_CASE("cuda sampler: top-p never walks past the sorted head", "[cuda][sampling]") {
  const int held = 1024, n = 201088;
  const float top_p = 0.9f;
  // Every head candidate just under top_p / 1024: their sum stays below top_p.
  const double each = std::nextafter(double(top_p) / held, 0.0) * (1.0 - 1e-9);
  double sum = 0.0;
  for (int i = 0; i < held; ++i) sum += each;
  REQUIRE(sum < double(top_p));
  int furthest = -1;
  auto prob = [&](int i) {
    furthest = std::max(furthest, i);
    return i < held ? each : 1e-9;
  };
  for (double uniform : {0.0, 0.5, 0.999999}) {
    INFO("uniform " << uniform);
    const int chosen = cu::sample_truncate_draw(prob, n, held, 0.0f, top_p, uniform);
    CHECK(furthest < held);
    CHECK(chosen >= 0);
    CHECK(chosen < held);
    if (uniform > 0.99) CHECK(chosen == held - 1);  // the head is kept whole
  }
  // With min-p too, and with a whole sorted row (held = n), the walk may go on.
  furthest = -1;
  CHECK(cu::sample_truncate_draw(prob, n, held, 0.01f, top_p, 0.999999) < held);
  CHECK(furthest < held);
  const int whole = cu::sample_truncate_draw(prob, n, n, 0.0f, top_p, 1.0 - 1e-12);
  CHECK(whole == held);  // top-p reached one candidate later, where the draw lands
}
