// On-device sampling: the algorithm of the plugin ABI's `sample` slot, which the host sampler
// follows too (greedy; temperature with top-k, top-p, min-p; the host's uniform draw; an
// optional allowed-token bitmask; log-probabilities and the top-n alternatives), so that a
// decode step returns a few bytes instead of the vocabulary's logits.
//
// One block of 1024 threads per row. Tokens are ranked by a 64-bit key, (order-preserving
// bits of the logit) << 32 | ~index, so that "logit descending, index ascending" is one
// integer order with no ties; tokens a row may not take (mask, NaN) rank last.
// The best K tokens (K <= 1024) are found by a radix select over that key (8 passes of 8
// bits, each a histogram of the row) and sorted in shared memory (bitonic). Truncation works
// on that sorted head when it provably holds the kept tokens (top-k <= 1024; or top-p's mass
// and min-p's cut reached inside the head, the test the host sampler makes), else on the
// whole row sorted in global scratch (bitonic, one block: slow, and rare).
//
// Two launches per call. The first takes every row and leaves the rows that need the whole
// row sorted to the second, listing them; the second runs those rows again, kSortSlots at a
// time, each block with one row's sort space. So the scratch is the list plus kSortSlots
// rows of sort space (8 MiB for a 201088-token vocabulary), not a sort space per row: the
// host cannot know which rows need it without waiting for the device (nor at all inside a
// captured decode step).
#include <algorithm>
#include <cmath>

#include "device/compat.cuh"
#include "device/sample_truncation.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kHead = 1024;  // sorted candidates in shared memory
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kSortSlots = 4;  // rows sorted whole at a time (second launch)

__device__ uint64_t rank_key(float v, uint32_t index) {
  if (v == 0.0f) v = 0.0f;  // -0 ranks as +0 (they compare equal)
  const uint32_t b = float_to_bits(v);
  const uint32_t k = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return uint64_t(k) << 32 | uint32_t(~index);
}
// Tokens a row may not take: below every logit's key (-inf's is 0x007fffff << 32), and still
// distinct, so that the k-th largest key always has exactly k - 1 above it.
__device__ uint64_t excluded_key(uint32_t index) { return uint32_t(~index); }
__device__ float key_value(uint64_t key) {
  const uint32_t k = uint32_t(key >> 32);
  if (k < 0x007fffffu) return -INFINITY;  // excluded
  return bits_to_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
__device__ uint32_t key_index(uint64_t key) { return ~uint32_t(key); }

// The row's logits as the algorithm sees them.
struct Row {
  const float* logits;
  const uint32_t* mask;  // null: every token allowed
  int vocab;
  __device__ bool allowed(int i) const { return mask == nullptr || ((mask[i / 32] >> (i % 32)) & 1u); }
  // The working logit: -inf for disallowed tokens and NaN.
  __device__ float work(int i) const {
    const float l = logits[i];
    return allowed(i) && !isnan(l) ? l : -INFINITY;
  }
  __device__ uint64_t key(int i) const {
    return allowed(i) && !isnan(logits[i]) ? rank_key(logits[i], uint32_t(i)) : excluded_key(uint32_t(i));
  }
};

// Block-wide reductions (every thread gets the result). `red` is shared scratch of kWarps
// 8-byte slots; the leading barrier lets a reduction follow another on the same scratch.
template <typename T, typename Op>
__device__ T block_reduce(T v, T* red, Op op) {
  for (int off = kWarpSize / 2; off > 0; off /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < kWarps; ++w) v = op(v, red[w]);  // fixed order: the same on every run
  return v;
}

// Exclusive prefix sum of one value per thread, in thread order; *total gets the sum.
template <typename T>
__device__ T block_exclusive_scan(T v, T* red, T* total) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  T incl = v;
  for (int off = 1; off < kWarpSize; off *= 2) {
    const T o = __shfl_up_sync(0xffffffffu, incl, off);
    if (lane >= off) incl += o;
  }
  __syncthreads();
  if (lane == kWarpSize - 1) red[warp] = incl;
  __syncthreads();
  T before = 0, all = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before += red[w];
    all += red[w];
  }
  *total = all;
  return before + incl - v;
}

// Sorts keys[0, n) (n a power of two) descending: bitonic network, the block's threads
// taking the compare-exchanges of each stage. Shared or global memory alike.
__device__ void bitonic_sort_desc(uint64_t* keys, int n) {
  for (int size = 2; size <= n; size *= 2)
    for (int stride = size / 2; stride > 0; stride /= 2) {
      __syncthreads();
      for (int t = threadIdx.x; t < n / 2; t += blockDim.x) {
        const int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
        const bool desc = (lo & size) == 0;
        const uint64_t a = keys[lo], b = keys[hi];
        if ((a < b) == desc) keys[lo] = b, keys[hi] = a;
      }
    }
  __syncthreads();
}

// The best k (<= kHead) keys of the row, sorted descending, into head[0, k); head[k, kHead)
// zeroed. All keys are distinct, so exactly k keys are >= the k-th largest.
__device__ void select_head(const Row& row, int k, uint64_t* head, uint32_t* hist, uint64_t* red) {
  uint64_t prefix = 0, prefix_mask = 0;
  int want = k;  // how many of the keys under the current prefix are still to take
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += kThreads) hist[b] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < row.vocab; i += kThreads) {
      const uint64_t key = row.key(i);
      if ((key & prefix_mask) == prefix) atomicAdd(&hist[(key >> shift) & 255], 1u);
    }
    __syncthreads();
    // The digit d where the count of keys with digit >= d reaches `want` (one thread).
    if (threadIdx.x == 0) {
      int d = 255;
      uint32_t above = 0;
      while (above + hist[d] < uint32_t(want)) above += hist[d--];
      red[0] = uint64_t(d);
      red[1] = above;
    }
    __syncthreads();
    const int d = int(red[0]);
    want -= int(red[1]);
    prefix |= uint64_t(d) << shift;
    prefix_mask |= uint64_t(255) << shift;
    __syncthreads();
  }
  // prefix is now the k-th largest key: gather every key >= it.
  uint32_t* n_taken = hist;
  if (threadIdx.x == 0) *n_taken = 0;
  for (int i = threadIdx.x; i < kHead; i += kThreads) head[i] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < row.vocab; i += kThreads) {
    const uint64_t key = row.key(i);
    if (key >= prefix) head[atomicAdd(n_taken, 1u)] = key;
  }
  bitonic_sort_desc(head, kHead);
}

__device__ void report_sample(DeviceError* err, int64_t row) {
  if (err != nullptr && atomicCAS(&err->code, 0, kErrSampleRow) == 0) {
    err->value = row;
    err->limit = 0;
  }
}

// The block's shared memory.
struct SampleShared {
  uint64_t head[kHead];
  uint32_t hist[256];
  uint64_t red[kWarps];
  double dred[kWarps];
  uint32_t chosen;
};

// Row r by the whole block. sorted: sort space for the whole row (sorted_len keys); null in
// the first launch, where a row that needs it is appended to `deferred` ([0]: count, then the
// rows) and left for the second.
__device__ void sample_row(int r, const float* __restrict__ logits,
                           const SampleRow* __restrict__ rows, const uint32_t* __restrict__ mask,
                           int vocab, SampleResult* __restrict__ results,
                           uint64_t* __restrict__ sorted, int sorted_len, int32_t* deferred,
                           DeviceError* err, SampleShared& sh) {
  uint64_t* head = sh.head;
  uint32_t* hist = sh.hist;
  uint64_t* red = sh.red;
  double* dred = sh.dred;
  uint32_t& chosen = sh.chosen;
  const int tid = threadIdx.x;
  const SampleRow p = rows[r];
  const Row row{logits + int64_t(r) * vocab,
                mask != nullptr ? mask + int64_t(r) * ((vocab + 31) / 32) : nullptr, vocab};
  SampleResult& out = results[r];
  if (!(p.temperature >= 0.0f) || !(p.top_p > 0.0f && p.top_p <= 1.0f) ||
      !(p.min_p >= 0.0f && p.min_p < 1.0f) || p.top_n > kSampleMaxTop ||
      !(p.uniform >= 0.0 && p.uniform < 1.0)) {
    if (tid == 0) {
      report_sample(err, r);
      out.token = UINT32_MAX, out.logprob = -INFINITY, out.n_top = 0;
    }
    return;
  }

  // Pass 1: the best allowed token (greedy's answer and the maximum), how many are allowed.
  uint64_t best = 0;
  uint32_t n_allowed = 0;
  for (int i = tid; i < vocab; i += kThreads) {
    if (!row.allowed(i)) continue;
    ++n_allowed;
    const float l = logits[int64_t(r) * vocab + i];
    // An allowed NaN or -inf still beats a disallowed token (key 0): greedy then takes the
    // lowest allowed index, as the host does.
    const uint64_t key = isnan(l) ? rank_key(-INFINITY, uint32_t(i)) : rank_key(l, uint32_t(i));
    best = key > best ? key : best;
  }
  best = block_reduce(best, red, [](uint64_t a, uint64_t b) { return a > b ? a : b; });
  n_allowed = uint32_t(block_reduce(uint64_t(n_allowed), red, [](uint64_t a, uint64_t b) { return a + b; }));
  if (n_allowed == 0) {
    if (tid == 0) out.token = UINT32_MAX, out.logprob = -INFINITY, out.n_top = 0;
    return;
  }
  const float top = key_value(best);  // the largest working logit

  // Pass 2: z for the log-probabilities (temperature 1), the mass at the row's temperature.
  const double T = p.temperature;
  double z = 0.0, mass = 0.0;
  for (int i = tid; i < vocab; i += kThreads) {
    const double l = row.work(i);
    z += exp(l - double(top));
    if (T > 0.0) mass += exp((l - double(top)) / T);
  }
  z = block_reduce(z, dred, [](double a, double b) { return a + b; });
  mass = block_reduce(mass, dred, [](double a, double b) { return a + b; });

  const bool has_k = p.top_k > 0 && p.top_k < uint32_t(vocab);
  const bool keeps_all = p.top_p >= 1.0f && p.min_p <= 0.0f && !has_k;
  int head_size = 0;  // head[0, head_size) holds the row's best keys, sorted
  if (p.temperature == 0.0f || top == -INFINITY) {
    // Greedy; or every allowed logit is -inf or NaN, where no weight is defined: the lowest
    // allowed index.
    if (tid == 0) chosen = key_index(best);
  } else if (keeps_all) {
    // Every token in index order: thread t takes a contiguous run, the runs' sums scanned.
    const int run = (vocab + kThreads - 1) / kThreads, b = min(tid * run, vocab), e = min(b + run, vocab);
    double mine = 0.0;
    for (int i = b; i < e; ++i) mine += exp((double(row.work(i)) - double(top)) / T);
    double total;
    const double before = block_exclusive_scan(mine, dred, &total);
    const double rr = p.uniform * total;
    if (tid == 0) chosen = UINT32_MAX;
    __syncthreads();
    if (rr >= before && rr < before + mine) {  // the draw falls in this run
      double left = rr - before;
      for (int i = b; i < e; ++i) {
        left -= exp((double(row.work(i)) - double(top)) / T);
        if (left < 0.0) {
          atomicMin(&chosen, uint32_t(i));  // two runs may claim it within rounding: the first
          break;
        }
      }
    }
    __syncthreads();
    if (tid == 0 && chosen == UINT32_MAX) {  // rounding: the last token with w > 0
      chosen = key_index(best);
      for (int i = vocab - 1; i >= 0; --i)
        if (exp((double(row.work(i)) - double(top)) / T) > 0.0) {
          chosen = uint32_t(i);
          break;
        }
    }
  } else {
    // Candidates by (logit descending, index ascending), cut to top_k.
    const int n_cand = has_k ? int(p.top_k) : vocab;
    const uint64_t* cand = head;
    double sum = 0.0;
    bool sum_known = false;
    bool in_head = n_cand <= kHead;
    if (!in_head && !has_k) {
      // Top-p / min-p over the whole vocabulary: the sorted head does when it reaches
      // top-p's mass and min-p's cut (the host sampler's test).
      select_head(row, kHead, head, hist, red);
      head_size = kHead;
      double head_mass = 0.0;
      if (tid == 0)
        for (int i = 0; i < kHead; ++i) head_mass += exp((double(key_value(head[i])) - double(top)) / T);
      if (tid == 0)
        red[0] = (p.top_p >= 1.0f || head_mass >= double(p.top_p) * mass) &&
                 (p.min_p <= 0.0f || exp((double(key_value(head[kHead - 1])) - double(top)) / T) < p.min_p);
      __syncthreads();
      in_head = red[0] != 0;
      sum = mass;  // normalised over every token, as n = vocab
      sum_known = true;
      __syncthreads();
    } else if (in_head) {
      select_head(row, n_cand, head, hist, red);
      head_size = n_cand;
    }
    int held = n_cand;  // candidates in cand[], in rank order
    if (in_head) {
      held = head_size;
    } else {  // the whole row, sorted in global scratch (the second launch)
      if (sorted == nullptr) {
        if (tid == 0) deferred[1 + atomicAdd(&deferred[0], 1)] = r;
        return;
      }
      for (int i = tid; i < sorted_len; i += kThreads) sorted[i] = i < vocab ? row.key(i) : 0;
      bitonic_sort_desc(sorted, sorted_len);
      cand = sorted;
    }
    if (tid == 0) {
      // Sequential, in the candidates' order, as the host: probabilities, min-p, top-p, draw.
      if (!sum_known)
        for (int i = 0; i < n_cand; ++i) sum += exp((double(key_value(cand[i])) - double(top)) / T);
      auto prob = [&](int i) { return exp((double(key_value(cand[i])) - double(top)) / T) / sum; };
      chosen =
          key_index(cand[sample_truncate_draw(prob, n_cand, held, p.min_p, p.top_p, p.uniform)]);
    }
  }
  __syncthreads();

  // Log-probabilities at temperature 1, and the top_n allowed tokens.
  const double log_z = double(top) + log(z);
  const int n_top = min(min(int(p.top_n), kSampleMaxTop), int(n_allowed));
  if (n_top > head_size) select_head(row, n_top, head, hist, red);
  if (tid == 0) {
    out.token = chosen;
    out.logprob = float(double(row.work(int(chosen))) - log_z);
    out.n_top = uint32_t(n_top);
    for (int i = 0; i < n_top; ++i) {
      out.top[i].token = key_index(head[i]);
      out.top[i].logprob = float(double(key_value(head[i])) - log_z);
    }
  }
}

// First launch: block r takes row r (leaving rows that need the whole-row sort to the second).
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* __restrict__ logits, const SampleRow* __restrict__ rows,
                  const uint32_t* __restrict__ mask, int vocab, SampleResult* __restrict__ results,
                  int32_t* deferred, DeviceError* err) {
  __shared__ SampleShared sh;
  sample_row(int(blockIdx.x), logits, rows, mask, vocab, results, nullptr, 0, deferred, err, sh);
}

// Second launch: block b takes the deferred rows b, b + gridDim.x, ..., sorting each whole
// in its own sort space.
__global__ void __launch_bounds__(kThreads)
    sample_sorted_kernel(const float* __restrict__ logits, const SampleRow* __restrict__ rows,
                         const uint32_t* __restrict__ mask, int vocab,
                         SampleResult* __restrict__ results, uint64_t* __restrict__ sort_space,
                         int sorted_len, const int32_t* deferred, DeviceError* err) {
  __shared__ SampleShared sh;
  const int n = deferred[0];
  for (int i = int(blockIdx.x); i < n; i += int(gridDim.x)) {
    sample_row(deferred[1 + i], logits, rows, mask, vocab, results,
               sort_space + int64_t(blockIdx.x) * sorted_len, sorted_len, nullptr, err, sh);
    __syncthreads();  // the shared memory is the next row's
  }
}

int sort_len(int64_t vocab) {
  int len = 1;
  while (len < vocab) len *= 2;
  return len;
}
size_t deferred_bytes(int64_t n_rows) {
  return (size_t(n_rows + 1) * sizeof(int32_t) + 255) / 256 * 256;
}

}  // namespace

size_t sample_scratch_bytes(int64_t n_rows, int64_t vocab) {
  if (n_rows == 0 || vocab < 1 || vocab > (int64_t(1) << 30)) return 0;
  return deferred_bytes(n_rows) +
         size_t(std::min<int64_t>(n_rows, kSortSlots)) * size_t(sort_len(vocab)) * sizeof(uint64_t);
}

cudaError_t launch_sample(cudaStream_t s, const float* logits, const SampleRow* rows, const uint32_t* mask,
                          int64_t n_rows, int64_t vocab, SampleResult* results, void* scratch,
                          DeviceError* err) {
  if (n_rows == 0) return cudaSuccess;
  if (vocab < 1 || vocab > (int64_t(1) << 30)) return cudaErrorInvalidValue;
  int32_t* deferred = static_cast<int32_t*>(scratch);
  uint64_t* sort_space =
      reinterpret_cast<uint64_t*>(static_cast<char*>(scratch) + deferred_bytes(n_rows));
  if (cudaError_t e = cudaMemsetAsync(deferred, 0, sizeof(int32_t), s); e != cudaSuccess) return e;
  sample_kernel<<<unsigned(n_rows), kThreads, 0, s>>>(logits, rows, mask, int(vocab), results,
                                                      deferred, err);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  sample_sorted_kernel<<<unsigned(std::min<int64_t>(n_rows, kSortSlots)), kThreads, 0, s>>>(
      logits, rows, mask, int(vocab), results, sort_space, sort_len(vocab), deferred, err);
  return cudaGetLastError();
}

}  // namespace gptoss::cuda
