// C API: samplers.
#include "libgptoss/api/handles.hpp"

using namespace gptoss;

namespace {
gptoss_sampler_options default_sampler_options() {
  SamplerParams d;
  gptoss_sampler_options o{};
  o.struct_size = sizeof(o);
  o.temperature = d.temperature;
  o.top_k = d.top_k;
  o.top_p = d.top_p;
  o.min_p = d.min_p;
  o.repetition_penalty = d.repetition_penalty;
  o.presence_penalty = d.presence_penalty;
  o.frequency_penalty = d.frequency_penalty;
  o.penalty_window = d.penalty_window;
  o.seed = d.seed;
  o.top_logprobs = d.top_logprobs;
  return o;
}
}  // namespace

extern "C" {

GPTOSS_API enum gptoss_status gptoss_sampler_options_init_sized(struct gptoss_sampler_options* options, size_t size) {
  return api::guard([&] { api::init_struct(options, size, default_sampler_options(), "options"); });
}

GPTOSS_API enum gptoss_status(gptoss_sampler_options_init)(struct gptoss_sampler_options* options) {
  return gptoss_sampler_options_init_sized(options, api::kPlainInitSize<gptoss_sampler_options>);
}

GPTOSS_API enum gptoss_status gptoss_sampler_create(const struct gptoss_sampler_options* options,
                                                    gptoss_sampler_t* sampler_out) {
  return api::guard([&] {
    api::require(sampler_out, "sampler_out");
    const gptoss_sampler_options o =
        api::read_struct(options, default_sampler_options(), "options");
    SamplerParams p;
    p.temperature = o.temperature;
    p.top_k = o.top_k;
    p.top_p = o.top_p;
    p.min_p = o.min_p;
    p.repetition_penalty = o.repetition_penalty;
    p.presence_penalty = o.presence_penalty;
    p.frequency_penalty = o.frequency_penalty;
    p.penalty_window = o.penalty_window;
    p.seed = o.seed;
    p.top_logprobs = o.top_logprobs;
    *sampler_out = new gptoss_sampler(p);
  });
}

GPTOSS_API enum gptoss_status gptoss_sampler_retain(gptoss_sampler_t s) { return api::retain(s); }
GPTOSS_API enum gptoss_status gptoss_sampler_release(gptoss_sampler_t s) { return api::release(s); }

GPTOSS_API enum gptoss_status gptoss_sampler_reseed(gptoss_sampler_t sampler, uint64_t seed) {
  return api::guard([&] {
    api::require(sampler, "sampler");
    sampler->sampler.reseed(seed);
  });
}

GPTOSS_API enum gptoss_status gptoss_sampler_get_last_logprobs(
    gptoss_sampler_t sampler, struct gptoss_token_logprob* chosen,
    struct gptoss_token_logprob* alternatives, size_t capacity, size_t* n_out) {
  return api::guard([&] {
    api::require(sampler, "sampler");
    const Sampler& s = sampler->sampler;
    if (!s.has_last()) fail(gptoss_status_invalid_state, "nothing sampled yet");
    const auto& alt = s.last_alternatives();
    if (n_out) *n_out = alt.size();
    if (capacity < alt.size() && alternatives != nullptr)
      fail(gptoss_status_buffer_too_small, "{} alternatives, capacity {}", alt.size(), capacity);
    if (chosen) *chosen = {s.last_chosen().token, s.last_chosen().logprob};
    if (alternatives)
      for (size_t i = 0; i < alt.size(); ++i) alternatives[i] = {alt[i].token, alt[i].logprob};
  });
}

}  // extern "C"
