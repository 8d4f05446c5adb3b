#pragma once
// Reads what the tokenizer needs from a Hugging Face tokenizer.json: the BPE vocabulary (ids of
// byte-level strings), the pre-tokenizer's split regex and the added tokens. Uses nlohmann's SAX
// parser, skipping the 446k merges without building a document (the file is 27 MB).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gptoss::tokenizer {

struct JsonVocab {
  std::vector<std::pair<std::string, uint32_t>> vocab;          // byte-level string, id
  std::string split_pattern;                                    // "" if the file has none
  std::vector<std::pair<std::string, uint32_t>> added_tokens;  // content, id
};

// Throws gptoss::Error(io) if the file cannot be read, is not JSON, or lacks a BPE vocabulary.
JsonVocab read_json_vocab(const std::string& path);

}  // namespace gptoss::tokenizer
