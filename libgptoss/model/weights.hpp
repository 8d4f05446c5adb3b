#pragma once
// A gpt-oss checkpoint opened for loading: its config, its tokenizer, and its tensors in the
// canonical form of include/gptoss/backend.h (struct gptoss_tensor_desc), whatever the file
// format. Files are memory-mapped (or read, if use_mmap is false) and every offset and shape
// is validated before a tensor is handed out.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gptoss/backend.h"
#include "libgptoss/model/config.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss {

struct OpenOptions {
  bool use_mmap = true;
  std::string tokenizer_path;  // override; empty = beside the model / in GGUF metadata
  bool load_tokenizer = true;
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual const ModelConfig& config() const = 0;
  virtual const char* format() const = 0;  // "safetensors" | "gguf"
  // The tokenizer (null only if OpenOptions::load_tokenizer was false).
  virtual std::shared_ptr<const Tokenizer> tokenizer() const = 0;
  // Calls `fn` once per canonical tensor of the first `num_layers` layers plus the global
  // ones, one at a time. A tensor without GPTOSS_TENSOR_PERSISTENT (converted from another
  // layout) lives only during its call. Throws gptoss::Error on any inconsistency.
  virtual void for_each_tensor(uint32_t num_layers,
                               const std::function<void(const gptoss_tensor_desc&)>& fn) const = 0;
  // The descs for_each_tensor will hand out, in the same order, with their sizes but no data:
  // what the backends are told before the upload begins (gptoss_backend_api::weights_begin).
  virtual std::vector<gptoss_tensor_desc> tensor_shapes(uint32_t num_layers) const = 0;
};

// `path`: an HF directory or a .gguf file. Throws gptoss::Error(io | invalid_argument |
// unsupported_argument) with a message that names the file and the problem.
std::unique_ptr<WeightSource> open_checkpoint(const std::string& path, const OpenOptions& options);

}  // namespace gptoss
