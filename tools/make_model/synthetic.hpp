#pragma once
// Seeded synthetic weights in canonical form. Every element is a pure function of (seed,
// canonical tensor name, element index), so any slice of any tensor can be produced on its
// own, in any order: the writers stream tensors chunk by chunk and lay them out per format,
// and both formats get exactly the same values.
//
// Scales follow a trained model's orders of magnitude so activations stay sane: embedding
// N(0,1); matrices N(0, 1/fan_in) (MXFP4: uniform E2M1 codes with E8M0 scales chosen for the
// same RMS); biases N(0, 0.02); norm scales 1 + N(0, 0.1); sinks N(0, 0.5).
#include <cstdint>

#include "libgptoss/model/canonical.hpp"

namespace gptoss::make_model {

// Element i of a dense tensor; values are exactly representable in bf16.
struct DenseGenerator {
  uint64_t key;
  float mean, stddev;
  float operator()(uint64_t i) const;
};

// Block b (32 values) of an MXFP4 tensor in canonical (OpenAI) nibble order.
struct Mxfp4Generator {
  uint64_t key;
  uint8_t min_exponent;  // scales are min_exponent or min_exponent + 1
  void block(uint64_t b, uint8_t* data16, uint8_t* scale) const;
};

DenseGenerator dense_generator(const TensorSpec& spec, uint64_t seed);
Mxfp4Generator mxfp4_generator(const TensorSpec& spec, uint64_t seed);

}  // namespace gptoss::make_model
