#pragma once
// The GGUF tokenizer metadata built from a Hugging Face tokenizer.json the way llama.cpp's
// converter does it: one string per id up to the model's vocabulary size, ids the file does
// not list as "[PADn]" (type UNUSED), added special tokens as CONTROL.
#include <cstdint>
#include <string>
#include <vector>

namespace gptoss::make_model {

struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;  // 1 normal, 3 control, 4 user-defined, 5 unused
  std::vector<std::string> merges;   // "left right"
};

// Throws gptoss::Error(io) if the file is missing or malformed, invalid_argument if it lists
// an id at or beyond vocab_size.
GgufVocab read_vocab(const std::string& tokenizer_json, uint32_t vocab_size);

}  // namespace gptoss::make_model
