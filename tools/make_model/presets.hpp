#pragma once
// Model shapes the generator knows: the real gpt-oss-20b/120b shapes, two small ones with the
// same ratios (head_dim 64, GQA 8:1, 32 experts, top-4, the full 201088-token vocabulary), and
// "wide" (the batch-invariance tests' shape: K of 576 past the CPU kernels' tile chunks), and
// "micro", the smallest valid checkpoint (fuzz seeds; no tokenizer fits its vocabulary).
#include <cstdint>
#include <string>

#include "libgptoss/model/config.hpp"

namespace gptoss::make_model {

struct Preset {
  std::string name;
  ModelConfig config;
  bool sharded;  // HF checkpoint split into shards with an index, as published
};

// Throws gptoss::Error(invalid_argument) for an unknown name. num_layers > 0 overrides.
Preset preset(const std::string& name, uint32_t num_layers);

}  // namespace gptoss::make_model
