#include "sample.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace gptoss::cpu {
namespace {

// Index of the largest value among the allowed ones (the lowest on ties), `first` the lowest
// allowed index.
size_t argmax(const std::vector<float>& v, size_t first) {
  size_t best = first;
  float top = v[first];
  for (size_t i = first + 1; i < v.size(); ++i)
    if (v[i] > top) top = v[i], best = i;
  return best;
}

struct Scratch {
  std::vector<float> work;
  std::vector<uint32_t> order;
  std::vector<double> probs;
};

// Steps 2 and 3 of the slot's algorithm over `work` (disallowed tokens already -inf).
uint32_t choose(const gptoss_sample_row& p, size_t first_allowed, Scratch& s) {
  const std::vector<float>& work = s.work;
  const size_t V = work.size();
  if (p.temperature == 0.0f) return uint32_t(argmax(work, first_allowed));
  auto last_positive = [&](auto&& token_at, size_t n, auto&& prob_at) {
    for (size_t i = n; i-- > 0;)
      if (prob_at(i) > 0.0) return token_at(i);
    return token_at(n - 1);
  };
  const bool keeps_all = p.top_p >= 1.0f && p.min_p <= 0.0f && (p.top_k == 0 || p.top_k >= V);
  if (keeps_all) {
    const double top = work[argmax(work, first_allowed)];
    s.probs.resize(V);
    double sum = 0.0;
    for (size_t i = 0; i < V; ++i) sum += s.probs[i] = std::exp((work[i] - top) / p.temperature);
    double r = p.uniform * sum;
    for (size_t i = 0; i < V; ++i) {
      r -= s.probs[i];
      if (r < 0.0) return uint32_t(i);
    }
    return last_positive([](size_t i) { return uint32_t(i); }, V, [&](size_t i) { return s.probs[i]; });
  }
  std::vector<uint32_t>& order = s.order;
  order.resize(V);
  std::iota(order.begin(), order.end(), 0u);
  auto by_logit = [&](uint32_t a, uint32_t b) { return work[a] > work[b] || (work[a] == work[b] && a < b); };
  size_t n = (p.top_k > 0 && p.top_k < V) ? p.top_k : V;
  if (n < V) {
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(n), order.end(), by_logit);
  } else {
    // The sorted head of 1024 covers top-p and min-p unless the distribution is flat.
    const size_t head = std::min<size_t>(V, 1024);
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(head), order.end(), by_logit);
    double head_mass = 0.0, all_mass = 0.0;
    const double top = work[order[0]];
    for (size_t i = 0; i < V; ++i) {
      const double e = std::exp((work[order[i]] - top) / p.temperature);
      all_mass += e;
      if (i < head) head_mass += e;
    }
    const bool head_enough = (p.top_p >= 1.0f || head_mass >= double(p.top_p) * all_mass) &&
                             (p.min_p <= 0.0f || head == V ||
                              std::exp((work[order[head - 1]] - top) / p.temperature) < p.min_p);
    if (!head_enough) std::sort(order.begin(), order.end(), by_logit);
  }
  std::vector<double>& probs = s.probs;
  probs.resize(n);
  double top = -INFINITY;
  for (size_t i = 0; i < n; ++i) top = std::max(top, double(work[order[i]]));
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += probs[i] = std::exp((work[order[i]] - top) / p.temperature);
  for (size_t i = 0; i < n; ++i) probs[i] /= sum;
  if (p.min_p > 0.0f) {
    size_t keep = 1;
    while (keep < n && probs[keep] >= p.min_p * probs[0]) ++keep;
    n = keep;
  }
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
  double r = p.uniform * total;
  for (size_t i = 0; i < n; ++i) {
    r -= probs[i];
    if (r < 0.0) return order[i];
  }
  return last_positive([&](size_t i) { return order[i]; }, n, [&](size_t i) { return probs[i]; });
}

// Step 4: log-softmax at temperature 1, and the top_n allowed tokens.
void report(const gptoss_sample_row& p, uint32_t token, size_t n_allowed, Scratch& s,
            gptoss_sample_result& out) {
  const std::vector<float>& work = s.work;
  const size_t V = work.size();
  float mx = -INFINITY;
  for (float l : work) mx = std::max(mx, l);
  double z = 0.0;
  for (float l : work) z += std::exp(double(l) - mx);
  const double log_z = double(mx) + std::log(z);
  auto logprob = [&](uint32_t t) { return float(double(work[t]) - log_z); };
  out.token = token;
  out.logprob = logprob(token);
  const size_t k = std::min<size_t>({p.top_n, GPTOSS_SAMPLE_MAX_TOP, n_allowed});
  out.n_top = uint32_t(k);
  if (k == 0) return;
  std::vector<uint32_t>& idx = s.order;
  idx.resize(V);
  std::iota(idx.begin(), idx.end(), 0u);
  std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](uint32_t a, uint32_t b) {
    return work[a] > work[b] || (work[a] == work[b] && a < b);
  });
  for (size_t i = 0; i < k; ++i) out.top[i] = {idx[i], logprob(idx[i])};
}

}  // namespace

gptoss_status sample_rows(ThreadPool& pool, const float* logits, const gptoss_sample_row* rows,
                          const uint32_t* mask, size_t n_rows, size_t vocab,
                          gptoss_sample_result* results) {
  for (size_t r = 0; r < n_rows; ++r) {
    const gptoss_sample_row& p = rows[r];
    if (!(p.temperature >= 0.0f) || !(p.top_p > 0.0f && p.top_p <= 1.0f) ||
        !(p.min_p >= 0.0f && p.min_p < 1.0f) || p.top_n > GPTOSS_SAMPLE_MAX_TOP ||
        !(p.uniform >= 0.0 && p.uniform < 1.0))
      return gptoss_status_invalid_argument;
  }
  if (vocab == 0) return gptoss_status_invalid_argument;
  const size_t words = (vocab + 31) / 32;
  pool.parallel_for(n_rows, [&](size_t b, size_t e, unsigned) {
    thread_local Scratch s;
    for (size_t r = b; r < e; ++r) {
      const float* l = logits + r * vocab;
      const uint32_t* m = mask ? mask + r * words : nullptr;
      s.work.resize(vocab);
      size_t allowed = 0, first_allowed = vocab;
      for (size_t i = 0; i < vocab; ++i) {
        const bool ok = m == nullptr || ((m[i / 32] >> (i % 32)) & 1u);
        s.work[i] = ok && !std::isnan(l[i]) ? l[i] : -INFINITY;
        if (ok) {
          ++allowed;
          first_allowed = std::min(first_allowed, i);
        }
      }
      gptoss_sample_result& out = results[r];
      out = {};
      if (allowed == 0) {
        out.token = std::numeric_limits<uint32_t>::max();
        out.logprob = -INFINITY;
        continue;
      }
      report(rows[r], choose(rows[r], first_allowed, s), allowed, s, out);
    }
  });
  return gptoss_status_success;
}

}  // namespace gptoss::cpu
