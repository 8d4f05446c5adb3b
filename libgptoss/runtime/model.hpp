#pragma once
// A loaded model: config, tokenizer, and every weight uploaded once to the backend devices
// its placement names (one device, layer ranges, or expert shares).
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "gptoss/backend.h"
#include "libgptoss/model/config.hpp"
#include "libgptoss/runtime/device.hpp"
#include "libgptoss/runtime/placement.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss {

class WeightSource;

struct LoadOptions {
  std::string backend = "auto";
  int32_t device = 0;       // the device of SplitMode::none
  uint32_t num_threads = 0;
  uint32_t num_layers = 0;  // 0 = all
  bool use_mmap = true;
  std::string tokenizer_path;
  gptoss_precision precision = gptoss_precision_fast;
  SplitMode split = SplitMode::layer;
};

class Model {
 public:
  static constexpr size_t kNumLayerRoles = 17;  // attn_norm .. mlp2_bias

  static std::shared_ptr<const Model> load(const std::string& path, const LoadOptions& options);
  ~Model();

  const ModelConfig& config() const { return config_; }
  uint32_t num_layers() const { return num_layers_; }  // in use
  const std::shared_ptr<const Tokenizer>& tokenizer() const { return tokenizer_; }
  const std::string& format() const { return format_; }
  uint64_t num_parameters() const { return num_parameters_; }
  // Bytes of weights one decode token reads (see gptoss_model_info::decode_weight_bytes).
  uint64_t decode_weight_bytes() const { return decode_weight_bytes_; }
  const std::string& backend_name() const { return devices_[0]->name(); }
  const gptoss_backend_api& api() const { return devices_[0]->api(); }
  // Every device the model uses declares batch invariance (GPTOSS_DEVICE_BATCH_INVARIANT) at
  // the model's precision: its forward pass then is too, as the core adds nothing that depends
  // on the batch (gptoss_model_info.batch_invariant).
  bool batch_invariant() const { return batch_invariant_; }
  // The devices' kernel variants, distinct ones joined by ","; "" when none is named.
  const std::string& kernels() const { return kernels_; }

  const Placement& placement() const { return placement_; }
  uint32_t num_devices() const { return uint32_t(devices_.size()); }
  const BackendDevice& device(uint32_t d) const { return *devices_[d]; }

  // A layer tensor on the device the placement gives it; expert tensors of a split model
  // through expert_weight.
  gptoss_backend_weight_t layer_weight(uint32_t layer, gptoss_tensor_role role) const {
    return weights_[placement_.layer_device[layer]].layers[layer][slot(role)];
  }
  gptoss_backend_weight_t expert_weight(uint32_t layer, gptoss_tensor_role role, uint32_t d) const {
    return weights_[d].layers[layer][slot(role)];
  }
  gptoss_backend_weight_t embedding() const { return weights_[0].embedding; }
  gptoss_backend_weight_t unembedding() const { return weights_[placement_.output_device()].unembedding; }
  gptoss_backend_weight_t final_norm() const { return weights_[placement_.output_device()].final_norm; }

 private:
  // What one device holds (null where it holds nothing).
  struct DeviceWeights {
    std::vector<std::array<gptoss_backend_weight_t, kNumLayerRoles>> layers;
    gptoss_backend_weight_t embedding = nullptr, unembedding = nullptr, final_norm = nullptr;
  };
  static size_t slot(gptoss_tensor_role role) {
    return size_t(role) - size_t(gptoss_tensor_attn_norm);
  }

  Model() = default;
  void open_devices(const LoadOptions& options);
  void upload(const WeightSource& source);
  // The descs a checkpoint tensor becomes, one per device that holds (a share of) it.
  template <typename Fn>
  void route(const gptoss_tensor_desc& desc, Fn&& fn) const;
  gptoss_backend_weight_t* slot_of(uint32_t d, const gptoss_tensor_desc& desc);
  void check_complete() const;

  ModelConfig config_;
  uint32_t num_layers_ = 0;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::string format_;
  uint64_t num_parameters_ = 0;
  uint64_t decode_weight_bytes_ = 0;
  Placement placement_;
  // Keeps the checkpoint mapped: backends may point into it (GPTOSS_TENSOR_PERSISTENT).
  std::shared_ptr<const WeightSource> source_;
  std::vector<std::shared_ptr<BackendDevice>> devices_;
  std::vector<DeviceWeights> weights_;  // per device
  bool batch_invariant_ = false;
  std::string kernels_;
};

}  // namespace gptoss
