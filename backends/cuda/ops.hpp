#pragma once
// The op slots of the CUDA backend's table (ops.cpp): argument checks, the choice of kernel,
// scratch from the stream's workspace, and CUDA errors turned into statuses.
#include "gptoss/backend.h"

namespace gptoss::cuda {

gptoss_status op_embedding(void*, const void*, const void*, size_t, void*);
gptoss_status op_rmsnorm(void*, const void*, const void*, size_t, size_t, float, void*);
gptoss_status op_linear(void*, const void*, const void*, const void*, size_t, size_t, size_t, void*);
gptoss_status op_rope(void*, void*, const void*, size_t, size_t, size_t, const gptoss_rope_params*);
gptoss_status op_kv_write(void*, void*, void*, gptoss_kv_dtype, const void*, const void*, const void*,
                          size_t, size_t);
gptoss_status op_attention(void*, const void*, const void*, const void*, gptoss_kv_dtype, const void*,
                           const void*, const void*, size_t, size_t, size_t, size_t, size_t, float,
                           void*);
gptoss_status op_router(void*, const void*, const void*, const void*, size_t, size_t, size_t, size_t,
                        void*, void*);
gptoss_status op_moe(void*, const void*, const void*, const void*, const void*, const void*,
                     const void*, const void*, size_t, size_t, size_t, size_t, float, void*);
gptoss_status op_add(void*, void*, const void*, size_t);

}  // namespace gptoss::cuda
