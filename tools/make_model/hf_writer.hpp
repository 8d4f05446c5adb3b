#pragma once
// Writes a synthetic checkpoint in the Hugging Face layout of openai/gpt-oss-*: config.json,
// model.safetensors (or shards + model.safetensors.index.json) with bf16 dense tensors and
// MXFP4 experts as *_blocks / *_scales, and tokenizer.json if one is given.
#include <cstdint>
#include <string>

#include "libgptoss/model/config.hpp"

namespace gptoss::make_model {

struct HfOptions {
  std::string directory;
  uint64_t seed = 0;
  uint64_t shard_bytes = 0;     // 0: one model.safetensors
  std::string tokenizer_json;   // copied beside config.json if non-empty
};

void write_hf(const ModelConfig& config, const HfOptions& options);

}  // namespace gptoss::make_model
