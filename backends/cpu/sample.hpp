#pragma once
// Sampling on the CPU device (gptoss_backend_api::sample): the algorithm of the slot's
// comment in include/gptoss/backend.h, with the host sampler's arithmetic step for step
// (libgptoss/sampling/sampler.cpp), so that both take the same token for the same uniform.
#include <cstddef>
#include <cstdint>

#include "gptoss/backend.h"
#include "thread_pool.hpp"

namespace gptoss::cpu {

// Rows are independent: spread over the pool, each computed by one thread in a fixed order.
gptoss_status sample_rows(ThreadPool& pool, const float* logits, const gptoss_sample_row* rows,
                          const uint32_t* mask, size_t n_rows, size_t vocab,
                          gptoss_sample_result* results);

}  // namespace gptoss::cpu
