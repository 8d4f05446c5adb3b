// The speculator's draft policy (DraftLength and DraftCost, libgptoss/speculative) against
// simulated hardware: a step verifying k drafted tokens costs 1 + u k plain steps, for u from a
// GPU's almost nothing to a whole plain step, its measured duration off by up to 10 %, and a
// drafter that is never right or always right. The policy sees only the measured durations; the
// tests count the true cost. The seed is printed; GPTOSS_TEST_SEED=<seed> replays a run.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <random>

#include "libgptoss/speculative/speculator.hpp"

namespace {

using gptoss::speculative::DraftCost;
using gptoss::speculative::DraftLength;

uint32_t policy_seed() {
  static const uint32_t seed = [] {
    const char* e = std::getenv("GPTOSS_TEST_SEED");
    const uint32_t s =
        e ? uint32_t(std::strtoul(e, nullptr, 10)) : uint32_t(std::random_device{}());
    std::cout << "draft_policy_test: seed " << s << " (GPTOSS_TEST_SEED=" << s << " replays it)\n";
    return s;
  }();
  return seed;
}

// One sequence decoded by the policy as Speculator::draft/verify run it. The first step also
// processes the prompt (its duration does not compare with a decode step's).
struct Simulation {
  double u;            // a drafted token's true cost, in plain steps
  double plain;        // a plain step's true duration, seconds
  double noise;        // a measured duration is off by up to this share
  bool drafter_right;  // every drafted token is kept, or none
  size_t max_draft = 8;

  DraftLength length{8};
  DraftCost cost;
  std::mt19937 rng;
  size_t tokens = 0, steps = 0, drafted = 0, last_asked = 0;
  double lost = 0;  // true plain steps lost to drafting (negative: saved)

  Simulation(double u_, double plain_, double noise_, bool right, uint32_t seed)
      : u(u_), plain(plain_), noise(noise_), drafter_right(right), length(max_draft), rng(seed) {}

  void step() {
    const bool decode = steps > 0;
    const size_t asked = std::min(length.next(), cost.affordable(decode));
    const size_t kept = drafter_right ? asked : 0;
    const double true_steps = 1.0 + u * double(asked);
    std::uniform_real_distribution<double> off(1.0 - noise, 1.0 + noise);
    const double prompt = decode ? 0.0 : 40.0 * plain;
    length.update(asked, kept);
    cost.record(asked, kept + 1, prompt + true_steps * plain * off(rng), decode);
    lost += true_steps - double(kept + 1);
    tokens += kept + 1;
    drafted += asked;
    last_asked = asked;
    ++steps;
  }
};

}  // namespace

TEST_CASE("failed drafts cost at most 3 % of plain decoding from the 64th token on",
          "[speculative][policy]") {
  std::mt19937 rng(policy_seed());
  for (const double u : {0.0, 0.02, 0.1, 0.3, 0.5, 0.8, 1.0}) {
    for (const double noise : {0.0, 0.1}) {
      const double plain = std::uniform_real_distribution<double>(0.005, 2.0)(rng);
      Simulation sim(u, plain, noise, false, uint32_t(rng()));
      double worst = 0;  // lost / max(tokens, 64), the highest seen
      while (sim.tokens < 4000) {
        sim.step();
        worst = std::max(worst, sim.lost / double(std::max<size_t>(sim.tokens, DraftCost::kGrace)));
      }
      INFO("u " << u << ", noise " << noise << ", plain step " << plain << " s: " << sim.drafted
                << " drafted tokens in " << sim.tokens << ", worst share " << worst);
      // The budget is 2.5 %; the measurements' noise may take the true cost above it, not
      // above the 3 % promised.
      CHECK(worst <= (noise == 0 ? DraftCost::kMaxShare : 0.03));
      CHECK(sim.drafted > 0);  // it still probes
      // Past the first probes the pauses between them bound the cost lower: a probe in 65
      // steps at most.
      CHECK(sim.lost / double(sim.tokens) <= u / 64 + 0.002);
    }
  }
}

TEST_CASE("kept drafts let the draft length grow to its maximum", "[speculative][policy]") {
  std::mt19937 rng(policy_seed() + 1);
  for (const double u : {0.0, 0.1, 0.3, 0.6}) {
    const double plain = std::uniform_real_distribution<double>(0.005, 2.0)(rng);
    Simulation sim(u, plain, 0.1, true, uint32_t(rng()));
    size_t steps_to_max = 0;
    while (sim.tokens < 400) {
      sim.step();
      if (sim.last_asked == sim.max_draft && steps_to_max == 0) steps_to_max = sim.steps;
    }
    INFO("u " << u << ": the maximum draft after " << steps_to_max << " steps; " << sim.steps
              << " steps for " << sim.tokens << " tokens, " << sim.lost << " plain steps lost");
    CHECK(steps_to_max > 0);
    CHECK(steps_to_max <= 40);
    CHECK(sim.steps * 4 < sim.tokens);  // 9 tokens a step once at the maximum
    CHECK(sim.lost < -0.4 * double(sim.tokens) * (1.0 - u));
  }
}

TEST_CASE("the draft cost: nothing before a plain step was measured, then what the budget allows",
          "[speculative][policy]") {
  DraftCost cost;
  // A step that processes the prompt: drafts ride along at the guessed cost of a whole step
  // each, within kMaxShare of kGrace tokens.
  CHECK(cost.affordable(false) == size_t(DraftCost::kMaxShare * DraftCost::kGrace));
  CHECK(cost.affordable(true) == 0);  // a decode step first measures a plain one
  cost.record(0, 1, 0.1, true);
  CHECK(cost.affordable(true) == 1);  // 1.6 plain steps allowed, 1 each
  // A drafted token that took half a plain step and was not kept.
  cost.record(1, 1, 0.15, true);
  // Counted at 0.5 x 1.25: 1.6 - 0.625 left, for tokens of 0.625 each.
  CHECK(cost.affordable(true) == 1);
  // Three tokens kept of three: 1 + 1.5 steps for 4 tokens, 1.5 saved.
  cost.record(3, 4, 0.25, true);
  CHECK(cost.affordable(true) > 2);
  // A step too slow to compare (another process) counts a token as at most two plain steps.
  DraftCost slow;
  slow.record(0, 1, 0.1, true);
  slow.record(1, 1, 10.0, true);
  CHECK(slow.affordable(true) == 0);
  // reset() forgets everything.
  slow.reset();
  CHECK(slow.affordable(true) == 0);
  CHECK(slow.affordable(false) == size_t(DraftCost::kMaxShare * DraftCost::kGrace));
}
