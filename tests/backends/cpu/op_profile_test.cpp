// GPTOSS_CPU_PROFILE's report: time per op kind and, for the weight-streaming ops, the weight
// bytes they read per second; and the byte counts those ops are charged.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "op_profile.hpp"

using namespace gptoss::cpu;
using gptoss::cpu::test::random_weight;

TEST_CASE("op profile: time shares and weight bandwidth per op kind", "[cpu-ops]") {
  ::setenv("GPTOSS_CPU_PROFILE", "1", 1);
  OpProfile p;
  ::unsetenv("GPTOSS_CPU_PROFILE");
  REQUIRE(p.enabled());
  CHECK(p.report().empty());
  using std::chrono::milliseconds;
  p.add(OpKind::linear, milliseconds(2));
  p.add(OpKind::linear, milliseconds(2));
  p.add_bytes(OpKind::linear, 100'000'000);
  p.add_bytes(OpKind::linear, 100'000'000);
  p.add(OpKind::rmsnorm, milliseconds(1));
  // 200 MB in 4 ms: 50 GB/s; rmsnorm reads no weights worth counting and shows no rate.
  CHECK(p.report() == "linear 4.0 ms / 2 calls (80.0%, 50.0 GB/s), rmsnorm 1.0 ms / 1 calls (20.0%)");

  ::setenv("GPTOSS_CPU_PROFILE", "0", 1);
  CHECK_FALSE(OpProfile().enabled());
  ::unsetenv("GPTOSS_CPU_PROFILE");
  CHECK_FALSE(OpProfile().enabled());
}

TEST_CASE("op profile: bytes of dense rows and of the routed experts", "[cpu-ops]") {
  const Weight dense = random_weight(gptoss_dtype_bf16, 7, 64, 1);
  CHECK(weight_rows_bytes(dense, 7) == 7 * 64 * 2);
  const Weight q = random_weight(gptoss_dtype_mxfp4, 5, 64, 2);
  CHECK(weight_rows_bytes(q, 5) == 5 * (32 + 2));  // codes and one scale per 32

  // 4 experts: mlp1 [4, 6, 64], mlp2 [4, 3, 96] in MXFP4.
  const Weight mlp1 = random_weight(gptoss_dtype_mxfp4, 24, 64, 3, 4);
  const Weight mlp2 = random_weight(gptoss_dtype_mxfp4, 12, 96, 4, 4);
  const uint64_t expert = 6 * (32 + 2) + 3 * (48 + 3);
  const std::vector<int32_t> ids = {2, 0, 2, 2, 0, 3};  // 3 tokens x top 2: experts 0, 2, 3
  CHECK(routed_expert_bytes(ids.data(), ids.size(), mlp1, mlp2) == 3 * expert);
  CHECK(routed_expert_bytes(ids.data(), 2, mlp1, mlp2) == 2 * expert);
  const std::vector<int32_t> bad = {1, -1, 4, 1};  // out of range: counted as nothing
  CHECK(routed_expert_bytes(bad.data(), bad.size(), mlp1, mlp2) == expert);
  CHECK(routed_expert_bytes(nullptr, 0, mlp1, mlp2) == 0);
}
