#pragma once
// Which of a model's devices holds what. Split by layer: consecutive layer ranges, one per
// device, each with its layers' KV cache; the embedding on the first device and the output
// (final norm, unembedding) on the device of the last layer. Split by expert: embedding,
// attention, router and output on device 0, and every layer's experts shared out in
// consecutive ranges. One device: everything on it.
#include <cstdint>
#include <vector>

#include "gptoss/backend.h"

namespace gptoss {

enum class SplitMode { layer, none, expert };

struct Placement {
  SplitMode mode = SplitMode::none;
  uint32_t n_devices = 1;
  std::vector<uint32_t> layer_device;   // per layer: where its attention runs (and its MoE,
                                        // unless the experts are split)
  std::vector<uint32_t> expert_begin;   // experts_split() only: n_devices + 1 bounds, device
                                        // d holds experts [expert_begin[d], expert_begin[d+1])

  bool experts_split() const { return mode == SplitMode::expert && n_devices > 1; }
  uint32_t output_device() const { return layer_device.empty() ? 0 : layer_device.back(); }
  // The device of a non-expert tensor (embedding on 0, output tensors on output_device()).
  uint32_t device_of(gptoss_tensor_role role, int32_t layer) const;
  static bool is_expert_role(gptoss_tensor_role role) {
    return role == gptoss_tensor_mlp1 || role == gptoss_tensor_mlp1_bias ||
           role == gptoss_tensor_mlp2 || role == gptoss_tensor_mlp2_bias;
  }
};

// Uses at most `available` devices: no more than there are layers (layer split) or experts
// (expert split), so that every device holds something.
Placement plan_placement(SplitMode mode, uint32_t available, uint32_t n_layers,
                         uint32_t n_experts);

}  // namespace gptoss
