#pragma once
// Sampling on the CPU device (gptoss_backend_api::sample): the algorithm of the slot's
// comment in include/gptoss/backend.h. The token is chosen by backends/common/sampling.hpp,
// which the host sampler (libgptoss/sampling/sampler.cpp) calls too, so that both take the
// same token for the same uniform.
#include <cstddef>
#include <cstdint>

#include "gptoss/backend.h"
#include "kernels.hpp"
#include "thread_pool.hpp"

namespace gptoss::cpu {

// Rows are independent: spread over the pool, each computed by one thread in a fixed order.
// The token follows the host sampler bit for bit; the log-probabilities' normaliser is the
// kernels' sum_exp (within 1e-6 of the host's at the SIMD levels).
gptoss_status sample_rows(ThreadPool& pool, const Kernels& kernels, const float* logits,
                          const gptoss_sample_row* rows, const uint32_t* mask, size_t n_rows,
                          size_t vocab, gptoss_sample_result* results);

}  // namespace gptoss::cpu
