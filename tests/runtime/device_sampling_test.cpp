// Sampling on the device (gptoss_backend_api::sample) against the host sampler: the same
// tokens for the same seed, the same log-probabilities, and an allowed-token mask honoured.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "libgptoss/common/error.hpp"
#include "libgptoss/runtime/context.hpp"
#include "libgptoss/sampling/sampler.hpp"
#include "support/c_api.hpp"

using namespace gptoss::test;

namespace {

struct Params {
  float temperature;
  uint32_t top_k;
  float top_p, min_p;
  uint32_t top_logprobs;
};
const Params kParams[] = {
    {0.0f, 0, 1.0f, 0.0f, 3},    {1.0f, 0, 1.0f, 0.0f, 5},   {0.8f, 40, 1.0f, 0.0f, 0},
    {1.0f, 0, 0.9f, 0.0f, 2},    {1.3f, 0, 1.0f, 0.05f, 1},  {0.7f, 64, 0.95f, 0.02f, 20},
    {2.0f, 1, 1.0f, 0.0f, 0},
};

gptoss::SamplerParams params_of(const Params& p, uint64_t seed) {
  gptoss::SamplerParams s;
  s.temperature = p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  s.min_p = p.min_p;
  s.top_logprobs = p.top_logprobs;
  s.seed = seed;
  return s;
}

std::shared_ptr<const gptoss::Model> load(const std::string& backend) {
  gptoss::LoadOptions o;
  o.backend = backend;
  o.precision = gptoss_precision_exact;
  o.tokenizer_path = tokenizer_json();
  return gptoss::Model::load(logits_dir() + "/model-hf", o);
}

}  // namespace

// On the CPU backend: each token sampled on the device equals what the host sampler takes
// from the same logits with the same RNG state (the host sampler is fed the logits the
// context keeps on the device), and the reported log-probabilities agree.
TEST_CASE("device sampling takes the host sampler's tokens and log-probabilities", "[sampling]") {
  auto model = load("cpu");
  const auto prompt = prompt_ids("p2_harmony");
  for (const Params& p : kParams)
    for (uint64_t seed : {1u, 99u}) {
      INFO("temperature " << p.temperature << " top_k " << p.top_k << " top_p " << p.top_p
                          << " min_p " << p.min_p << " seed " << seed);
      auto pool = std::make_shared<gptoss::KvPool>(model, 256, 1, 512, gptoss_kv_dtype_f32);
      gptoss::Context ctx(model, pool, 256, 512);
      REQUIRE(ctx.samples_on_device(gptoss::Sampler(params_of(p, seed))));
      ctx.append(prompt);
      gptoss::Sampler device(params_of(p, seed)), host(params_of(p, seed));
      for (int step = 0; step < 10; ++step) {
        const uint32_t t = ctx.sample(device);
        const uint32_t h = host.sample(ctx.host_logits(), ctx.tokens());
        REQUIRE(t == h);
        CHECK(device.last_chosen().logprob == Approx(host.last_chosen().logprob).margin(1e-5));
        const auto& da = device.last_alternatives();
        const auto& ha = host.last_alternatives();
        REQUIRE(da.size() == ha.size());
        for (size_t i = 0; i < da.size(); ++i) {
          CHECK(da[i].token == ha[i].token);
          CHECK(da[i].logprob == Approx(ha[i].logprob).margin(1e-5));
        }
        ctx.append(std::vector<uint32_t>{t});
      }
    }
}

// Through the C API: strict (device sampling) and strict-minimal (no sample slot: the host
// samples) generate the same text for the same seed.
TEST_CASE("device and host sampling generate the same tokens through the C API", "[strict][sampling]") {
  const auto prompt = prompt_ids("p1_short");
  for (const Params& p : kParams) {
    std::vector<uint32_t> out[2];
    int i = 0;
    for (const char* backend : {"strict", "strict-minimal"}) {
      gptoss_model_options o;
      gptoss_model_options_init(&o);
      o.backend = backend;
      o.precision = gptoss_precision_exact;
      const std::string tok = tokenizer_json();
      o.tokenizer_path = tok.c_str();
      gptoss_model_t m = nullptr;
      GPTOSS_REQUIRE_OK(gptoss_model_create_with_options((logits_dir() + "/model-hf").c_str(), &o, &m));
      ModelPtr model(m);
      gptoss_sampler_options so;
      gptoss_sampler_options_init(&so);
      so.temperature = p.temperature;
      so.top_k = p.top_k;
      so.top_p = p.top_p;
      so.min_p = p.min_p;
      so.seed = 1234;
      gptoss_sampler_t s = nullptr;
      GPTOSS_REQUIRE_OK(gptoss_sampler_create(&so, &s));
      SamplerPtr sampler(s);
      auto c = make_context(model.get(), 64);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
      for (int step = 0; step < 12; ++step) {
        uint32_t t = 0;
        GPTOSS_REQUIRE_OK(gptoss_context_sample(c.get(), sampler.get(), &t));
        GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &t));
        out[i].push_back(t);
      }
      ++i;
    }
    INFO("temperature " << p.temperature << " top_k " << p.top_k);
    CHECK(out[0] == out[1]);
  }
}

// A mask allowing a few scattered tokens: every sample is one of them, the device and the
// host (masked logits) agree, and a mask allowing nothing is an error.
TEST_CASE("an allowed-token mask restricts device and host sampling alike", "[sampling]") {
  auto model = load("cpu");
  const size_t V = model->config().vocab_size, words = (V + 31) / 32;
  const std::vector<uint32_t> allowed = {7, 500, 31999, 32000, 123456, 201087};
  std::vector<uint32_t> mask(words, 0);
  for (uint32_t t : allowed) mask[t / 32] |= 1u << (t % 32);
  const auto prompt = prompt_ids("p1_short");
  for (const Params& p : kParams) {
    INFO("temperature " << p.temperature << " top_k " << p.top_k << " top_p " << p.top_p);
    auto pool = std::make_shared<gptoss::KvPool>(model, 64, 1, 512, gptoss_kv_dtype_f32);
    gptoss::Context ctx(model, pool, 64, 512);
    ctx.append(prompt);
    gptoss::Sampler device(params_of(p, 5)), host(params_of(p, 5));
    for (int step = 0; step < 6; ++step) {
      const uint32_t t = ctx.sample(device, mask);
      std::vector<float> masked = ctx.host_logits();
      for (size_t i = 0; i < V; ++i)
        if (!((mask[i / 32] >> (i % 32)) & 1u)) masked[i] = -INFINITY;
      CHECK(t == host.sample(masked, ctx.tokens()));
      CHECK(std::find(allowed.begin(), allowed.end(), t) != allowed.end());
      CHECK(device.last_alternatives().size() <= allowed.size());
      ctx.append(std::vector<uint32_t>{t});
    }
    std::vector<uint32_t> none(words, 0);
    CHECK_THROWS_AS(ctx.sample(device, none), gptoss::Error);
    CHECK_THROWS_AS(ctx.sample(device, std::vector<uint32_t>(3, ~0u)), gptoss::Error);
  }
}
