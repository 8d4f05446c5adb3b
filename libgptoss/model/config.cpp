#include "libgptoss/model/config.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/json.hpp"

namespace gptoss {
namespace {

// Bounds generous enough for any plausible gpt-oss variant and small enough that products of
// them (vocab * hidden, experts * rows * cols) cannot overflow 64 bits.
constexpr uint64_t kMaxDim = 1u << 16;
constexpr uint64_t kMaxVocab = 1u << 22;
constexpr uint64_t kMaxLayers = 1024;
constexpr uint64_t kMaxExperts = 1024;
constexpr uint64_t kMaxHeads = 1024;
constexpr uint64_t kMaxContext = 1u << 24;

void require_range(const char* name, uint64_t value, uint64_t lo, uint64_t hi) {
  if (value < lo || value > hi)
    fail(gptoss_status_invalid_argument, "model config: {} = {} is outside [{}, {}]", name, value,
         lo, hi);
}

void require_finite_positive(const char* name, double value) {
  if (!std::isfinite(value) || value <= 0)
    fail(gptoss_status_invalid_argument, "model config: {} = {} must be finite and > 0", name,
         value);
}

// Reads an unsigned integer field; a missing field keeps `fallback` unless required.
uint32_t get_uint(const nlohmann::json& j, const char* key, uint32_t fallback, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) fail(gptoss_status_invalid_argument, "config.json: missing \"{}\"", key);
    return fallback;
  }
  if (it->is_number_unsigned()) {
    uint64_t v = it->get<uint64_t>();
    if (v > UINT32_MAX) fail(gptoss_status_invalid_argument, "config.json: \"{}\" = {} is too large", key, v);
    return static_cast<uint32_t>(v);
  }
  if (it->is_number_float()) {
    double v = it->get<double>();
    if (std::isfinite(v) && v >= 0 && v <= UINT32_MAX && v == std::floor(v))
      return static_cast<uint32_t>(v);
  }
  fail(gptoss_status_invalid_argument, "config.json: \"{}\" must be a non-negative integer, got {}",
       key, json_excerpt(*it));
}

double get_number(const nlohmann::json& j, const char* key, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number())
    fail(gptoss_status_invalid_argument, "config.json: \"{}\" must be a number, got {}", key,
         json_excerpt(*it));
  return it->get<double>();
}

bool get_bool(const nlohmann::json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    fail(gptoss_status_invalid_argument, "config.json: \"{}\" must be true or false", key);
  return it->get<bool>();
}

std::vector<bool> parse_layer_types(const nlohmann::json& j, uint32_t num_layers) {
  std::vector<bool> sliding;
  auto it = j.find("layer_types");
  if (it == j.end() || it->is_null()) {
    // The HF GptOssConfig default: sliding attention on even layers.
    return ModelConfig::alternating_layer_types(num_layers, true);
  }
  if (!it->is_array())
    fail(gptoss_status_invalid_argument, "config.json: \"layer_types\" must be an array");
  for (const auto& t : *it) {
    if (t == "sliding_attention") {
      sliding.push_back(true);
    } else if (t == "full_attention") {
      sliding.push_back(false);
    } else {
      fail(gptoss_status_invalid_argument,
           "config.json: layer_types entry {} is neither \"sliding_attention\" nor "
           "\"full_attention\"",
           json_excerpt(t));
    }
  }
  return sliding;
}

}  // namespace

std::vector<bool> ModelConfig::alternating_layer_types(uint32_t num_layers, bool sliding) {
  // A layer count of 4 billion from a file would otherwise cost 512 MB and seconds here (and
  // 2^32 - 1 looped forever in the GGUF loader) before validate() refused it.
  require_range("num_layers", num_layers, 1, kMaxLayers);
  std::vector<bool> types(num_layers, false);
  for (uint32_t l = 0; sliding && l < num_layers; l += 2) types[l] = true;
  return types;
}

void ModelConfig::validate() const {
  require_range("num_layers", num_layers, 1, kMaxLayers);
  require_range("hidden_size", hidden_size, 32, kMaxDim);
  require_range("intermediate_size", intermediate_size, 32, kMaxDim);
  // MXFP4 blocks of 32 run along the input dimension of both expert matrices.
  if (hidden_size % 32 != 0)
    fail(gptoss_status_invalid_argument, "model config: hidden_size = {} is not a multiple of 32",
         hidden_size);
  if (intermediate_size % 32 != 0)
    fail(gptoss_status_invalid_argument,
         "model config: intermediate_size = {} is not a multiple of 32", intermediate_size);
  require_range("vocab_size", vocab_size, 1, kMaxVocab);
  require_range("num_heads", num_heads, 1, kMaxHeads);
  require_range("num_kv_heads", num_kv_heads, 1, num_heads);
  if (num_heads % num_kv_heads != 0)
    fail(gptoss_status_invalid_argument,
         "model config: num_heads = {} is not a multiple of num_kv_heads = {}", num_heads,
         num_kv_heads);
  require_range("head_dim", head_dim, 2, 1024);
  if (head_dim % 2 != 0)
    fail(gptoss_status_invalid_argument, "model config: head_dim = {} must be even for RoPE",
         head_dim);
  if (uint64_t{num_heads} * head_dim > kMaxDim)
    fail(gptoss_status_invalid_argument, "model config: num_heads * head_dim = {} is too large",
         uint64_t{num_heads} * head_dim);
  require_range("num_experts", num_experts, 1, kMaxExperts);
  require_range("experts_per_token", experts_per_token, 1, num_experts);
  require_range("max_context_length", max_context_length, 1, kMaxContext);
  require_range("sliding_window", sliding_window, 0, kMaxContext);
  if (!std::isfinite(rms_norm_eps) || rms_norm_eps <= 0 || rms_norm_eps >= 1)
    fail(gptoss_status_invalid_argument, "model config: rms_norm_eps = {} must be in (0, 1)",
         rms_norm_eps);
  require_finite_positive("swiglu_limit", swiglu_limit);
  require_finite_positive("rope_theta", rope_theta);
  require_finite_positive("rope_original_context", rope_original_context);
  require_finite_positive("rope_beta_fast", rope_beta_fast);
  require_finite_positive("rope_beta_slow", rope_beta_slow);
  if (!std::isfinite(rope_scaling_factor) || rope_scaling_factor < 1)
    fail(gptoss_status_invalid_argument, "model config: rope_scaling_factor = {} must be >= 1",
         rope_scaling_factor);
  if (layer_is_sliding.size() != num_layers)
    fail(gptoss_status_invalid_argument, "model config: {} layer types for {} layers",
         layer_is_sliding.size(), num_layers);
  for (uint32_t i = 0; i < num_layers; ++i)
    if (layer_is_sliding[i] && sliding_window == 0)
      fail(gptoss_status_invalid_argument,
           "model config: layer {} uses sliding attention but sliding_window is 0", i);
}

ModelConfig ModelConfig::from_hf_json(const nlohmann::json& j) {
  if (!j.is_object())
    fail(gptoss_status_invalid_argument, "config.json: the top level is not a JSON object");
  if (auto mt = j.find("model_type"); mt != j.end() && *mt != "gpt_oss")
    fail(gptoss_status_unsupported_argument,
         "config.json: model_type {} is not a gpt-oss model (\"gpt_oss\")", json_excerpt(*mt));
  if (auto q = j.find("quantization_config"); q != j.end() && q->is_object()) {
    auto m = q->find("quant_method");
    if (m != q->end() && *m != "mxfp4")
      fail(gptoss_status_unsupported_argument,
           "config.json: quant_method {} is not supported (only the original mxfp4)",
           json_excerpt(*m));
  }

  ModelConfig c;
  c.vocab_size = get_uint(j, "vocab_size", 0, true);
  c.hidden_size = get_uint(j, "hidden_size", 0, true);
  c.num_layers = get_uint(j, "num_hidden_layers", 0, true);
  c.num_heads = get_uint(j, "num_attention_heads", 0, true);
  c.num_kv_heads = get_uint(j, "num_key_value_heads", c.num_heads, false);
  c.head_dim = get_uint(j, "head_dim", c.num_heads ? c.hidden_size / c.num_heads : 0, false);
  c.num_experts = get_uint(j, "num_local_experts", 0, true);
  c.experts_per_token =
      get_uint(j, "num_experts_per_tok", get_uint(j, "experts_per_token", 4, false), false);
  c.intermediate_size = get_uint(j, "intermediate_size", 0, true);
  c.sliding_window = get_uint(j, "sliding_window", 0, false);
  c.max_context_length = get_uint(j, "max_position_embeddings", 131072, false);
  c.rms_norm_eps = static_cast<float>(get_number(j, "rms_norm_eps", 1e-5));
  c.swiglu_limit = static_cast<float>(get_number(j, "swiglu_limit", 7.0));
  c.rope_theta = get_number(j, "rope_theta", 150000.0);

  c.rope_scaling_factor = 1.0;
  c.rope_original_context = get_number(j, "initial_context_length", 4096.0);
  c.rope_truncate = false;
  if (auto rs = j.find("rope_scaling"); rs != j.end() && !rs->is_null()) {
    if (!rs->is_object())
      fail(gptoss_status_invalid_argument, "config.json: \"rope_scaling\" must be an object");
    if (auto type = rs->find("rope_type"); type != rs->end() && *type != "yarn")
      fail(gptoss_status_unsupported_argument,
           "config.json: rope_scaling.rope_type {} is not supported (only \"yarn\")",
           json_excerpt(*type));
    c.rope_scaling_factor = get_number(*rs, "factor", 1.0);
    c.rope_beta_fast = get_number(*rs, "beta_fast", 32.0);
    c.rope_beta_slow = get_number(*rs, "beta_slow", 1.0);
    c.rope_original_context =
        get_number(*rs, "original_max_position_embeddings", c.rope_original_context);
    c.rope_truncate = get_bool(*rs, "truncate", false);
  }
  c.layer_is_sliding = parse_layer_types(j, c.num_layers);
  c.validate();
  return c;
}

}  // namespace gptoss
