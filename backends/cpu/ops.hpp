#pragma once
// The ops of the backend table. ref_*: scalar reference kernels (cpu_ops.cpp), the semantics
// of include/gptoss/backend.h written plainly. op_*: the fast versions (ops_fast.cpp,
// ops_moe.cpp, ops_attention.cpp), which fall back to ref_* when the device runs at
// Isa::scalar. Signatures are those of the table slots.
#include "gptoss/backend.h"

namespace gptoss::cpu {

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
  gptoss_status P##add(void*, void*, const void*, size_t);

GPTOSS_CPU_OPS(ref_)
GPTOSS_CPU_OPS(op_)
#undef GPTOSS_CPU_OPS

}  // namespace gptoss::cpu
