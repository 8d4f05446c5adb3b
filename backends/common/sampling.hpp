#pragma once
// The token choice of the `sample` slot's algorithm (include/gptoss/backend.h, steps 2 and
// 3): the one copy, which the core's host sampler (libgptoss/sampling/sampler.cpp: penalties
// and the RNG around it) and the CPU plugin's sample slot (backends/cpu/ops/sample.cpp) both call,
// so that they take the same token for the same logits and uniform, bit for bit. Header-only,
// like yarn.hpp: a plugin includes it and links nothing of libgptoss.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace gptoss::backends {

// The row's parameters that decide the token (gptoss_sample_row's, the host's SamplerParams').
struct SampleTruncation {
  float temperature;  // 0: greedy
  uint32_t top_k;     // 0: off
  float top_p;        // 1: off
  float min_p;        // 0: off
};

// Scratch a caller keeps between rows (for the vocabulary: 0.8 MB of order, 1.6 MB of
// probabilities; new pages on every sample otherwise).
struct SampleScratch {
  std::vector<uint32_t> order;
  std::vector<double> probs;
};

// Index of the largest of v[first, n) (the lowest on ties; v holds no NaN). Not
// std::max_element: it compares through the iterator to the best so far, a chain of dependent
// loads on every element of a 201088-token row; this loop's branch is almost never taken.
inline size_t sample_argmax(const float* v, size_t n, size_t first = 0) {
  size_t best = first;
  float top = v[first];
  for (size_t i = first + 1; i < n; ++i)
    if (v[i] > top) top = v[i], best = i;
  return best;
}

// The token for `work` (V logits, NaN and disallowed tokens already -inf; at least one token
// allowed, the lowest of them `first_allowed`) and the row's uniform draw in [0, 1) (unused
// when greedy). `allowed` (NULL: every token) and n_allowed say which tokens may be taken.
//  - Greedy: the lowest-index token with the largest logit (step 2).
//  - Otherwise step 3 in double, sums in index or candidate order; when rounding leaves the
//    draw beyond the last kept token, the last kept one with w > 0.
//  - Beyond the slot's algorithm, which leaves it open: when every allowed logit is -inf (no
//    token has weight), the floor(uniform * n_allowed)-th allowed token in index order (the
//    lowest when greedy), so that a mask is honoured whatever the logits.
inline uint32_t sample_choose(const SampleTruncation& p, double uniform, const float* work,
                              size_t V, const uint32_t* allowed, size_t n_allowed,
                              size_t first_allowed, SampleScratch& s) {
  const size_t best = sample_argmax(work, V, first_allowed);
  if (p.temperature == 0.0f) return uint32_t(best);
  if (work[best] == -INFINITY) {
    size_t k = std::min(n_allowed - 1, size_t(uniform * double(n_allowed)));
    for (size_t i = first_allowed; i < V; ++i)
      if ((allowed == nullptr || ((allowed[i / 32] >> (i % 32)) & 1u)) && k-- == 0)
        return uint32_t(i);
    return uint32_t(first_allowed);  // not reached: n_allowed tokens are allowed
  }
  const bool keeps_all = p.top_p >= 1.0f && p.min_p <= 0.0f && (p.top_k == 0 || p.top_k >= V);
  if (keeps_all) {
    // Every token, in id order: one pass of exp and one of selection.
    const double top = work[best];
    s.probs.resize(V);
    double sum = 0.0;
    // Disallowed tokens (-inf) skip the exp: under a sparse mask most of the vocabulary.
    for (size_t i = 0; i < V; ++i)
      sum += s.probs[i] = work[i] == -INFINITY ? 0.0 : std::exp((work[i] - top) / p.temperature);
    double r = uniform * sum;
    for (size_t i = 0; i < V; ++i) {
      r -= s.probs[i];
      if (r < 0.0) return uint32_t(i);
    }
    for (size_t i = V; i-- > 0;)  // rounding: the last token with w > 0
      if (s.probs[i] > 0.0) return uint32_t(i);
    return uint32_t(best);
  }
  // Candidates sorted by logit (descending, then id), truncated by top-k. Only as much of the
  // order as the truncation needs is sorted: a head of 1024 covers top-p and min-p unless the
  // distribution is flat; the full sort is the fallback.
  std::vector<uint32_t>& order = s.order;
  order.resize(V);
  std::iota(order.begin(), order.end(), 0u);
  auto by_logit = [&](uint32_t a, uint32_t b) {
    return work[a] > work[b] || (work[a] == work[b] && a < b);
  };
  size_t n = (p.top_k > 0 && p.top_k < V) ? p.top_k : V;
  size_t ranked = n;  // how many of the candidates `order` holds in rank order
  if (n < V) {
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(n), order.end(), by_logit);
  } else {
    const size_t head = std::min<size_t>(V, 1024);
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(head), order.end(), by_logit);
    double head_mass = 0.0, all_mass = 0.0;
    const double top = work[order[0]];
    for (size_t i = 0; i < V; ++i) {
      const double e = std::exp((work[order[i]] - top) / p.temperature);
      all_mass += e;
      if (i < head) head_mass += e;
    }
    // min-p keeps only tokens near the best (inside the head unless it is flat); top-p needs
    // the head to reach its mass.
    const bool head_enough = (p.top_p >= 1.0f || head_mass >= double(p.top_p) * all_mass) &&
                             (p.min_p <= 0.0f || head == V ||
                              std::exp((work[order[head - 1]] - top) / p.temperature) < p.min_p);
    if (head_enough) ranked = head;
    else std::sort(order.begin(), order.end(), by_logit);
  }
  std::vector<double>& probs = s.probs;
  probs.resize(n);
  double top = -INFINITY;
  for (size_t i = 0; i < n; ++i) top = std::max(top, double(work[order[i]]));
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += probs[i] = std::exp((work[order[i]] - top) / p.temperature);
  for (size_t i = 0; i < n; ++i) probs[i] /= sum;
  // The walks below read only ranked candidates: past the head, `order` is in no particular
  // order. The head's test passed, yet the probabilities summed one by one can stop a few ulps
  // short of top_p at its end (rounding); the head is then what is kept (the tokens past it
  // carry at most the rounding's worth of mass), as the GPU sampler does.
  n = std::min(n, ranked);
  // min-p: keep the candidates at least min_p times as likely as the best.
  if (p.min_p > 0.0f) {
    size_t keep = 1;
    while (keep < n && probs[keep] >= p.min_p * probs[0]) ++keep;
    n = keep;
  }
  // top-p: the shortest leading run whose mass reaches top_p.
  if (p.top_p < 1.0f) {
    double mass = 0.0;
    size_t keep = 0;
    while (keep < n) {
      mass += probs[keep++];
      if (mass >= p.top_p) break;
    }
    n = keep;
  }
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += probs[i];
  double r = uniform * total;
  for (size_t i = 0; i < n; ++i) {
    r -= probs[i];
    if (r < 0.0) return order[i];
  }
  for (size_t i = n; i-- > 0;)  // rounding: the last kept candidate with w > 0
    if (probs[i] > 0.0) return order[i];
  return order[0];
}

}  // namespace gptoss::backends
