#pragma once
#include <functional>
// The canonical tensor set of a gpt-oss model (include/gptoss/backend.h), derived from its
// config alone: what every loader must deliver, in load order, with the exact shapes.
#include <cstdint>
#include <string>
#include <vector>

#include "gptoss/backend.h"
#include "libgptoss/model/config.hpp"

namespace gptoss {

struct TensorSpec {
  gptoss_tensor_role role;
  int32_t layer;               // -1 for the global tensors
  std::string name;            // canonical name: "embedding", "layers.3.mlp1", ...
  std::vector<int64_t> shape;  // logical element shape, outermost first
  bool mxfp4;                  // expert matrices (mlp1, mlp2); all others are dense
};

// Embedding, then every tensor of layers [0, num_layers), then the final norm and the
// unembedding.
std::vector<TensorSpec> canonical_tensors(const ModelConfig& config, uint32_t num_layers);

// "[2, 3]" for messages.
std::string shape_string(const std::vector<int64_t>& shape);

// A desc for `spec` with the given dtype/data (scales empty); the caller fills data fields.
gptoss_tensor_desc make_desc(const TensorSpec& spec, gptoss_dtype dtype);
// make_desc with data_size and scales_size of the canonical layout set, data NULL: what a
// loader will hand out for the spec, known before any byte is read.
gptoss_tensor_desc make_shape_desc(const TensorSpec& spec, gptoss_dtype dtype);

// Calls visit(i) for every spec of the global tensors and of the first `num_layers` layers,
// in order; invalid_argument when num_layers exceeds the model's `model_layers`. The one loop
// every checkpoint format's for_each_tensor runs.
void for_each_spec(const std::vector<TensorSpec>& specs, uint32_t num_layers,
                   uint32_t model_layers, const std::function<void(size_t)>& visit);

// The tensor's name in a Hugging Face gpt-oss checkpoint. For MXFP4 matrices it is the stem:
// the file holds STEM_blocks and STEM_scales.
std::string hf_tensor_name(const TensorSpec& spec);

}  // namespace gptoss
