#include "sample.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "../../common/sampling.hpp"

namespace gptoss::cpu {
namespace {

// The masked copy of a row's logits and the shared choice's scratch, per thread.
struct Scratch : backends::SampleScratch {
  std::vector<float> work;
  std::vector<float> allowed_logits;  // under a sparse mask: the logits of `ids`
};

// The top k of `v` by (value descending, index ascending; NaN as -inf), most likely first:
// one pass keeping a small sorted list (k <= GPTOSS_SAMPLE_MAX_TOP), what partial_sort gives.
void top_k_of(const float* v, size_t n, size_t k, std::vector<uint32_t>& out) {
  out.clear();
  auto val = [&](uint32_t i) { return std::isnan(v[i]) ? -INFINITY : v[i]; };
  auto before = [&](uint32_t a, uint32_t b) {
    return val(a) > val(b) || (val(a) == val(b) && a < b);
  };
  for (uint32_t i = 0; i < n; ++i) {
    if (out.size() == k && !before(i, out.back())) continue;
    if (out.size() == k) out.pop_back();
    out.insert(std::upper_bound(out.begin(), out.end(), i, before), i);
  }
}

// Step 4: log-softmax at temperature 1 of `v` (NaN and disallowed tokens -inf, largest
// value `top`), and the top_n allowed tokens. v[j] is token ids[j]'s logit (ids NULL: token
// j's): under a sparse mask, only the allowed tokens' logits, which hold all the mass.
void report(const gptoss_sample_row& p, const Kernels& k, const float* v, const uint32_t* ids,
            size_t n_v, float top, uint32_t token, float token_logit, size_t n_allowed,
            gptoss_sample_result& out, std::vector<uint32_t>& idx) {
  const double log_z = double(top) + std::log(k.sum_exp(v, n_v, top));
  auto logprob = [&](float l) { return std::isnan(l) ? -INFINITY : float(double(l) - log_z); };
  out.token = token;
  out.logprob = logprob(token_logit);
  const size_t n = std::min<size_t>({p.top_n, GPTOSS_SAMPLE_MAX_TOP, n_allowed});
  out.n_top = uint32_t(n);
  if (n == 0) return;
  top_k_of(v, n_v, n, idx);
  for (size_t i = 0; i < n; ++i) out.top[i] = {ids ? ids[idx[i]] : idx[i], logprob(v[idx[i]])};
}

}  // namespace

gptoss_status sample_rows(ThreadPool& pool, const Kernels& kernels, const float* logits,
                          const gptoss_sample_row* rows, const uint32_t* mask, size_t n_rows,
                          size_t vocab, gptoss_sample_result* results) {
  for (size_t r = 0; r < n_rows; ++r) {
    const gptoss_sample_row& p = rows[r];
    if (!(p.temperature >= 0.0f) || std::isinf(p.temperature) ||
        !(p.top_p > 0.0f && p.top_p <= 1.0f) || !(p.min_p >= 0.0f && p.min_p < 1.0f) ||
        p.top_n > GPTOSS_SAMPLE_MAX_TOP || !(p.uniform >= 0.0 && p.uniform < 1.0))
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
        report(p, kernels, l, nullptr, vocab, top, uint32_t(best), l[best], vocab, out, s.order);
        continue;
      }
      s.work.resize(vocab);
      float* w = s.work.data();
      size_t allowed = 0, first_allowed = vocab;
      if (m == nullptr) {
        for (size_t i = 0; i < vocab; ++i) w[i] = std::isnan(l[i]) ? -INFINITY : l[i];
        allowed = vocab;
        first_allowed = 0;
      } else {
        for (size_t word = 0; word < words; ++word) {
          const size_t begin = word * 32, end = std::min(vocab, begin + 32);
          uint32_t bits = m[word];
          if (end - begin < 32) bits &= (1u << (end - begin)) - 1u;
          if (bits == 0) {
            std::fill(w + begin, w + end, -INFINITY);
            continue;
          }
          allowed += size_t(std::popcount(bits));
          first_allowed = std::min(first_allowed, begin + size_t(std::countr_zero(bits)));
          if (bits == ~0u) {
            for (size_t i = begin; i < end; ++i) w[i] = std::isnan(l[i]) ? -INFINITY : l[i];
            continue;
          }
          for (size_t i = begin; i < end; ++i)
            w[i] = ((bits >> (i - begin)) & 1u) && !std::isnan(l[i]) ? l[i] : -INFINITY;
        }
      }
      if (allowed == 0) {
        out.token = std::numeric_limits<uint32_t>::max();
        out.logprob = -INFINITY;
        continue;
      }
      const uint32_t token =
          backends::sample_choose({p.temperature, p.top_k, p.top_p, p.min_p}, p.uniform, w, vocab,
                                  m, allowed, first_allowed, s);
      if (backends::sample_mask_is_sparse(m, allowed, vocab)) {
        // A sparse mask: sample_choose listed the allowed tokens; their logits alone.
        s.allowed_logits.resize(s.ids.size());
        float top = -INFINITY;
        for (size_t j = 0; j < s.ids.size(); ++j)
          top = std::max(top, s.allowed_logits[j] = w[s.ids[j]]);
        report(p, kernels, s.allowed_logits.data(), s.ids.data(), s.ids.size(), top, token,
               w[token], allowed, out, s.order);
      } else {
        report(p, kernels, w, nullptr, vocab, w[backends::sample_argmax(w, vocab)], token, w[token],
               allowed, out, s.order);
      }
    }
  });
  return gptoss_status_success;
}

}  // namespace gptoss::cpu
