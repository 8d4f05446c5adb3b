// Fast MoE block. Tokens are grouped by expert so that each active expert's weights stream
// from memory once per call, whatever the number of tokens (decode: 1 token per expert, a
// GEMV; prefill: a GEMM over the expert's tokens):
//   1. gather:  X_e = rows of x routed to expert e (kernel order), experts ascending
//   2. mlp1 + SwiGLU, fused: each piece computes 32 rows (16 glu/linear pairs) of
//      h = mlp1[e] X_e for all of e's tokens in a scratch tile and writes the activations
//      straight into A_e (kernel order of mlp2), so h never reaches memory
//   3. mlp2:    Y_e = mlp2[e] A_e + b2[e], pieces of 32 output rows
//   4. out[t] = sum over k of weight[t, k] * Y, in k order as the reference does.
// Each piece decodes the slice of the biases its rows need.
// In the fast precision mode X_e and A_e are quantized to int8 (whole arrays, in pieces over
// the pool) before the pass that reads them, and the matmuls are the int8 MXFP4 kernels.
// Steps 2 and 3 are one dynamically scheduled pass each over (expert, row range) pieces.
#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

#include "choose.hpp"
#include "ops.hpp"
#include "pieces.hpp"
#include "q8_storage.hpp"

namespace gptoss::cpu {
using namespace ops;

namespace {
constexpr size_t kMoeRowGrain = 32;  // rows of mlp1 / mlp2 per piece, at least

struct ExpertGroup {
  size_t expert;
  size_t first;  // index of its first row in the grouped arrays
  size_t count;  // tokens routed to it
};
}  // namespace

gptoss_status op_moe(Stream* stream, const float* x, const int32_t* expert_ids,
                     const float* expert_weights, const Weight* mlp1, const Weight* mlp1_bias,
                     const Weight* mlp2, const Weight* mlp2_bias, size_t n_tokens, size_t dim,
                     size_t inter, size_t top_k, float limit, float* out) {
  Device& dev = device_of(stream);
  if (dev.isa == Isa::scalar)
    return ref_moe(stream, x, expert_ids, expert_weights, mlp1, mlp1_bias, mlp2, mlp2_bias,
                   n_tokens, dim, inter, top_k, limit, out);
  const Weight &w1 = *mlp1, &w2 = *mlp2;
  const Weight* b1 = mlp1_bias;
  const Weight* b2 = mlp2_bias;
  const size_t n_experts = size_t(w1.shape[0]);
  if (w1.ndim != 3 || size_t(w1.shape[1]) != 2 * inter || w1.cols != dim || w2.ndim != 3 ||
      size_t(w2.shape[1]) != dim || w2.cols != inter || size_t(w2.shape[0]) != n_experts)
    return gptoss_status_invalid_argument;
  if ((b1 && (b1->rows != n_experts || b1->cols != 2 * inter)) ||
      (b2 && (b2->rows != n_experts || b2->cols != dim)))
    return gptoss_status_invalid_argument;
  const size_t n_slots = n_tokens * top_k;
  for (size_t i = 0; i < n_slots; ++i)
    if (expert_ids[i] < 0) return gptoss_status_invalid_argument;
  try {
    // Group the (token, k) slots by expert; slot_row[tk] = its row in the grouped arrays, or
    // kNotHeld for an expert outside the slice these weights hold (it adds nothing here).
    constexpr size_t kNotHeld = ~size_t(0);
    std::vector<size_t> count(n_experts, 0), slot_row(n_slots, kNotHeld);
    auto local = [&](size_t i) { return int64_t(expert_ids[i]) - w1.first_expert; };
    auto held = [&](size_t i) { return local(i) >= 0 && size_t(local(i)) < n_experts; };
    for (size_t i = 0; i < n_slots; ++i)
      if (held(i)) ++count[size_t(local(i))];
    std::vector<ExpertGroup> groups;
    std::vector<size_t> cursor(n_experts, 0);
    size_t n_rows = 0;
    for (size_t e = 0; e < n_experts; ++e) {
      if (count[e] == 0) continue;
      groups.push_back({e, n_rows, count[e]});
      cursor[e] = n_rows;
      n_rows += count[e];
    }
    for (size_t i = 0; i < n_slots; ++i)
      if (held(i)) slot_row[i] = cursor[size_t(local(i))]++;

    const bool perm1 = w1.dtype == gptoss_dtype_mxfp4, perm2 = w2.dtype == gptoss_dtype_mxfp4;
    const Kernels& k = *dev.kernels;
    const bool fast = dev.quantize_activations;
    const bool q1 = acts_for(k, w1, n_tokens, fast) == MatmulActs::q8;
    const bool q2 = acts_for(k, w2, n_tokens, fast) == MatmulActs::q8;
    // The big temporaries live as long as the calling thread: fresh ones each call would be
    // new pages from the kernel (page faults and zeroing).
    // (Bound to locals here: inside the lambdas below, run on pool threads, a thread_local's
    // name would mean that thread's instance.)
    struct Temps {
      std::vector<float> xg, act, yg;
      Q8Storage tq, xq, aq;
    };
    thread_local Temps temps;
    std::vector<float>&xg = temps.xg, &act = temps.act, &yg = temps.yg;
    act.resize(std::max(act.size(), n_slots * inter));
    yg.resize(std::max(yg.size(), n_slots * dim));

    // Rows of `src` (natural order, `cols` wide) quantized into mem, in pieces over the pool.
    auto quantize = [&](const float* src, size_t rows, size_t cols, Q8Storage& mem) -> Q8Acts& {
      Q8Acts& q = mem.prepare(rows, cols);
      for_each_piece(dev.pool, rows, 16, double(rows) * double(cols) * 0.25, [&](size_t a, size_t e) {
        Q8Acts part = q;  // rows [a, e): same layout, shifted pointers
        part.q += a * q.q_stride;
        part.half_d += a * q.b_stride;
        part.q12f += a * q.b_stride;
        part.neg_q12 += a * q.b_stride;
        part.neg_q128 += a * q.b_stride;
        k.quantize_q8(src + a * cols, cols, e - a, part);
      });
      return q;
    };
    // X_e: int8 rows (each token quantized once, then copied to its k slots) or fp32 rows in
    // the kernel order of w1.
    ActsView x1;  // X_e as w1's kernel takes it
    if (q1) {
      const Q8Acts& tq = quantize(x, n_tokens, dim, temps.tq);
      Q8Acts& slots = temps.xq.prepare(n_slots, dim);
      for (size_t i = 0; i < n_slots; ++i)
        if (slot_row[i] != kNotHeld) copy_q8_row(tq, i / top_k, slots, slot_row[i]);
      x1.q8 = &slots;
    } else {
      xg.resize(std::max(xg.size(), n_slots * dim));
      for (size_t i = 0; i < n_slots; ++i) {
        if (slot_row[i] == kNotHeld) continue;
        const float* src = x + (i / top_k) * dim;
        float* dst = xg.data() + slot_row[i] * dim;
        if (perm1)
          permute_for_mxfp4(src, dim, 1, dim, dst);
        else
          std::copy(src, src + dim, dst);
      }
      x1 = {xg.data(), dim, nullptr};
    }
    // Biases are decoded by the pieces, each the slice of its own rows (decoding all active
    // experts' bias rows up front is a serial pass over scattered memory).
    // Pieces: (group, row range); piece p of group g covers rows [p * grain, ...).
    // Few tokens per expert (decode, also of a few sequences together: each expert then
    // multiplies one to top_k-sharing tokens, GEMVs): longer pieces, see rows_per_piece.
    size_t most = 0;
    for (const ExpertGroup& g : groups) most = std::max(most, g.count);
    const size_t grain = rows_per_piece(2 * inter * groups.size(), most, dev.pool, kMoeRowGrain);
    auto run_pieces = [&](size_t rows_per_expert, auto&& body) {
      const size_t per = (rows_per_expert + grain - 1) / grain;
      const double work = double(n_slots) * double(rows_per_expert) * double(dim);
      for_each_piece(dev.pool, groups.size() * per, 1, work, [&](size_t b, size_t e) {
        for (size_t p = b; p < e; ++p) {
          const size_t r0 = (p % per) * grain;
          body(groups[p / per], r0, std::min(rows_per_expert, r0 + grain));
        }
      });
    };

    run_pieces(2 * inter, [&](const ExpertGroup& g, size_t r0, size_t r1) {
      float* h = thread_scratch(g.count * grain, 0);
      run_matmul(choose_matmul(k, w1, n_tokens, g.count, fast), k, w1, g.expert * 2 * inter + r0,
                 r1 - r0, x1, g.first, g.count, h, grain);
      // A_e in natural order for the int8 path (its quantizer permutes), else in the order the
      // fp32 kernels expect for w2.
      thread_local std::vector<float> bias;  // mlp1 bias of rows [r0, r1)
      bias.resize(r1 - r0);
      if (b1) decode_row_range(*b1, g.expert, r0, r1 - r0, bias.data());
      const float* bb = b1 ? bias.data() : nullptr;
      const size_t i0 = r0 / 2, n_out = (r1 - r0) / 2;
      thread_local std::vector<float> tmp;
      for (size_t n = 0; n < g.count; ++n) {
        float* a = act.data() + (g.first + n) * inter;
        if (q2 || !perm2) {
          k.swiglu(h + n * grain, bb, n_out, limit, a + i0);
        } else {
          tmp.resize(n_out);
          k.swiglu(h + n * grain, bb, n_out, limit, tmp.data());
          for (size_t j = 0; j < n_out; ++j) a[mxfp4_kernel_pos(i0 + j)] = tmp[j];
        }
      }
    });

    ActsView x2;  // A_e as w2's kernel takes it
    if (q2) x2.q8 = &quantize(act.data(), n_rows, inter, temps.aq);
    else x2 = {act.data(), inter, nullptr};
    run_pieces(dim, [&](const ExpertGroup& g, size_t r0, size_t r1) {
      float* y = yg.data() + g.first * dim + r0;
      run_matmul(choose_matmul(k, w2, n_tokens, g.count, fast), k, w2, g.expert * dim + r0, r1 - r0,
                 x2, g.first, g.count, y, dim);
      if (b2) {  // Y + b2, as the reference adds it before weighting
        thread_local std::vector<float> bias;
        bias.resize(r1 - r0);
        decode_row_range(*b2, g.expert, r0, r1 - r0, bias.data());
        for (size_t n = 0; n < g.count; ++n)
          for (size_t r = 0; r < r1 - r0; ++r) y[n * dim + r] += bias[r];
      }
    });

    for_each_piece(dev.pool, n_tokens, 8, double(n_slots) * double(dim), [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) {
        float* o = out + t * dim;
        std::fill(o, o + dim, 0.0f);
        for (size_t k = 0; k < top_k; ++k) {
          const size_t tk = t * top_k + k;
          if (slot_row[tk] == kNotHeld) continue;
          const float wk = expert_weights[tk];
          const float* y = yg.data() + slot_row[tk] * dim;  // includes b2
          for (size_t r = 0; r < dim; ++r) o[r] += wk * y[r];
        }
      }
    });
  } catch (const std::bad_alloc&) {
    return gptoss_status_insufficient_memory;
  }
  return gptoss_status_success;
}

}  // namespace gptoss::cpu
