#pragma once
// Hyper-parameters of a gpt-oss checkpoint, from config.json (HF) or GGUF metadata.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gptoss {

struct ModelConfig {
  uint32_t vocab_size = 201088;
  uint32_t hidden_size = 2880;
  uint32_t num_layers = 24;
  uint32_t num_heads = 64;
  uint32_t num_kv_heads = 8;
  uint32_t head_dim = 64;
  uint32_t num_experts = 32;
  uint32_t experts_per_token = 4;
  uint32_t intermediate_size = 2880;
  uint32_t sliding_window = 128;
  uint32_t max_context_length = 131072;
  float rms_norm_eps = 1e-5f;
  float swiglu_limit = 7.0f;
  double rope_theta = 150000.0;
  double rope_scaling_factor = 32.0;
  double rope_original_context = 4096.0;
  double rope_beta_fast = 32.0;
  double rope_beta_slow = 1.0;
  bool rope_truncate = false;
  std::vector<bool> layer_is_sliding;  // [num_layers]; gpt-oss: even layers

  // Throws gptoss::Error(invalid_argument) naming the first absurd or inconsistent value.
  void validate() const;
  // gpt-oss's layer pattern: sliding attention on the even layers if `sliding`, else on none.
  // Throws invalid_argument for a layer count validate() refuses, before allocating for it.
  static std::vector<bool> alternating_layer_types(uint32_t num_layers, bool sliding);
  static ModelConfig from_hf_json(const nlohmann::json& j);
};

}  // namespace gptoss
