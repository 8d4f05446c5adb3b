// Speculative decoding's guarantee on models nobody picked: checkpoints of random weights that
// gptoss-make-model writes from fresh seeds (the tiny preset: the full vocabulary, 128-position
// sliding window, 2 to 4 layers), several per run, each with an f32 or bf16 KV cache. On each,
// in both precisions, greedy and sampled: drafted decoding with random spoiled drafts gives plain
// decoding's tokens, one rollback crosses position 128 and a page boundary, and afterwards the
// context's logits are bit for bit a fresh context's over the same tokens; the speculator with
// prompt lookup gives plain decoding's tokens.
//
// The seed is printed; GPTOSS_TEST_SEED=<seed> replays a run. GPTOSS_TEST_SPEC_MODELS=N makes
// N models (default 3, 1 in the sanitized build). Each model runs at one CPU kernel level drawn
// from the seed, unless GPTOSS_TEST_SPEC_ISAS lists the levels to run every model at.
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "speculative/spec_support.hpp"
#include "support/generated_model.hpp"
#include "tests/model/model_test_util.hpp"

using namespace gptoss::test;
using namespace gptoss::test::spec;

namespace {

// The sliding window of the generated models (the gpt-oss value).
constexpr size_t kWindow = 128;

// Three models a run; one under the sanitizers, whose runs check memory rather than tokens.
size_t models_per_run() {
  const char* e = std::getenv("GPTOSS_TEST_SPEC_MODELS");
  if (e != nullptr && *e != '\0') return std::max<size_t>(1, std::strtoul(e, nullptr, 10));
  return kSanitized ? 1 : 3;
}

std::vector<uint32_t> random_tokens(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<uint32_t> id(0, 199997);  // below the special tokens
  std::vector<uint32_t> out(n);
  for (auto& t : out) t = id(rng);
  return out;
}

// Processes the pending token of `c` and returns the logits; a fresh context over the same
// tokens must give the same bits.
void require_fresh_logits(gptoss_model_t m, gptoss_context_t c, size_t max_batch,
                          gptoss_kv_dtype kv) {
  GPTOSS_REQUIRE_OK(gptoss_context_process(c));
  const std::vector<uint32_t> tokens = tokens_of(c);
  auto fresh = make_context(m, 1024, max_batch, nullptr, kv);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(fresh.get(), tokens.size(), tokens.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(fresh.get()));
  CHECK(max_abs_diff(logits_of(c), logits_of(fresh.get())) == 0.0);
}

}  // namespace

TEST_CASE("speculative decoding on fresh random models keeps plain decoding's tokens",
          "[speculative]") {
  const uint32_t base = fresh_seed();
  const char* isas_env = std::getenv("GPTOSS_TEST_SPEC_ISAS");
  const bool every_isa = isas_env != nullptr && *isas_env != '\0';
  const size_t n_models = models_per_run();
  for (size_t k = 0; k < n_models; ++k) {
    std::mt19937 rng(base + uint32_t(k) * 0x9e3779b9u);
    const uint64_t model_seed = rng();
    const uint32_t layers = 2 + rng() % 3;
    // Drawn from all six: one above the machine's runs as the best level below it.
    const std::vector<std::string> levels = cpu_levels();
    const std::string drawn_isa = levels[rng() % levels.size()];
    const gptoss_kv_dtype kv = rng() % 2 ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32;
    TempDir dir;
    const std::string path =
        generate_model(dir, "--preset tiny --seed " + std::to_string(model_seed) + " --layers " +
                                std::to_string(layers));
    const std::vector<std::string> isas =
        every_isa ? identity_isas() : std::vector<std::string>{drawn_isa};
    for (const std::string& isa : isas) {
      ScopedCpuLevel scope(isa);
      for (gptoss_precision precision : {gptoss_precision_exact, gptoss_precision_fast}) {
        auto model = load_generated_model(path, precision);
        // A prompt that ends a few tokens short of the window, steps of 8, 15 or 32 tokens:
        // the 40 decoded tokens cross position 128 and two or three pages.
        const size_t prompt_len = kWindow - 28 + rng() % 28;
        const std::vector<uint32_t> prompt = random_tokens(rng, prompt_len);
        const size_t max_batch = std::vector<size_t>{9, 16, 33}[rng() % 3];
        for (float temperature : {0.0f, 1.0f}) {
          const uint64_t sampler_seed = rng();
          INFO("fresh seed " << base << " (GPTOSS_TEST_SEED replays it): model " << k
                             << " (make-model --preset tiny --seed " << model_seed << " --layers "
                             << layers << "), isa " << isa << ", KV "
                             << (kv == gptoss_kv_dtype_bf16 ? "bf16" : "f32") << ", precision "
                             << int(precision) << ", prompt " << prompt_len << " tokens, max_batch "
                             << max_batch << ", temperature " << temperature << ", sampler seed "
                             << sampler_seed);
          const size_t n = 40;
          auto ref_sampler = make_sampler(temperature, sampler_seed, temperature > 0 ? 8 : 0);
          const std::vector<uint32_t> ref =
              plain(model.get(), prompt, n, ref_sampler.get(), max_batch, nullptr, kv);
          auto sampler = make_sampler(temperature, sampler_seed, temperature > 0 ? 8 : 0);
          DraftedRun run;
          run.straddle = kWindow;
          run.kv = kv;
          const std::vector<uint32_t> got =
              drafted(model.get(), prompt, n, sampler.get(), ref, rng, max_batch, &run);
          CHECK(got == ref);
          CHECK(run.rejected > 0);
          CHECK(run.straddle_rollbacks > 0);  // kept at most 128 tokens of a step past it
          CHECK(run.page_rollbacks > 0);
          require_fresh_logits(model.get(), run.context.get(), max_batch, kv);

          // The speculator with prompt lookup, over a prompt that repeats itself.
          std::vector<uint32_t> twice(prompt.begin(), prompt.begin() + 48);
          twice.insert(twice.end(), prompt.begin(), prompt.begin() + 48);
          auto plain_sampler = make_sampler(temperature, sampler_seed, temperature > 0 ? 8 : 0);
          const std::vector<uint32_t> plain_out =
              plain(model.get(), twice, n, plain_sampler.get(), max_batch, nullptr, kv);
          gptoss_speculator_t raw = nullptr;
          GPTOSS_REQUIRE_OK(gptoss_speculator_create(nullptr, &raw));
          SpecPtr spec(raw);
          auto spec_sampler = make_sampler(temperature, sampler_seed, temperature > 0 ? 8 : 0);
          auto c = make_context(model.get(), 1024, max_batch, nullptr, kv);
          GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), twice.size(), twice.data()));
          std::vector<uint32_t> spec_out;
          while (spec_out.size() < n) {
            uint32_t buf[16];
            size_t got_n = 0;
            GPTOSS_REQUIRE_OK(
                gptoss_speculator_step(spec.get(), c.get(), spec_sampler.get(), nullptr, buf,
                                       std::min<size_t>(16, n - spec_out.size()), &got_n));
            REQUIRE(got_n >= 1);
            spec_out.insert(spec_out.end(), buf, buf + got_n);
            GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &buf[got_n - 1]));
          }
          CHECK(spec_out == plain_out);
          gptoss_speculator_stats st;
          st.struct_size = sizeof st;
          GPTOSS_REQUIRE_OK(gptoss_speculator_get_stats(spec.get(), &st));
          CHECK(st.drafted > 0);  // the repeated prompt gives prompt lookup its matches
        }
      }
    }
  }
}
