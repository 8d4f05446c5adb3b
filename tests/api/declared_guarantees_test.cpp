// gptoss_model_info.batch_invariant and .kernels come from the backend (the device_properties
// slot): what the CPU plugin declares per kernel level, nothing from a backend without the slot,
// and a declared guarantee that holds: a sequence's logits bit for bit the same alone and whole
// as chunked and batched with others.
#include <algorithm>
#include <optional>
#include <string>

#include "support/c_api.hpp"
#include "support/cpu_levels.hpp"

using namespace gptoss::test;

namespace {

gptoss_model_info info_of(gptoss_model_t m) {
  gptoss_model_info info{};
  info.struct_size = sizeof info;
  GPTOSS_REQUIRE_OK(gptoss_model_get_info(m, &info));
  return info;
}

// The last logits of p3_long (300 tokens, past the 128-token window twice) processed whole and
// alone, and in chunks of 7 in one shared pool with two other prompts in every step.
std::pair<std::vector<float>, std::vector<float>> alone_and_batched(gptoss_model_t model) {
  const auto ids = prompt_ids("p3_long");
  auto alone = make_context(model, 400);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(alone.get(), ids.size(), ids.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(alone.get()));

  const KvPtr kv = make_pool(model, 2048, 3);
  auto chunked = make_context(model, 400, 7, kv.get());
  auto other1 = make_context(model, 400, 64, kv.get());
  auto other2 = make_context(model, 400, 512, kv.get());
  const auto short_ids = prompt_ids("p1_short"), harmony_ids = prompt_ids("p2_harmony");
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(chunked.get(), ids.size(), ids.data()));
  GPTOSS_REQUIRE_OK(
      gptoss_context_append_tokens(other1.get(), harmony_ids.size(), harmony_ids.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(other2.get(), short_ids.size(), short_ids.data()));
  gptoss_context_t batch[] = {other1.get(), chunked.get(), other2.get()};
  GPTOSS_REQUIRE_OK(gptoss_contexts_process(batch, 3));
  return {logits_of(alone.get()), logits_of(chunked.get())};
}

}  // namespace

// (At each level this machine runs: one it lacks would run, and declare, a level below it.)
TEST_CASE("every CPU kernel level declares batch invariance in both precisions",
          "[api][determinism][fixed-device]") {
  for (const std::string& isa : cpu_levels_here()) {
    ScopedCpuLevel level(isa);
    for (gptoss_precision precision : {gptoss_precision_exact, gptoss_precision_fast}) {
      auto model = load_conformance_model(Format::hf, 2, precision, "cpu");
      const gptoss_model_info info = info_of(model.get());
      INFO("GPTOSS_CPU_ISA=" << isa << " runs " << info.kernels);
      CHECK(info.kernels == isa);
      CHECK(info.batch_invariant == 1);
    }
  }
}

TEST_CASE("the CPU backend names the kernel level it selected",
          "[api][determinism][fixed-device]") {
  auto model = load_conformance_model(Format::hf, 1, gptoss_precision_fast, "cpu");
  const std::vector<std::string> here = cpu_levels_here();
  CHECK(std::count(here.begin(), here.end(), info_of(model.get()).kernels) == 1);
}

TEST_CASE("a backend without device_properties declares no guarantee",
          "[api][determinism][fixed-device]") {
  auto model = load_conformance_model(Format::hf, 1, gptoss_precision_exact, "strict-minimal");
  const gptoss_model_info info = info_of(model.get());
  CHECK(info.batch_invariant == 0);
  REQUIRE(info.kernels != nullptr);
  CHECK(std::string(info.kernels).empty());
}

// At the level this machine selects and at scalar: the declaration must be borne out.
TEST_CASE("a declared batch invariance holds: whole and alone equals chunked and batched",
          "[api][determinism][fixed-device]") {
  for (const char* isa : {"", "scalar"}) {
    std::optional<ScopedCpuLevel> level;
    if (*isa != '\0') level.emplace(isa);
    for (gptoss_precision precision : {gptoss_precision_exact, gptoss_precision_fast}) {
      auto model = load_conformance_model(Format::hf, 0, precision, "cpu");
      const gptoss_model_info info = info_of(model.get());
      INFO("kernels " << info.kernels << ", precision " << int(precision));
      REQUIRE(info.batch_invariant == 1);
      const auto [alone, batched] = alone_and_batched(model.get());
      CHECK(max_abs_diff(alone, batched) == 0.0);
    }
  }
}
