// C API: speculative decoding (verification of drafted tokens, the speculator loop).
#include <vector>

#include "libgptoss/api/handles.hpp"
#include "libgptoss/speculative/speculator.hpp"

using namespace gptoss;

struct gptoss_speculator : gptoss::api::RefCounted {
  explicit gptoss_speculator(speculative::SpeculatorOptions o) : speculator(std::move(o)) {}
  speculative::Speculator speculator;
  std::vector<speculative::TokenLogprobs> logprobs;  // of the last step's tokens
};

namespace {
gptoss_draft_options default_draft_options() {
  gptoss_draft_options o{};
  o.struct_size = sizeof(o);
  return o;
}

gptoss_speculator_options default_speculator_options() {
  const speculative::SpeculatorOptions d;
  gptoss_speculator_options o{};
  o.struct_size = sizeof(o);
  o.prompt_lookup = d.prompt_lookup ? 1 : 0;
  o.jump_forward = d.jump_forward ? 1 : 0;
  o.draft_model = nullptr;
  o.max_draft = uint32_t(d.max_draft);
  o.cost_bound = d.cost_bound ? 1 : 0;
  return o;
}

std::span<const uint32_t> stop_tokens_of(const gptoss_draft_options* options) {
  const gptoss_draft_options o = api::read_struct(options, default_draft_options(), "options");
  if (o.n_stop_tokens > 0) api::require(o.stop_tokens, "options->stop_tokens");
  return std::span<const uint32_t>(o.stop_tokens, o.n_stop_tokens);
}

void write_out(const speculative::VerifyResult& r, uint32_t* tokens_out, size_t* n_tokens_out) {
  std::copy(r.tokens.begin(), r.tokens.end(), tokens_out);
  *n_tokens_out = r.tokens.size();
}

struct SamplerParts {
  constrain::Constraint* constraint = nullptr;
  constrain::TokenMask* mask = nullptr;
};
SamplerParts parts_of(gptoss_sampler_t sampler) {
  SamplerParts p;
  if (sampler->constraint != nullptr) {
    p.constraint = sampler->constraint->constraint.get();
    p.mask = &sampler->constraint->mask;
  }
  return p;
}

// What a drafting or verifying call needs whatever its outputs.
void require_step_handles(gptoss_speculator_t speculator, gptoss_context_t context,
                          gptoss_sampler_t sampler) {
  api::require(speculator, "speculator");
  api::require(context, "context");
  api::require(sampler, "sampler");
}

// Verifies the pending draft, keeps the tokens' log-probabilities for
// gptoss_speculator_get_logprobs and writes the tokens out.
void verify_into(gptoss_speculator_t speculator, gptoss_context_t context, gptoss_sampler_t sampler,
                 std::span<const uint32_t> stop, uint32_t* tokens_out, size_t* n_tokens_out) {
  const SamplerParts p = parts_of(sampler);
  speculator->logprobs.clear();
  auto r = speculator->speculator.verify(*context->ctx, sampler->sampler, p.constraint, p.mask,
                                         stop, true);
  speculator->logprobs = std::move(r.logprobs);
  write_out(r, tokens_out, n_tokens_out);
}
}  // namespace

extern "C" {

GPTOSS_API enum gptoss_status gptoss_draft_options_init_sized(struct gptoss_draft_options* options,
                                                              size_t size) {
  return api::guard([&] { api::init_struct(options, size, default_draft_options(), "options"); });
}

GPTOSS_API enum gptoss_status(gptoss_draft_options_init)(struct gptoss_draft_options* options) {
  return gptoss_draft_options_init_sized(options, api::kPlainInitSize<gptoss_draft_options>);
}

GPTOSS_API enum gptoss_status gptoss_context_sample_draft(
    gptoss_context_t context, gptoss_sampler_t sampler, const uint32_t* draft, size_t n_draft,
    const struct gptoss_draft_options* options, uint32_t* tokens_out, size_t capacity,
    size_t* n_tokens_out) {
  return api::guard([&] {
    api::require(context, "context");
    api::require(sampler, "sampler");
    api::require(n_tokens_out, "n_tokens_out");
    if (n_draft > 0) api::require(draft, "draft");
    const std::span<const uint32_t> stop = stop_tokens_of(options);
    if (capacity < n_draft + 1) {
      *n_tokens_out = n_draft + 1;
      fail(gptoss_status_buffer_too_small,
           "a draft of {} tokens can give {} tokens back; capacity is {}", n_draft, n_draft + 1,
           capacity);
    }
    api::require(tokens_out, "tokens_out");
    const SamplerParts p = parts_of(sampler);
    const auto r = speculative::verify(*context->ctx, sampler->sampler, p.constraint, p.mask,
                                       std::span<const uint32_t>(draft, n_draft), stop);
    write_out(r, tokens_out, n_tokens_out);
  });
}

GPTOSS_API enum gptoss_status gptoss_speculator_options_init_sized(
    struct gptoss_speculator_options* options, size_t size) {
  return api::guard(
      [&] { api::init_struct(options, size, default_speculator_options(), "options"); });
}

GPTOSS_API enum gptoss_status(gptoss_speculator_options_init)(
    struct gptoss_speculator_options* options) {
  return gptoss_speculator_options_init_sized(options,
                                              api::kPlainInitSize<gptoss_speculator_options>);
}

GPTOSS_API enum gptoss_status gptoss_speculator_create(
    const struct gptoss_speculator_options* options, gptoss_speculator_t* speculator_out) {
  return api::guard([&] {
    api::require(speculator_out, "speculator_out");
    const gptoss_speculator_options o =
        api::read_struct(options, default_speculator_options(), "options");
    speculative::SpeculatorOptions so;
    so.prompt_lookup = o.prompt_lookup != 0;
    so.jump_forward = o.jump_forward != 0;
    if (o.draft_model != nullptr) so.draft_model = o.draft_model->model;
    so.max_draft = o.max_draft;
    so.cost_bound = o.cost_bound != 0;
    if (so.max_draft > 65535)
      fail(gptoss_status_invalid_argument, "options->max_draft {} out of range (0..65535)",
           o.max_draft);
    *speculator_out = new gptoss_speculator(std::move(so));
  });
}

GPTOSS_API enum gptoss_status gptoss_speculator_retain(gptoss_speculator_t s) {
  return api::retain(s);
}
GPTOSS_API enum gptoss_status gptoss_speculator_release(gptoss_speculator_t s) {
  return api::release(s);
}

GPTOSS_API enum gptoss_status gptoss_speculator_reset(gptoss_speculator_t speculator) {
  return api::guard([&] {
    api::require(speculator, "speculator");
    speculator->speculator.reset();
  });
}

GPTOSS_API enum gptoss_status gptoss_speculator_step(gptoss_speculator_t speculator,
                                                     gptoss_context_t context,
                                                     gptoss_sampler_t sampler,
                                                     const struct gptoss_draft_options* options,
                                                     uint32_t* tokens_out, size_t capacity,
                                                     size_t* n_tokens_out) {
  return api::guard([&] {
    require_step_handles(speculator, context, sampler);
    api::require(n_tokens_out, "n_tokens_out");
    if (capacity == 0) fail(gptoss_status_invalid_argument, "capacity must be at least 1");
    api::require(tokens_out, "tokens_out");
    const std::span<const uint32_t> stop = stop_tokens_of(options);
    speculator->speculator.draft(*context->ctx, parts_of(sampler).constraint, stop, capacity);
    verify_into(speculator, context, sampler, stop, tokens_out, n_tokens_out);
  });
}

GPTOSS_API enum gptoss_status gptoss_speculator_draft(gptoss_speculator_t speculator,
                                                      gptoss_context_t context,
                                                      gptoss_sampler_t sampler,
                                                      const struct gptoss_draft_options* options,
                                                      size_t capacity, size_t* n_draft_out) {
  return api::guard([&] {
    require_step_handles(speculator, context, sampler);
    api::require(n_draft_out, "n_draft_out");
    if (capacity == 0) fail(gptoss_status_invalid_argument, "capacity must be at least 1");
    const std::span<const uint32_t> stop = stop_tokens_of(options);
    const SamplerParts p = parts_of(sampler);
    *n_draft_out = speculator->speculator.draft(*context->ctx, p.constraint, stop, capacity);
  });
}

GPTOSS_API enum gptoss_status gptoss_speculator_verify(gptoss_speculator_t speculator,
                                                       gptoss_context_t context,
                                                       gptoss_sampler_t sampler,
                                                       const struct gptoss_draft_options* options,
                                                       uint32_t* tokens_out, size_t capacity,
                                                       size_t* n_tokens_out) {
  return api::guard([&] {
    require_step_handles(speculator, context, sampler);
    api::require(n_tokens_out, "n_tokens_out");
    api::require(tokens_out, "tokens_out");
    const std::span<const uint32_t> stop = stop_tokens_of(options);
    const size_t need = speculator->speculator.pending_tokens();
    if (need > 0 && capacity < need) {
      *n_tokens_out = need;
      fail(gptoss_status_buffer_too_small,
           "the pending draft can give {} tokens back; capacity is {}", need, capacity);
    }
    verify_into(speculator, context, sampler, stop, tokens_out, n_tokens_out);
  });
}

GPTOSS_API enum gptoss_status gptoss_speculator_abandon_draft(gptoss_speculator_t speculator,
                                                              gptoss_context_t context) {
  return api::guard([&] {
    api::require(speculator, "speculator");
    api::require(context, "context");
    speculator->speculator.abandon(*context->ctx);
  });
}

GPTOSS_API enum gptoss_status gptoss_speculator_get_logprobs(
    gptoss_speculator_t speculator, size_t index, struct gptoss_token_logprob* chosen,
    struct gptoss_token_logprob* alternatives, size_t capacity, size_t* n_out) {
  return api::guard([&] {
    api::require(speculator, "speculator");
    const auto& all = speculator->logprobs;
    if (index >= all.size())
      fail(gptoss_status_invalid_argument, "token {} of a step that gave {}", index, all.size());
    const speculative::TokenLogprobs& t = all[index];
    if (n_out) *n_out = t.top.size();
    if (capacity < t.top.size() && alternatives != nullptr)
      fail(gptoss_status_buffer_too_small, "{} alternatives, capacity {}", t.top.size(), capacity);
    if (chosen) *chosen = {t.chosen.token, t.chosen.logprob};
    if (alternatives)
      for (size_t i = 0; i < t.top.size(); ++i)
        alternatives[i] = {t.top[i].token, t.top[i].logprob};
  });
}

GPTOSS_API enum gptoss_status gptoss_speculator_get_stats(gptoss_speculator_t speculator,
                                                          struct gptoss_speculator_stats* stats) {
  return api::guard([&] {
    api::require(speculator, "speculator");
    const speculative::SpeculatorStats s = speculator->speculator.stats();
    gptoss_speculator_stats v{};
    v.struct_size = sizeof v;
    v.steps = s.steps;
    v.drafted = s.drafted;
    v.accepted = s.accepted;
    v.forced = s.forced;
    v.draft_length = uint32_t(s.draft_length);
    api::write_struct(stats, v, "stats");
  });
}

}  // extern "C"
