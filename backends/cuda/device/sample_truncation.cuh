#pragma once
// Step 3 of the sample slot's algorithm over candidates in rank order (logit descending,
// index ascending): min-p, then top-p, then the draw. sampling.cu runs it on one thread per
// row; it is the walk of the host sampler (backends/common/sampling.hpp), in the same double
// arithmetic and order. Host-testable (tests/backends/cuda).
#include "compat.cuh"

namespace gptoss::cuda {

// prob(i): candidate i's probability (its weight over the normalising sum), for i < held.
// n: the candidates after top-k; held: how many of them the caller has in rank order (the
// sorted head of 1024 when the kernel proved it holds what truncation keeps; n when the whole
// row is sorted). The walk never reads past `held`: when the head's test passed (its mass
// reaches top_p x the row's), rounding can still leave the summed probabilities a few ulps
// short of top_p at its end, and the head is then what is kept; the tokens past it carry at
// most the rounding's worth of the mass the test found, and the host sampler, whose order past
// its head is unspecified (partial sort), ranks none of them either.
// Returns the chosen candidate, < min(n, held); the last kept candidate with a weight when
// rounding leaves the draw beyond the kept run (the first one if none has).
template <typename Prob>
GPTOSS_HD int sample_truncate_draw(const Prob& prob, int n, int held, float min_p, float top_p,
                                   double uniform) {
  if (n > held) n = held;
  if (min_p > 0.0f) {
    const double p0 = prob(0);
    int keep = 1;
    while (keep < n && prob(keep) >= double(min_p) * p0) ++keep;
    n = keep;
  }
  if (top_p < 1.0f) {
    double acc = 0.0;
    int keep = 0;
    while (keep < n) {
      acc += prob(keep++);
      if (acc >= double(top_p)) break;
    }
    n = keep;
  }
  double total = 0.0;
  for (int i = 0; i < n; ++i) total += prob(i);
  double left = uniform * total;
  for (int i = 0; i < n; ++i) {
    left -= prob(i);
    if (left < 0.0) return i;
  }
  for (int i = n - 1; i > 0; --i)
    if (prob(i) > 0.0) return i;
  return 0;
}

}  // namespace gptoss::cuda
