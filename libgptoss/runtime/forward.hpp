#pragma once
// One forward step over a batch of sequence chunks that share a KV pool.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "libgptoss/runtime/kvcache.hpp"
#include "libgptoss/sampling/sampler.hpp"

namespace gptoss {

class Context;

// Sampling a chunk's last logits on the device, in the same step.
struct SampleRequest {
  Sampler* sampler;                // its parameters and its next uniform draw
  std::span<const uint32_t> mask;  // allowed-token bitmask ((vocab + 31) / 32 words) or empty
  gptoss_sample_result* result;    // filled when the step succeeds
};

struct SequenceChunk {
  Context* context;
  size_t begin, end;  // positions [begin, end) of the context's tokens
  bool want_logits;   // compute logits of position end - 1
  const SampleRequest* sample = nullptr;  // with want_logits: sample them on the device
  // With want_logits and no sample: logits of the last `logit_rows` positions, copied to
  // `host_rows` (logit_rows * vocab floats) when the step ends (speculative verification).
  size_t logit_rows = 1;
  float* host_rows = nullptr;
};

// Runs the model over every chunk; advances each context's processed count and keeps the
// logits asked for on the device (Context::host_logits reads them on demand). Throws
// gptoss::Error; on error no context is advanced.
void run_forward_step(KvPool& pool, std::span<const SequenceChunk> chunks);

// The device sample row for `s` (draws nothing: `uniform` is the sampler's next draw), and
// the shape and launch hints of a sample call over `rows`.
gptoss_sample_row sample_row_for(const Sampler& s, double uniform);
gptoss_sample_shape sample_shape_of(std::span<const gptoss_sample_row> rows, uint32_t vocab);

}  // namespace gptoss
