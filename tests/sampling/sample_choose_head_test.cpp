// The shared token choice (backends/common/sampling.hpp) on its top-p path over the sorted head:
// when the head's mass passes the test against top_p x the row's but the probabilities summed
// one by one stop a few ulps short of top_p (rounding), the walk must keep the head and never
// take a candidate past it, where `order` is unsorted.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "backends/common/sampling.hpp"

namespace {

// 1024 tokens at logit 0 (the head, weight 1 each), then kTail tokens a hair below it. The
// constants were found by a search over (tail size, top_p, tail logit) for a row whose head
// sum passes the head test exactly and whose walk falls short; the test checks both below.
constexpr size_t kHead = 1024, kTail = 110;
constexpr float kTopP = 0x1.ce55ccp-1f;         // 0.902998328
constexpr float kTailLogit = -0x1.199132p-20f;  // -1.04891944e-06

}  // namespace

TEST_CASE("top-p never walks past the sorted head when rounding leaves it short", "[sampling]") {
  const size_t V = kHead + kTail;
  std::vector<float> work(V, 0.0f);
  for (size_t i = kHead; i < V; ++i) work[i] = kTailLogit;

  // The precondition, in sample_choose's own arithmetic (T = 1, top = 0, sums in rank order;
  // the tail's weights are equal, so its order does not matter).
  double head_mass = 0.0, all_mass = 0.0;
  for (size_t i = 0; i < V; ++i) {
    const double e = std::exp(double(work[i]) - 0.0);
    all_mass += e;
    if (i < kHead) head_mass += e;
  }
  REQUIRE(head_mass >= double(kTopP) * all_mass);  // the head passes its test...
  double walked = 0.0;
  for (size_t i = 0; i < kHead; ++i) walked += std::exp(double(work[i])) / all_mass;
  REQUIRE(walked < double(kTopP));  // ...yet its summed probabilities stop short of top_p

  gptoss::backends::SampleTruncation p{};
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = kTopP;
  p.min_p = 0.0f;
  gptoss::backends::SampleScratch scratch;
  for (double uniform : {0.0, 0.5, 0.9999, 1.0 - 1e-12}) {
    INFO("uniform " << uniform);
    const uint32_t chosen =
        gptoss::backends::sample_choose(p, uniform, work.data(), V, nullptr, V, 0, scratch);
    CHECK(chosen < kHead);
  }
}
