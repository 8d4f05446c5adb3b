#pragma once
// One forward step over a batch of sequence chunks that share a KV pool.
#include <cstddef>
#include <span>

#include "libgptoss/runtime/kvcache.hpp"

namespace gptoss {

class Context;

struct SequenceChunk {
  Context* context;
  size_t begin, end;  // positions [begin, end) of the context's tokens
  bool want_logits;   // compute logits of position end - 1
};

// Runs the model over every chunk; advances each context's processed count and stores the
// logits asked for. Throws gptoss::Error; on error no context is advanced.
void run_forward_step(KvPool& pool, std::span<const SequenceChunk> chunks);

}  // namespace gptoss
