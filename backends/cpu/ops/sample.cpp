#include "sample.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../../common/sampling.hpp"

namespace gptoss::cpu {
namespace {

// The masked copy of a row's logits and the shared choice's scratch, per thread.
struct Scratch : backends::SampleScratch {
  std::vector<float> work;
};

// The top k of `v` by (value descending, index ascending; NaN as -inf), most likely first:
// one pass keeping a small sorted list (k <= GPTOSS_SAMPLE_MAX_TOP), what partial_sort gives.
void top_k_of(const float* v, size_t n, size_t k, std::vector<uint32_t>& out) {
  out.clear();
  auto val = [&](uint32_t i) { return std::isnan(v[i]) ? -INFINITY : v[i]; };
  auto before = [&](uint32_t a, uint32_t b) { return val(a) > val(b) || (val(a) == val(b) && a < b); };
  for (uint32_t i = 0; i < n; ++i) {
    if (out.size() == k && !before(i, out.back())) continue;
    if (out.size() == k) out.pop_back();
    out.insert(std::upper_bound(out.begin(), out.end(), i, before), i);
  }
}

// Step 4: log-softmax at temperature 1 of `v` (NaN and disallowed tokens -inf, largest
// value `top`), and the top_n allowed tokens.
void report(const gptoss_sample_row& p, const Kernels& k, const float* v, size_t V, float top,
            uint32_t token, size_t n_allowed, gptoss_sample_result& out, std::vector<uint32_t>& idx) {
  const double log_z = double(top) + std::log(k.sum_exp(v, V, top));
  auto logprob = [&](uint32_t t) { return std::isnan(v[t]) ? -INFINITY : float(double(v[t]) - log_z); };
  out.token = token;
  out.logprob = logprob(token);
  const size_t n = std::min<size_t>({p.top_n, GPTOSS_SAMPLE_MAX_TOP, n_allowed});
  out.n_top = uint32_t(n);
  if (n == 0) return;
  top_k_of(v, V, n, idx);
  for (size_t i = 0; i < n; ++i) out.top[i] = {idx[i], logprob(idx[i])};
}

}  // namespace

gptoss_status sample_rows(ThreadPool& pool, const Kernels& kernels, const float* logits,
                          const gptoss_sample_row* rows, const uint32_t* mask, size_t n_rows,
                          size_t vocab, gptoss_sample_result* results) {
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
      const gptoss_sample_row& p = rows[r];
      const float* l = logits + r * vocab;
      const uint32_t* m = mask ? mask + r * words : nullptr;
      gptoss_sample_result& out = results[r];
      out = {};
      // Greedy without a mask (decode's common case) reads the logits as they are: argmax
      // and the normaliser, two passes; anything else works on a copy with NaN and
      // disallowed tokens at -inf.
      if (p.temperature == 0.0f && m == nullptr) {
        size_t best = 0;
        float top = -INFINITY;
        for (size_t i = 0; i < vocab; ++i)
          if (l[i] > top) top = l[i], best = i;  // NaN never compares greater
        report(p, kernels, l, vocab, top, uint32_t(best), vocab, out, s.order);
        continue;
      }
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
      if (allowed == 0) {
        out.token = std::numeric_limits<uint32_t>::max();
        out.logprob = -INFINITY;
        continue;
      }
      const uint32_t token =
          backends::sample_choose({p.temperature, p.top_k, p.top_p, p.min_p}, p.uniform,
                                  s.work.data(), vocab, m, allowed, first_allowed, s);
      float top = -INFINITY;
      for (float x : s.work) top = std::max(top, x);
      report(p, kernels, s.work.data(), vocab, top, token, allowed, out, s.order);
    }
  });
  return gptoss_status_success;
}

}  // namespace gptoss::cpu
