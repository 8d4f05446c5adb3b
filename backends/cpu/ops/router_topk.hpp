#pragma once
// The router's selection, shared by the reference and the fast router: the top_k of one
// token's expert logits (ties: lower index first) and the softmax over their logits.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace gptoss::cpu {

inline void router_topk_softmax(const float* logits, size_t n_experts, size_t top_k, int32_t* ids,
                                float* weights, std::vector<size_t>& order) {
  order.resize(n_experts);
  std::iota(order.begin(), order.end(), size_t(0));
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(top_k), order.end(),
                    [&](size_t a, size_t c) {
                      return logits[a] > logits[c] || (logits[a] == logits[c] && a < c);
                    });
  const float m = logits[order[0]];
  float sum = 0.0f;
  for (size_t k = 0; k < top_k; ++k) sum += std::exp(logits[order[k]] - m);
  for (size_t k = 0; k < top_k; ++k) {
    ids[k] = int32_t(order[k]);
    weights[k] = std::exp(logits[order[k]] - m) / sum;
  }
}

}  // namespace gptoss::cpu
