#pragma once
// The token choice of the `sample` slot's algorithm (include/gptoss/backend.h, steps 2 and
// 3): the one copy, which the core's host sampler (libgptoss/sampling/sampler.cpp: penalties
// and the RNG around it) and the CPU plugin's sample slot (backends/cpu/ops/sample.cpp) both call,
// so that they take the same token for the same logits and uniform, bit for bit. Header-only,
// like yarn.hpp: a plugin includes it and links nothing of libgptoss. Both units that include it
// are compiled with GPTOSS_SAMPLING_FLAGS (CMakeLists.txt: no fused multiply-adds), so a build
// that enables FMA in one of them cannot make their arithmetic differ.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gptoss::backends {

// The row's parameters that decide the token (gptoss_sample_row's, the host's SamplerParams').
struct SampleTruncation {
  float temperature;  // 0: greedy
  uint32_t top_k;     // 0: off
  float top_p;        // 1: off
  float min_p;        // 0: off
};

// Scratch a caller keeps between rows (for the vocabulary: 0.8 MB of ids, 1.6 MB of
// weights; new pages on every sample otherwise).
struct SampleScratch {
  std::vector<uint32_t> ids;     // the allowed tokens of a sparse mask, in index order
  std::vector<uint32_t> order;   // the ranked candidates of a truncation
  std::vector<double> w;         // the candidates' weights
  std::vector<double> block;     // their sums per kSampleBlock
  std::vector<uint16_t> bucket;  // each candidate's (sample_bucket)
  std::vector<double> bucket_mass;
  std::vector<size_t> bucket_count;
};

// exp(x) in double for x <= 0 (-inf gives 0), within 2 ulp of std::exp (tested): one branch-free
// expression, so a pass over the vocabulary vectorizes, where the C library's exp is a call per
// token. x = n ln2 + r with |r| <= ln2 / 2 (ln2 split so that n ln2's high part is exact), exp(r)
// by its Taylor series to r^13 (remainder below 1e-17), times 2^n built from the exponent bits in
// two factors so that results down to the subnormals round once.
inline double sample_exp(double x) {
  x = x > -746.0 ? x : -746.0;      // below exp's least subnormal: 0 (also for -inf and NaN)
  const double shifter = 0x1.8p52;  // adding it rounds to an integer, held in the low bits
  const double k = x * 0x1.71547652b82fep0 + shifter;
  const double n = k - shifter;
  const double r = (x - n * 0x1.62e42feep-1) - n * 0x1.a39ef35793c76p-33;
  // Estrin's scheme: pairs, then powers of r, so the terms do not wait on one another.
  const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const double p01 = 1.0 + r, p23 = 0.5 + r * (1.0 / 6.0), p45 = 1.0 / 24.0 + r * (1.0 / 120.0),
               p67 = 1.0 / 720.0 + r * (1.0 / 5040.0), p89 = 1.0 / 40320.0 + r * (1.0 / 362880.0),
               p1011 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0),
               p1213 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
  const double p =
      (p01 + r2 * p23) + r4 * (p45 + r2 * p67) + r8 * ((p89 + r2 * p1011) + r4 * p1213);
  // n in [-1077, 0]: 2^(n + 600) is a normal number; times 2^-600 it rounds once.
  const uint64_t biased = std::bit_cast<uint64_t>(k) + (1023 + 600);  // low 12 bits: n + 1623
  return p * std::bit_cast<double>(biased << 52) * 0x1p-600;
}

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

// Weights are summed per block of this many candidates, each with four running sums, and the
// draw walks the blocks' sums before one block's weights: no chain of additions as long as
// the vocabulary (the slot's algorithm lets sums be taken in any order).
inline constexpr size_t kSampleBlock = 256;

// w[j] = exp((work[id(j)] - top) / T) for the n candidates, id(j) = ids ? ids[j] : j; their
// sums per block into `block`; returns the total.
inline double sample_weigh(const float* work, const uint32_t* ids, size_t n, double top, double T,
                           std::vector<double>& w, std::vector<double>& block) {
  w.resize(n);
  block.resize((n + kSampleBlock - 1) / kSampleBlock);
  double* out = w.data();
  if (ids == nullptr) {
    for (size_t j = 0; j < n; ++j) out[j] = sample_exp((double(work[j]) - top) / T);
  } else {
    for (size_t j = 0; j < n; ++j) out[j] = sample_exp((double(work[ids[j]]) - top) / T);
  }
  double total = 0.0;
  for (size_t b = 0; b < block.size(); ++b) {
    const size_t begin = b * kSampleBlock, end = std::min(n, begin + kSampleBlock);
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    size_t j = begin;
    for (; j + 4 <= end; j += 4)
      for (size_t l = 0; l < 4; ++l) s[l] += out[j + l];
    for (; j < end; ++j) s[0] += out[j];
    block[b] = (s[0] + s[1]) + (s[2] + s[3]);
    total += block[b];
  }
  return total;
}

// The draw over n weights in order (their block sums from sample_weigh): the first j at
// which r minus the running sum drops below 0, the running sum taken block by block; when
// rounding leaves r at or above 0 after the last, the last j with w > 0 (n if none).
inline size_t sample_draw(double r, const std::vector<double>& w, size_t n,
                          const std::vector<double>& block) {
  for (size_t b = 0; b * kSampleBlock < n; ++b) {
    if (r >= block[b]) {
      r -= block[b];
      continue;
    }
    const size_t end = std::min(n, (b + 1) * kSampleBlock);
    for (size_t j = b * kSampleBlock; j < end; ++j) {
      r -= w[j];
      if (r < 0.0) return j;
    }
  }
  for (size_t j = n; j-- > 0;)
    if (w[j] > 0.0) return j;
  return n;
}

// The allowed tokens of `allowed` below V, in index order, into `ids`.
inline void sample_allowed_ids(const uint32_t* allowed, size_t V, std::vector<uint32_t>& ids) {
  ids.clear();
  for (size_t word = 0; word * 32 < V; ++word) {
    uint32_t bits = allowed[word];
    if (word * 32 + 32 > V) bits &= (1u << (V % 32)) - 1u;
    while (bits != 0) {
      ids.push_back(uint32_t(word * 32 + size_t(std::countr_zero(bits))));
      bits &= bits - 1u;
    }
  }
}

// A mask allowing at most 1 token in this many is walked as a list of its tokens.
inline constexpr size_t kSparseMaskRatio = 16;

// Whether sample_choose walks `allowed` (n_allowed of V tokens) as the list of its tokens, which
// it leaves in SampleScratch::ids.
inline bool sample_mask_is_sparse(const uint32_t* allowed, size_t n_allowed, size_t V) {
  return allowed != nullptr && n_allowed * kSparseMaskRatio <= V;
}

// The ranked candidates a truncation needs (step 3's "tokens ordered by (l descending, index
// ascending)"), without sorting the vocabulary: each candidate's distance below the best,
// (top - l) / T in nats, falls in one of kBuckets buckets of 1/kBucketsPerNat nat (the last
// holds everything further down, -inf apart); the buckets' counts and masses say how far down
// top-k, top-p and min-p can reach, and only the candidates of those buckets are sorted. A
// bucket is a range of logits, so that prefix of the order is exact, ties included.
inline constexpr size_t kBucketsPerNat = 32, kBuckets = 32 * kBucketsPerNat;

// `scale`: kBucketsPerNat / T. Branch-free, so that a pass over the vocabulary vectorizes.
inline uint16_t sample_bucket(float l, double top, double scale) {
  const double d = (top - double(l)) * scale;  // +inf for -inf
  const double last = double(kBuckets - 1);
  const uint16_t b = uint16_t(int32_t(d < last ? d : last));
  return l == -INFINITY ? uint16_t(kBuckets) : b;  // weight 0: after every finite logit
}

// The token for `work` (V logits, NaN and disallowed tokens already -inf; at least one token
// allowed, the lowest of them `first_allowed`) and the row's uniform draw in [0, 1) (unused
// when greedy). `allowed` (NULL: every token) and n_allowed say which tokens may be taken.
//  - Greedy: the lowest-index token with the largest logit (step 2).
//  - Otherwise step 3 in double (weights by sample_exp, sums by block); when rounding leaves
//    the draw beyond the last kept token, the last kept one with w > 0.
//  - Beyond the slot's algorithm, which leaves it open: when every allowed logit is -inf (no
//    token has weight), the floor(uniform * n_allowed)-th allowed token in index order (the
//    lowest when greedy), so that a mask is honoured whatever the logits.
// Disallowed tokens weigh 0 and change no sum, so under a sparse mask only the allowed tokens
// are visited (the same token as visiting all).
inline uint32_t sample_choose(const SampleTruncation& p, double uniform, const float* work,
                              size_t V, const uint32_t* allowed, size_t n_allowed,
                              size_t first_allowed, SampleScratch& s) {
  const bool sparse = sample_mask_is_sparse(allowed, n_allowed, V);
  if (sparse) sample_allowed_ids(allowed, V, s.ids);
  const uint32_t* ids = sparse ? s.ids.data() : nullptr;
  const size_t n_cand = sparse ? s.ids.size() : V;  // candidates: weight 0 for any other token
  auto id = [&](size_t j) { return ids ? size_t(ids[j]) : j; };

  size_t best = first_allowed;
  if (sparse) {
    for (size_t j = 1; j < n_cand; ++j)
      if (work[ids[j]] > work[best]) best = ids[j];
  } else {
    best = sample_argmax(work, V, first_allowed);
  }
  if (p.temperature == 0.0f) return uint32_t(best);
  if (work[best] == -INFINITY) {
    const size_t k = std::min(n_allowed - 1, size_t(uniform * double(n_allowed)));
    if (sparse) return ids[k];
    size_t left = k;
    for (size_t i = first_allowed; i < V; ++i)
      if ((allowed == nullptr || ((allowed[i / 32] >> (i % 32)) & 1u)) && left-- == 0)
        return uint32_t(i);
    return uint32_t(first_allowed);  // not reached: n_allowed tokens are allowed
  }
  const double top = work[best], T = p.temperature, scale = double(kBucketsPerNat) / T;
  const bool keeps_all = p.top_p >= 1.0f && p.min_p <= 0.0f && (p.top_k == 0 || p.top_k >= V);
  if (keeps_all) {  // every token, in index order
    const double sum = sample_weigh(work, ids, n_cand, top, T, s.w, s.block);
    const size_t j = sample_draw(uniform * sum, s.w, n_cand, s.block);
    return j < n_cand ? uint32_t(id(j)) : uint32_t(best);
  }

  // How far down the order the truncations reach, in buckets.
  const bool top_k = p.top_k > 0 && p.top_k < n_cand;
  s.bucket_mass.assign(kBuckets + 1, 0.0);
  s.bucket_count.assign(kBuckets + 1, 0);
  double all_mass = 0.0;
  if (!top_k) all_mass = sample_weigh(work, ids, n_cand, top, T, s.w, s.block);
  std::vector<uint16_t>& bucket = s.bucket;
  bucket.resize(n_cand);
  if (ids == nullptr) {
    for (size_t j = 0; j < n_cand; ++j) bucket[j] = sample_bucket(work[j], top, scale);
  } else {
    for (size_t j = 0; j < n_cand; ++j) bucket[j] = sample_bucket(work[ids[j]], top, scale);
  }
  for (size_t j = 0; j < n_cand; ++j) ++s.bucket_count[bucket[j]];
  if (!top_k)
    for (size_t j = 0; j < n_cand; ++j) s.bucket_mass[bucket[j]] += s.w[j];
  size_t cut = kBuckets;  // the last bucket whose candidates are ranked
  if (top_k) {
    size_t count = 0;
    for (cut = 0; cut < kBuckets; ++cut)
      if ((count += s.bucket_count[cut]) >= p.top_k) break;
  } else {
    if (p.min_p > 0.0f) {  // w >= min_p w[0] = min_p: at most -ln(min_p) nats down
      const double reach = -std::log(double(p.min_p)) * double(kBucketsPerNat);
      cut = std::min(cut, size_t(std::min(reach, double(kBuckets))) + 1);
    }
    if (p.top_p < 1.0f) {  // the buckets whose mass reaches top_p, and one more for rounding
      const double needed = double(p.top_p) * all_mass * (1.0 + 1e-9);
      double mass = 0.0;
      for (size_t b = 0; b < kBuckets; ++b)
        if ((mass += s.bucket_mass[b]) >= needed) {
          cut = std::min(cut, b + 1);
          break;
        }
    }
  }
  std::vector<uint32_t>& order = s.order;
  order.clear();
  for (size_t j = 0; j < n_cand; ++j)
    if (bucket[j] <= cut) order.push_back(uint32_t(id(j)));
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return work[a] > work[b] || (work[a] == work[b] && a < b);
  });
  // The walks below read only ranked candidates. Past them lie only candidates the cut left
  // out: top-k's, or ones min-p or top-p cannot reach (by more than the rounding of the
  // sums); should the probabilities summed one by one still stop short of top_p at the end,
  // what is ranked is what is kept.
  size_t n = order.size();
  double sum = all_mass;
  if (top_k) {
    n = p.top_k;
    sum = sample_weigh(work, order.data(), n, top, T, s.w, s.block);
  } else {
    sample_weigh(work, order.data(), n, top, T, s.w, s.block);
  }
  std::vector<double>& probs = s.w;
  for (size_t i = 0; i < n; ++i) probs[i] /= sum;
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
