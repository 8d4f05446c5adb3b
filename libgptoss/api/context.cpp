// C API: contexts and sampling.
#include <vector>

#include "libgptoss/api/handles.hpp"

using namespace gptoss;

namespace {
gptoss_context_options default_context_options() {
  gptoss_context_options o{};
  o.struct_size = sizeof(o);
  o.context_length = 0;
  o.kvcache = nullptr;
  o.kv_dtype = gptoss_kv_dtype_f32;
  o.max_batch_tokens = 512;
  return o;
}

Context& ctx_of(gptoss_context_t c) {
  api::require(c, "context");
  return *c->ctx;
}

// Capacity protocol shared by every "copy out an array" function.
template <typename T>
void copy_out(const T* src, size_t n, T* out, size_t capacity, size_t* n_out, const char* what) {
  api::require(n_out, "n_out");
  *n_out = n;
  if (capacity < n)
    fail(gptoss_status_buffer_too_small, "{} needs room for {} elements, capacity is {}", what, n,
         capacity);
  if (n > 0) {
    api::require(out, "output buffer");
    std::copy(src, src + n, out);
  }
}
}  // namespace

extern "C" {

GPTOSS_API enum gptoss_status gptoss_context_options_init_sized(struct gptoss_context_options* options, size_t size) {
  return api::guard([&] { api::init_struct(options, size, default_context_options(), "options"); });
}

GPTOSS_API enum gptoss_status(gptoss_context_options_init)(struct gptoss_context_options* options) {
  return gptoss_context_options_init_sized(options, api::kPlainInitSize<gptoss_context_options>);
}

GPTOSS_API enum gptoss_status gptoss_context_create_with_options(
    gptoss_model_t model, const struct gptoss_context_options* options,
    gptoss_context_t* context_out) {
  return api::guard([&] {
    api::require(model, "model");
    api::require(context_out, "context_out");
    const gptoss_context_options o =
        api::read_struct(options, default_context_options(), "options");
    const auto& m = model->model;
    const size_t max_ctx = m->config().max_context_length;
    const size_t length = o.context_length ? o.context_length : max_ctx;
    if (length > max_ctx)
      fail(gptoss_status_invalid_argument, "context_length {} exceeds the model's maximum {}",
           length, max_ctx);
    if (o.max_batch_tokens == 0 || o.max_batch_tokens > 65536)
      fail(gptoss_status_invalid_argument, "max_batch_tokens {} out of range (1..65536)",
           o.max_batch_tokens);
    std::shared_ptr<KvPool> pool;
    if (o.kvcache != nullptr) {
      pool = o.kvcache->pool;
      if (&pool->model() != m.get())
        fail(gptoss_status_invalid_argument, "the KV cache belongs to another model");
    } else {
      pool = std::make_shared<KvPool>(m, length, 1, o.max_batch_tokens, o.kv_dtype);
    }
    auto h = std::make_unique<gptoss_context>();
    h->ctx = std::make_unique<Context>(m, pool, length, o.max_batch_tokens);
    *context_out = h.release();
  });
}

GPTOSS_API enum gptoss_status gptoss_context_create(gptoss_model_t model, size_t context_length,
                                                    gptoss_context_t* context_out) {
  gptoss_context_options o = default_context_options();
  o.context_length = context_length;
  return gptoss_context_create_with_options(model, &o, context_out);
}

GPTOSS_API enum gptoss_status gptoss_context_retain(gptoss_context_t c) { return api::retain(c); }
GPTOSS_API enum gptoss_status gptoss_context_release(gptoss_context_t c) { return api::release(c); }

GPTOSS_API enum gptoss_status gptoss_context_append_tokens(gptoss_context_t context,
                                                           size_t n_tokens,
                                                           const uint32_t* tokens) {
  return api::guard([&] {
    Context& c = ctx_of(context);
    if (n_tokens > 0) api::require(tokens, "tokens");
    c.append(std::span<const uint32_t>(tokens, n_tokens));
  });
}

GPTOSS_API enum gptoss_status gptoss_context_append_chars(gptoss_context_t context,
                                                          const char* text, size_t text_size,
                                                          size_t* n_tokens_out) {
  return api::guard([&] {
    Context& c = ctx_of(context);
    if (text_size > 0) api::require(text, "text");
    const auto& tok = c.model().tokenizer();
    if (!tok) fail(gptoss_status_invalid_state, "model has no tokenizer");
    const auto ids = tok->encode_with_specials(std::string_view(text ? text : "", text_size));
    c.append(ids);
    if (n_tokens_out) *n_tokens_out = ids.size();
  });
}

GPTOSS_API enum gptoss_status gptoss_context_process(gptoss_context_t context) {
  return api::guard([&] { ctx_of(context).process(); });
}

GPTOSS_API enum gptoss_status gptoss_contexts_process(gptoss_context_t* contexts,
                                                      size_t n_contexts) {
  return api::guard([&] {
    if (n_contexts == 0) return;
    api::require(contexts, "contexts");
    std::vector<Context*> list;
    for (size_t i = 0; i < n_contexts; ++i) list.push_back(&ctx_of(contexts[i]));
    Context::process_all(list);
  });
}

GPTOSS_API enum gptoss_status gptoss_context_get_logits(gptoss_context_t context, float* out,
                                                        size_t capacity, size_t* n_out) {
  return api::guard([&] {
    Context& c = ctx_of(context);
    if (!c.has_logits())
      fail(gptoss_status_invalid_state,
           "no logits: process the context after appending tokens (it has {} tokens, {} "
           "processed)",
           c.tokens().size(), c.num_processed());
    const std::vector<float>& logits = c.host_logits();
    copy_out(logits.data(), logits.size(), out, capacity, n_out, "logits");
  });
}

GPTOSS_API enum gptoss_status gptoss_context_get_num_tokens(gptoss_context_t context, size_t* n_out) {
  return api::guard([&] {
    api::require(n_out, "n_out");
    *n_out = ctx_of(context).tokens().size();
  });
}

GPTOSS_API enum gptoss_status gptoss_context_get_num_processed_tokens(gptoss_context_t context,
                                                                      size_t* n_out) {
  return api::guard([&] {
    api::require(n_out, "n_out");
    *n_out = ctx_of(context).num_processed();
  });
}

GPTOSS_API enum gptoss_status gptoss_context_get_tokens(gptoss_context_t context,
                                                        uint32_t* tokens_out, size_t capacity,
                                                        size_t* n_out) {
  return api::guard([&] {
    const auto& t = ctx_of(context).tokens();
    copy_out(t.data(), t.size(), tokens_out, capacity, n_out, "tokens");
  });
}

GPTOSS_API enum gptoss_status gptoss_context_get_max_tokens(gptoss_context_t context, size_t* n_out) {
  return api::guard([&] {
    api::require(n_out, "n_out");
    *n_out = ctx_of(context).max_tokens();
  });
}

GPTOSS_API enum gptoss_status gptoss_context_reset(gptoss_context_t context) {
  return api::guard([&] { ctx_of(context).reset(); });
}

GPTOSS_API enum gptoss_status gptoss_context_truncate(gptoss_context_t context, size_t n_tokens) {
  return api::guard([&] { ctx_of(context).truncate(n_tokens); });
}

GPTOSS_API enum gptoss_status gptoss_context_set_checkpoint(gptoss_context_t context,
                                                            size_t position) {
  return api::guard([&] { ctx_of(context).set_checkpoint(position); });
}

GPTOSS_API enum gptoss_status gptoss_context_sample(gptoss_context_t context,
                                                    gptoss_sampler_t sampler,
                                                    uint32_t* token_out) {
  return api::guard([&] {
    Context& c = ctx_of(context);
    api::require(sampler, "sampler");
    api::require(token_out, "token_out");
    gptoss_constraint* constraint = sampler->constraint;
    if (constraint == nullptr) {
      *token_out = c.sample(sampler->sampler);
      return;
    }
    // Mask in, token out: the sampler sees only tokens the grammar allows, and the sampled
    // token advances the grammar.
    if (constraint->constraint->finished())
      fail(gptoss_status_invalid_state, "the sampler's constraint is finished: nothing more may be generated");
    constraint->constraint->fill_mask(constraint->mask);
    const uint32_t token = c.sample(
        sampler->sampler, std::span<const uint32_t>(constraint->mask.words(), constraint->mask.num_words()));
    constraint->constraint->accept(token);
    *token_out = token;
  });
}

}  // extern "C"
