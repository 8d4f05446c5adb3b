// C API: models and KV pools.
#include "libgptoss/api/handles.hpp"

using namespace gptoss;

namespace {
gptoss_model_options default_model_options() {
  gptoss_model_options o{};
  o.struct_size = sizeof(o);
  o.backend = "auto";
  o.device = 0;
  o.num_threads = 0;
  o.num_layers = 0;
  o.use_mmap = 1;
  o.tokenizer_path = nullptr;
  o.precision = gptoss_precision_fast;
  o.split_mode = gptoss_split_mode_layer;
  return o;
}

gptoss_kvcache_options default_kvcache_options() {
  gptoss_kvcache_options o{};
  o.struct_size = sizeof(o);
  o.capacity_tokens = 0;  // required: create rejects 0
  o.max_sequences = 8;
  o.dtype = gptoss_kv_dtype_f32;
  return o;
}
}  // namespace

extern "C" {

GPTOSS_API enum gptoss_status gptoss_model_options_init_sized(struct gptoss_model_options* options, size_t size) {
  return api::guard([&] { api::init_struct(options, size, default_model_options(), "options"); });
}

GPTOSS_API enum gptoss_status(gptoss_model_options_init)(struct gptoss_model_options* options) {
  return gptoss_model_options_init_sized(options, api::kPlainInitSize<gptoss_model_options>);
}

GPTOSS_API enum gptoss_status gptoss_model_create_with_options(
    const char* path, const struct gptoss_model_options* options, gptoss_model_t* model_out) {
  return api::guard([&] {
    api::require(path, "path");
    api::require(model_out, "model_out");
    const gptoss_model_options o = api::read_struct(options, default_model_options(), "options");
    if (o.use_mmap != 0 && o.use_mmap != 1)
      fail(gptoss_status_invalid_argument, "options->use_mmap must be 0 or 1, not {}", o.use_mmap);
    if (o.precision != gptoss_precision_fast && o.precision != gptoss_precision_exact)
      fail(gptoss_status_invalid_argument, "options->precision must be gptoss_precision_fast (0) or "
           "gptoss_precision_exact (1), not {}", int(o.precision));
    if (o.device < 0) fail(gptoss_status_invalid_argument, "options->device must be >= 0");
    if (o.split_mode != gptoss_split_mode_layer && o.split_mode != gptoss_split_mode_none &&
        o.split_mode != gptoss_split_mode_expert)
      fail(gptoss_status_invalid_argument, "options->split_mode must be gptoss_split_mode_layer "
           "(0), _none (1) or _expert (2), not {}", int(o.split_mode));
    if (o.num_threads > 4096)
      fail(gptoss_status_invalid_argument, "options->num_threads {} is absurd", o.num_threads);
    LoadOptions lo;
    lo.backend = o.backend ? o.backend : "auto";
    lo.device = o.device;
    lo.num_threads = o.num_threads;
    lo.num_layers = o.num_layers;
    lo.use_mmap = o.use_mmap != 0;
    if (o.tokenizer_path) lo.tokenizer_path = o.tokenizer_path;
    lo.precision = o.precision;
    lo.split = o.split_mode == gptoss_split_mode_none     ? SplitMode::none
               : o.split_mode == gptoss_split_mode_expert ? SplitMode::expert
                                                          : SplitMode::layer;
    auto handle = std::make_unique<gptoss_model>();
    handle->model = Model::load(path, lo);
    *model_out = handle.release();
  });
}

GPTOSS_API enum gptoss_status gptoss_model_create_from_file(const char* path,
                                                            gptoss_model_t* model_out) {
  return gptoss_model_create_with_options(path, nullptr, model_out);
}

GPTOSS_API enum gptoss_status gptoss_model_retain(gptoss_model_t model) { return api::retain(model); }
GPTOSS_API enum gptoss_status gptoss_model_release(gptoss_model_t model) { return api::release(model); }

GPTOSS_API enum gptoss_status gptoss_model_get_tokenizer(gptoss_model_t model,
                                                         gptoss_tokenizer_t* tokenizer_out) {
  return api::guard([&] {
    api::require(model, "model");
    api::require(tokenizer_out, "tokenizer_out");
    if (!model->model->tokenizer()) fail(gptoss_status_invalid_state, "model has no tokenizer");
    *tokenizer_out = new gptoss_tokenizer(model->model->tokenizer());
  });
}

GPTOSS_API enum gptoss_status gptoss_model_get_max_context_length(gptoss_model_t model,
                                                                  size_t* n_out) {
  return api::guard([&] {
    api::require(model, "model");
    api::require(n_out, "n_out");
    *n_out = model->model->config().max_context_length;
  });
}

GPTOSS_API enum gptoss_status gptoss_model_get_info(gptoss_model_t model,
                                                    struct gptoss_model_info* info) {
  return api::guard([&] {
    api::require(model, "model");
    const Model& m = *model->model;
    const ModelConfig& c = m.config();
    gptoss_model_info out{};
    out.vocab_size = c.vocab_size;
    out.num_layers = m.num_layers();
    out.num_layers_total = c.num_layers;
    out.hidden_size = c.hidden_size;
    out.num_heads = c.num_heads;
    out.num_kv_heads = c.num_kv_heads;
    out.head_dim = c.head_dim;
    out.num_experts = c.num_experts;
    out.num_active_experts = c.experts_per_token;
    out.intermediate_size = c.intermediate_size;
    out.sliding_window = c.sliding_window;
    out.max_context_length = c.max_context_length;
    out.num_parameters = m.num_parameters();
    out.backend = m.backend_name().c_str();
    out.format = m.format().c_str();
    out.decode_weight_bytes = size_t(m.decode_weight_bytes());
    out.batch_invariant = m.batch_invariant() ? 1 : 0;
    out.kernels = m.kernels().c_str();
    api::write_struct(info, out, "info");
  });
}

GPTOSS_API enum gptoss_status gptoss_model_get_kv_bytes_per_token(gptoss_model_t model,
                                                                  enum gptoss_kv_dtype dtype,
                                                                  size_t* bytes_out) {
  return api::guard([&] {
    api::require(model, "model");
    api::require(bytes_out, "bytes_out");
    if (dtype != gptoss_kv_dtype_f32 && dtype != gptoss_kv_dtype_bf16)
      fail(gptoss_status_invalid_argument, "unknown KV dtype {}", int(dtype));
    *bytes_out = KvPool::bytes_per_token(model->model->config(), model->model->num_layers(), dtype);
  });
}

GPTOSS_API enum gptoss_status gptoss_kvcache_options_init_sized(struct gptoss_kvcache_options* options, size_t size) {
  return api::guard([&] { api::init_struct(options, size, default_kvcache_options(), "options"); });
}

GPTOSS_API enum gptoss_status(gptoss_kvcache_options_init)(struct gptoss_kvcache_options* options) {
  return gptoss_kvcache_options_init_sized(options, api::kPlainInitSize<gptoss_kvcache_options>);
}

GPTOSS_API enum gptoss_status gptoss_kvcache_create(gptoss_model_t model,
                                                    const struct gptoss_kvcache_options* options,
                                                    gptoss_kvcache_t* kvcache_out) {
  return api::guard([&] {
    api::require(model, "model");
    api::require(kvcache_out, "kvcache_out");
    api::require(options, "options (capacity_tokens is required)");
    const gptoss_kvcache_options o =
        api::read_struct(options, default_kvcache_options(), "options");
    auto h = std::make_unique<gptoss_kvcache>();
    h->pool = std::make_shared<KvPool>(model->model, o.capacity_tokens, o.max_sequences, 512,
                                       o.dtype);
    *kvcache_out = h.release();
  });
}

GPTOSS_API enum gptoss_status gptoss_kvcache_retain(gptoss_kvcache_t kv) { return api::retain(kv); }
GPTOSS_API enum gptoss_status gptoss_kvcache_release(gptoss_kvcache_t kv) { return api::release(kv); }

GPTOSS_API enum gptoss_status gptoss_kvcache_get_free_tokens(gptoss_kvcache_t kv, size_t* n_out) {
  return api::guard([&] {
    api::require(kv, "kvcache");
    api::require(n_out, "n_out");
    *n_out = kv->pool->free_pages(PageGroup::full) * KvPool::kPageSize;
  });
}

}  // extern "C"
