#include "libgptoss/model/canonical.hpp"

#include <fmt/core.h>

#include <fmt/format.h>

#include "libgptoss/common/error.hpp"

namespace gptoss {

std::vector<TensorSpec> canonical_tensors(const ModelConfig& c, uint32_t num_layers) {
  if (num_layers > c.num_layers)
    fail(gptoss_status_invalid_argument, "{} layers requested, the model has {}", num_layers,
         c.num_layers);
  const int64_t V = c.vocab_size, H = c.hidden_size, E = c.num_experts,
                I = c.intermediate_size, Q = int64_t{c.num_heads} * c.head_dim,
                KV = int64_t{c.num_kv_heads} * c.head_dim;
  std::vector<TensorSpec> t;
  t.push_back({gptoss_tensor_embedding, -1, "embedding", {V, H}, false});
  for (uint32_t l = 0; l < num_layers; ++l) {
    const int32_t L = static_cast<int32_t>(l);
    auto add = [&](gptoss_tensor_role role, const char* what, std::vector<int64_t> shape,
                   bool mxfp4 = false) {
      t.push_back({role, L, fmt::format("layers.{}.{}", l, what), std::move(shape), mxfp4});
    };
    add(gptoss_tensor_attn_norm, "attn_norm", {H});
    add(gptoss_tensor_attn_q, "attn_q", {Q, H});
    add(gptoss_tensor_attn_q_bias, "attn_q_bias", {Q});
    add(gptoss_tensor_attn_k, "attn_k", {KV, H});
    add(gptoss_tensor_attn_k_bias, "attn_k_bias", {KV});
    add(gptoss_tensor_attn_v, "attn_v", {KV, H});
    add(gptoss_tensor_attn_v_bias, "attn_v_bias", {KV});
    add(gptoss_tensor_attn_out, "attn_out", {H, Q});
    add(gptoss_tensor_attn_out_bias, "attn_out_bias", {H});
    add(gptoss_tensor_attn_sinks, "attn_sinks", {int64_t{c.num_heads}});
    add(gptoss_tensor_mlp_norm, "mlp_norm", {H});
    add(gptoss_tensor_router, "router", {E, H});
    add(gptoss_tensor_router_bias, "router_bias", {E});
    add(gptoss_tensor_mlp1, "mlp1", {E, 2 * I, H}, true);
    add(gptoss_tensor_mlp1_bias, "mlp1_bias", {E, 2 * I});
    add(gptoss_tensor_mlp2, "mlp2", {E, H, I}, true);
    add(gptoss_tensor_mlp2_bias, "mlp2_bias", {E, H});
  }
  t.push_back({gptoss_tensor_final_norm, -1, "norm", {H}, false});
  t.push_back({gptoss_tensor_unembedding, -1, "unembedding", {V, H}, false});
  return t;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

gptoss_tensor_desc make_desc(const TensorSpec& spec, gptoss_dtype dtype) {
  gptoss_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.name = spec.name.c_str();
  d.role = spec.role;
  d.layer = spec.layer;
  d.dtype = dtype;
  d.ndim = static_cast<uint32_t>(spec.shape.size());
  for (size_t i = 0; i < spec.shape.size(); ++i) d.shape[i] = spec.shape[i];
  return d;
}

gptoss_tensor_desc make_shape_desc(const TensorSpec& spec, gptoss_dtype dtype) {
  gptoss_tensor_desc d = make_desc(spec, dtype);
  uint64_t elems = 1;
  for (int64_t n : spec.shape) elems *= uint64_t(n);
  switch (dtype) {
    case gptoss_dtype_f32: d.data_size = size_t(elems * 4); break;
    case gptoss_dtype_bf16:
    case gptoss_dtype_f16: d.data_size = size_t(elems * 2); break;
    case gptoss_dtype_q8_0: d.data_size = size_t(elems / 32 * 34); break;
    case gptoss_dtype_mxfp4:
      d.data_size = size_t(elems / 2);
      d.scales_size = size_t(elems / 32);
      break;
  }
  return d;
}

std::string hf_tensor_name(const TensorSpec& s) {
  const std::string p = fmt::format("model.layers.{}.", s.layer);
  switch (s.role) {
    case gptoss_tensor_embedding: return "model.embed_tokens.weight";
    case gptoss_tensor_unembedding: return "lm_head.weight";
    case gptoss_tensor_final_norm: return "model.norm.weight";
    case gptoss_tensor_attn_norm: return p + "input_layernorm.weight";
    case gptoss_tensor_attn_q: return p + "self_attn.q_proj.weight";
    case gptoss_tensor_attn_q_bias: return p + "self_attn.q_proj.bias";
    case gptoss_tensor_attn_k: return p + "self_attn.k_proj.weight";
    case gptoss_tensor_attn_k_bias: return p + "self_attn.k_proj.bias";
    case gptoss_tensor_attn_v: return p + "self_attn.v_proj.weight";
    case gptoss_tensor_attn_v_bias: return p + "self_attn.v_proj.bias";
    case gptoss_tensor_attn_out: return p + "self_attn.o_proj.weight";
    case gptoss_tensor_attn_out_bias: return p + "self_attn.o_proj.bias";
    case gptoss_tensor_attn_sinks: return p + "self_attn.sinks";
    case gptoss_tensor_mlp_norm: return p + "post_attention_layernorm.weight";
    case gptoss_tensor_router: return p + "mlp.router.weight";
    case gptoss_tensor_router_bias: return p + "mlp.router.bias";
    case gptoss_tensor_mlp1: return p + "mlp.experts.gate_up_proj";
    case gptoss_tensor_mlp1_bias: return p + "mlp.experts.gate_up_proj_bias";
    case gptoss_tensor_mlp2: return p + "mlp.experts.down_proj";
    case gptoss_tensor_mlp2_bias: return p + "mlp.experts.down_proj_bias";
  }
  fail(gptoss_status_internal, "no checkpoint name for role {}", static_cast<int>(s.role));
}


void for_each_spec(const std::vector<TensorSpec>& specs, uint32_t num_layers,
                   uint32_t model_layers, const std::function<void(size_t)>& visit) {
  if (num_layers > model_layers)
    fail(gptoss_status_invalid_argument, "{} layers requested, the model has {}", num_layers,
         model_layers);
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].layer < static_cast<int32_t>(num_layers)) visit(i);
}

}  // namespace gptoss
