#pragma once
// Writes the same synthetic weights as a llama.cpp-style GGUF (v3, architecture gpt-oss): 2-D
// dense tensors (embedding, output, attention projections) in BF16, F16 or Q8_0 (the values
// the HF files hold, rounded to that type: llama.cpp's own releases use Q8_0 there), F32 norms / biases / sinks / router, MXFP4 experts in ggml's block layout
// as separate gate / up / down tensors, the converter's metadata keys, and the tokenizer
// metadata when a tokenizer.json is given.
#include <cstdint>
#include <string>

#include "libgptoss/model/config.hpp"

namespace gptoss::make_model {

struct GgufOptions {
  std::string path;
  uint64_t seed = 0;
  std::string name;            // general.name
  std::string tokenizer_json;  // empty: no tokenizer metadata
  std::string dense_type = "bf16";  // of the 2-D dense tensors: bf16, f16 or q8_0
};

void write_gguf(const ModelConfig& config, const GgufOptions& options);

}  // namespace gptoss::make_model
