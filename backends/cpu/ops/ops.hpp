#pragma once
// The ops of the backend. ref_*: scalar reference kernels (reference.cpp), the semantics of
// include/gptoss/backend.h written plainly. op_*: the fast versions (linear.cpp, moe.cpp,
// attention.cpp), which run ref_* when the device is at Isa::scalar. Typed: activations are
// fp32 arrays, ids and positions int32 arrays, weights Weight; the KV cache is a K and a V
// region of one layer (kv_dtype elements, kv_dim per slot); attention takes one AttnToken per
// query row. The plugin's slots (plugin/cpu_slots.cpp) turn the ABI's handles and descriptors
// into these and call them directly.
#include <cstddef>
#include <cstdint>

#include "gptoss/backend.h"

namespace gptoss::cpu {

struct Stream;  // plugin/cpu_backend.hpp
struct Weight;

// Per query token of an attention op: its keys are positions [kv_start, pos] of its sequence;
// the slot of position j is page_table[page_table_offset + j / page_size] * page_size +
// j % page_size. (The plugin slot builds these from struct gptoss_attn_seq.)
struct AttnToken {
  int32_t pos;
  int32_t kv_start;
  int32_t page_table_offset;
  int32_t reserved;
};

// The reference ops: every op of include/gptoss/backend.h, scalar, in fp32.
gptoss_status ref_embedding(Stream* stream, const Weight* weight, const int32_t* tokens, size_t n,
                            float* out);
gptoss_status ref_rmsnorm(Stream* stream, const float* x, const Weight* scale, size_t n, size_t dim,
                          float eps, float* out);
gptoss_status ref_linear(Stream* stream, const float* x, const Weight* weight, const Weight* bias,
                         size_t n_tokens, size_t n_in, size_t n_out, float* out);
gptoss_status ref_rope(Stream* stream, float* x, const int32_t* positions, size_t n_tokens,
                       size_t n_heads, size_t head_dim, const gptoss_rope_params* params);
gptoss_status ref_kv_write(Stream* stream, void* k_cache, void* v_cache, gptoss_kv_dtype dtype,
                           const float* k, const float* v, const int32_t* slots, size_t n_tokens,
                           size_t kv_dim);
gptoss_status ref_attention(Stream* stream, const float* q, const void* k_cache,
                            const void* v_cache, gptoss_kv_dtype dtype, const Weight* sinks,
                            const AttnToken* tokens, const int32_t* page_table, size_t n_tokens,
                            size_t n_heads, size_t n_kv_heads, size_t head_dim, size_t page_size,
                            float scale, float* out);
gptoss_status ref_router(Stream* stream, const float* x, const Weight* weight, const Weight* bias,
                         size_t n_tokens, size_t dim, size_t n_experts, size_t top_k,
                         int32_t* expert_ids, float* expert_weights);
gptoss_status ref_moe(Stream* stream, const float* x, const int32_t* expert_ids,
                      const float* expert_weights, const Weight* mlp1, const Weight* mlp1_bias,
                      const Weight* mlp2, const Weight* mlp2_bias, size_t n_tokens, size_t dim,
                      size_t inter, size_t top_k, float limit, float* out);
gptoss_status ref_add(Stream* stream, float* x, const float* y, size_t n);
gptoss_status ref_add_rmsnorm(Stream* stream, float* x, const float* y, const Weight* scale,
                              size_t n_tokens, size_t dim, float eps, float* out);

// The fast ops, on the device's kernel table (they run ref_* at Isa::scalar). The other ops
// are the reference ones at every level (elementwise, cheap).
gptoss_status op_linear(Stream* stream, const float* x, const Weight* weight, const Weight* bias,
                        size_t n_tokens, size_t n_in, size_t n_out, float* out);
gptoss_status op_attention(Stream* stream, const float* q, const void* k_cache, const void* v_cache,
                           gptoss_kv_dtype dtype, const Weight* sinks, const AttnToken* tokens,
                           const int32_t* page_table, size_t n_tokens, size_t n_heads,
                           size_t n_kv_heads, size_t head_dim, size_t page_size, float scale,
                           float* out);
gptoss_status op_router(Stream* stream, const float* x, const Weight* weight, const Weight* bias,
                        size_t n_tokens, size_t dim, size_t n_experts, size_t top_k,
                        int32_t* expert_ids, float* expert_weights);
gptoss_status op_moe(Stream* stream, const float* x, const int32_t* expert_ids,
                     const float* expert_weights, const Weight* mlp1, const Weight* mlp1_bias,
                     const Weight* mlp2, const Weight* mlp2_bias, size_t n_tokens, size_t dim,
                     size_t inter, size_t top_k, float limit, float* out);
gptoss_status op_add_rmsnorm(Stream* stream, float* x, const float* y, const Weight* scale,
                             size_t n_tokens, size_t dim, float eps, float* out);

}  // namespace gptoss::cpu
