#pragma once
// Memory for the quantized activations of the fast mode (not included by the SIMD translation
// units, which must not instantiate std templates).
#include <cstdint>
#include <vector>

#include "kernels.hpp"

namespace gptoss::cpu {

// Owns the memory behind a Q8Acts (64-byte aligned); reused across calls.
class Q8Storage {
 public:
  // A view for n_tok rows of `cols` columns (cols % 32 == 0); contents undefined until filled.
  Q8Acts& prepare(size_t n_tok, size_t cols);

 private:
  std::vector<uint8_t> bytes_;
  Q8Acts view_{};
};

// Owns the memory behind a Q16Acts (64-byte aligned); reused across calls.
class Q16Storage {
 public:
  // A view for n_tok rows of `cols` columns (cols % 32 == 0); contents undefined until filled.
  Q16Acts& prepare(size_t n_tok, size_t cols);

 private:
  std::vector<uint8_t> bytes_;
  Q16Acts view_{};
};

// Row j of dst = row i of src (same cols; all of its int8 values and per-block data).
void copy_q8_row(const Q8Acts& src, size_t i, Q8Acts& dst, size_t j);

}  // namespace gptoss::cpu
