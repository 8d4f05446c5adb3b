// Fast dense ops: linear (attention projections, unembedding) and the router, on the kernel
// table of the device's instruction-set level. Cheap elementwise ops reuse the reference.
#include <algorithm>
#include <cmath>
#include <new>
#include <numeric>
#include <vector>

#include "attention_kernels.hpp"
#include "choose.hpp"
#include "dense_bf16_kernels.hpp"
#include "ops.hpp"
#include "pieces.hpp"
#include "q8_storage.hpp"
#include "router_topk.hpp"

namespace gptoss::cpu {
using namespace ops;

namespace {

// Rows per piece of dynamically scheduled work in a batch: two panels of the fp32 or the int8
// matmul; decode takes longer pieces (rows_per_piece).
constexpr size_t kRowGrain = 32;

// x in the order the kernels expect for w (kernel order for MXFP4), reusing `storage`.
const float* activations_for(const Weight& w, const float* x, size_t n_tok,
                             std::vector<float>& storage) {
  if (w.dtype != gptoss_dtype_mxfp4) return x;
  storage.resize(n_tok * w.cols);
  permute_for_mxfp4(x, w.cols, n_tok, w.cols, storage.data());
  return storage.data();
}

}  // namespace

// x += y, then the rmsnorm of each row: the same arithmetic as add then rmsnorm, in one pass
// per row and over the pool.
gptoss_status op_add_rmsnorm(Stream* stream, float* x, const float* y, const Weight* scale,
                             size_t n_tokens, size_t dim, float eps, float* out) {
  Device& dev = device_of(stream);
  const Weight& s = *scale;
  if (s.rows * s.cols != dim) return gptoss_status_invalid_argument;
  for_each_piece(dev.pool, n_tokens, 1, double(n_tokens) * double(dim) * 4,
                 [&](size_t t0, size_t t1) {
                   float* g = thread_scratch(dim, 3);
                   decode_row(s, 0, g);
                   for (size_t t = t0; t < t1; ++t) {
                     float* xr = x + t * dim;
                     const float* yr = y + t * dim;
                     float ss = 0.0f;
                     for (size_t i = 0; i < dim; ++i) {
                       xr[i] += yr[i];
                       ss += xr[i] * xr[i];
                     }
                     const float r = 1.0f / std::sqrt(ss / float(dim) + eps);
                     float* o = out + t * dim;
                     for (size_t i = 0; i < dim; ++i) o[i] = xr[i] * r * g[i];
                   }
                 });
  return gptoss_status_success;
}

gptoss_status op_linear(Stream* stream, const float* x, const Weight* weight, const Weight* bias,
                        size_t n_tokens, size_t n_in, size_t n_out, float* out) {
  Device& dev = device_of(stream);
  if (dev.isa == Isa::scalar)
    return ref_linear(stream, x, weight, bias, n_tokens, n_in, n_out, out);
  const Weight& w = *weight;
  const Weight* bw = bias;
  if (w.cols != n_in || w.rows != n_out) return gptoss_status_invalid_argument;
  if (bw != nullptr && bw->rows * bw->cols != n_out) return gptoss_status_invalid_argument;
  try {
    thread_local std::vector<float> xs_temp;  // reused: see op_moe
    thread_local Q8Storage q8_temp;
    thread_local Q16Storage q16_temp;
    std::vector<float>& xs = xs_temp;
    Q8Storage& q8 = q8_temp;
    // Each piece owns a range of output rows for every token: each weight row is read once.
    const auto add_bias = [&](size_t r0, size_t r1) {
      if (bw == nullptr) return;
      thread_local std::vector<float> b;  // each piece decodes its own slice of the bias
      b.resize(r1 - r0);
      decode_row_range(*bw, 0, r0, r1 - r0, b.data());
      for (size_t t = 0; t < n_tokens; ++t)
        for (size_t r = r0; r < r1; ++r) out[t * n_out + r] += b[r - r0];
    };
    const double work = double(n_out) * double(n_in) * double(n_tokens);
    const Kernels& k = *dev.kernels;
    const bool fast = dev.quantize_activations;
    const MatmulKernel kernel = choose_matmul(k, w, n_tokens, n_tokens, fast);
    ActsView acts;
    switch (acts_of(kernel)) {
      case MatmulActs::bf16_pairs: {
        thread_local std::vector<float> x2_temp;  // reused: see op_moe
        std::vector<float>& x2 = x2_temp;
        acts.ld = dense_bf16_pairs_stride(n_in);
        x2.assign(n_tokens * acts.ld, 0.0f);
        for (size_t t = 0; t < n_tokens; ++t)
          k.attention_bf16->round_pairs(x + t * n_in, n_in / 2, x2.data() + t * acts.ld);
        acts.x = x2.data();
        break;
      }
      case MatmulActs::q8: {  // the int8 quantizer folds the MXFP4 permutation in
        Q8Acts& q = q8.prepare(n_tokens, n_in);
        k.quantize_q8(x, n_in, n_tokens, q);
        acts.q8 = &q;
        break;
      }
      case MatmulActs::q16: {
        Q16Acts& q = q16_temp.prepare(n_tokens, n_in);
        k.quantize_q16(x, n_in, n_tokens, q);
        acts.q16 = &q;
        break;
      }
      case MatmulActs::fp32:  // the fp32 kernels need the MXFP4 permutation done
        acts.x = activations_for(w, x, n_tokens, xs);
        acts.ld = n_in;
        break;
    }
    // Every token gets its one-token GEMV's result (a step's bf16 pairs; one token): the results
    // do not depend on the cut, so the pool may merge pieces (for_each_piece): fine pieces for
    // the end of the op, long calls before it.
    const bool pairs = kernel == MatmulKernel::bf16_pairs;
    const bool merge = pairs || n_tokens == 1;
    const size_t grain =
        rows_per_piece(n_out, pairs ? 1 : n_tokens, dev.pool, kRowGrain, merge ? 64 : 16);
    for_each_piece(
        dev.pool, n_out, grain, work,
        [&](size_t r0, size_t r1) {
          run_matmul(kernel, k, w, r0, r1 - r0, acts, 0, n_tokens, out + r0, n_out);
          add_bias(r0, r1);
        },
        merge);
  } catch (const std::bad_alloc&) {
    return gptoss_status_insufficient_memory;
  }
  return gptoss_status_success;
}

gptoss_status op_router(Stream* stream, const float* x, const Weight* weight, const Weight* bias,
                        size_t n_tokens, size_t dim, size_t n_experts, size_t top_k,
                        int32_t* expert_ids, float* expert_weights) {
  Device& dev = device_of(stream);
  if (dev.isa == Isa::scalar)
    return ref_router(stream, x, weight, bias, n_tokens, dim, n_experts, top_k, expert_ids,
                      expert_weights);
  const Weight& w = *weight;
  if (w.rows != n_experts || w.cols != dim || top_k == 0 || top_k > n_experts)
    return gptoss_status_invalid_argument;
  try {
    std::vector<float> logits(n_tokens * n_experts);
    const gptoss_status st =
        op_linear(stream, x, weight, bias, n_tokens, dim, n_experts, logits.data());
    if (st != gptoss_status_success) return st;
    std::vector<size_t> order;
    for (size_t t = 0; t < n_tokens; ++t)
      router_topk_softmax(logits.data() + t * n_experts, n_experts, top_k, expert_ids + t * top_k,
                          expert_weights + t * top_k, order);
  } catch (const std::bad_alloc&) {
    return gptoss_status_insufficient_memory;
  }
  return gptoss_status_success;
}

}  // namespace gptoss::cpu
