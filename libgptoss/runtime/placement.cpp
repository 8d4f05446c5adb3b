#include "libgptoss/runtime/placement.hpp"

#include <algorithm>

namespace gptoss {

uint32_t Placement::device_of(gptoss_tensor_role role, int32_t layer) const {
  switch (role) {
    case gptoss_tensor_embedding: return 0;
    case gptoss_tensor_unembedding:
    case gptoss_tensor_final_norm: return output_device();
    default: return layer_device[size_t(layer)];
  }
}

Placement plan_placement(SplitMode mode, uint32_t available, uint32_t n_layers,
                         uint32_t n_experts) {
  Placement p;
  p.mode = mode;
  const uint32_t limit = mode == SplitMode::layer ? n_layers : mode == SplitMode::expert ? n_experts : 1;
  p.n_devices = std::max(1u, std::min(available, limit));
  const uint64_t D = p.n_devices;
  p.layer_device.resize(n_layers);
  for (uint32_t l = 0; l < n_layers; ++l)
    p.layer_device[l] = mode == SplitMode::layer ? uint32_t(uint64_t(l) * D / n_layers) : 0;
  if (p.experts_split())
    for (uint64_t d = 0; d <= D; ++d) p.expert_begin.push_back(uint32_t(d * n_experts / D));
  return p;
}

}  // namespace gptoss
