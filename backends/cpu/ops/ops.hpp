#pragma once
// The ops of the backend. ref_*: scalar reference kernels (reference.cpp), the semantics of
// include/gptoss/backend.h written plainly. op_*: the fast versions (linear.cpp, moe.cpp,
// attention.cpp), which fall back to ref_* when the device runs at
// Isa::scalar. Buffers are plain pointers; the KV cache is a K and a V pointer of one layer
// (kv_dtype elements, kv_dim per slot); attention takes one AttnToken per query row. The
// plugin's table slots (plugin/cpu_slots.cpp) turn the ABI's handles and descriptors into these.
#include "gptoss/backend.h"

namespace gptoss::cpu {

// Per query token of an attention op: its keys are positions [kv_start, pos] of its sequence;
// the slot of position j is page_table[page_table_offset + j / page_size] * page_size +
// j % page_size. (The plugin slot builds these from struct gptoss_attn_seq.)
struct AttnToken {
  int32_t pos;
  int32_t kv_start;
  int32_t page_table_offset;
  int32_t reserved;
};

#define GPTOSS_CPU_OPS(P)                                                                       \
  gptoss_status P##embedding(void*, const void*, const void*, size_t, void*);                  \
  gptoss_status P##rmsnorm(void*, const void*, const void*, size_t, size_t, float, void*);     \
  gptoss_status P##linear(void*, const void*, const void*, const void*, size_t, size_t, size_t, \
                          void*);                                                               \
  gptoss_status P##rope(void*, void*, const void*, size_t, size_t, size_t,                     \
                        const gptoss_rope_params*);                                             \
  gptoss_status P##kv_write(void*, void*, void*, gptoss_kv_dtype, const void*, const void*,    \
                            const void*, size_t, size_t);                                       \
  gptoss_status P##attention(void*, const void*, const void*, const void*, gptoss_kv_dtype,    \
                             const void*, const void*, const void*, size_t, size_t, size_t,     \
                             size_t, size_t, float, void*);                                     \
  gptoss_status P##router(void*, const void*, const void*, const void*, size_t, size_t, size_t, \
                          size_t, void*, void*);                                                \
  gptoss_status P##moe(void*, const void*, const void*, const void*, const void*, const void*,  \
                       const void*, const void*, size_t, size_t, size_t, size_t, float, void*); \
  gptoss_status P##add(void*, void*, const void*, size_t);                                     \
  gptoss_status P##add_rmsnorm(void*, void*, const void*, const void*, size_t, size_t, float,   \
                               void*);

GPTOSS_CPU_OPS(ref_)
GPTOSS_CPU_OPS(op_)
#undef GPTOSS_CPU_OPS

}  // namespace gptoss::cpu
