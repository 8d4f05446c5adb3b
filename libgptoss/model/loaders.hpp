#pragma once
// The format-specific halves of open_checkpoint (weights.cpp picks one by the path).
#include <memory>
#include <string>

#include "libgptoss/model/weights.hpp"

namespace gptoss {

std::unique_ptr<WeightSource> open_hf_checkpoint(const std::string& directory,
                                                 const OpenOptions& options);
std::unique_ptr<WeightSource> open_gguf_checkpoint(const std::string& file,
                                                   const OpenOptions& options);

// tokenizer.json at `path`; gptoss::Error(io) naming the path if it is not a file.
std::shared_ptr<const Tokenizer> load_tokenizer_json(const std::string& path);

}  // namespace gptoss
