// The MoE slot: expert weights checked, tokens grouped by expert on the device, both
// projections (int8 GEMV, fp32 GEMV or tensor-core GEMM: kernel_choice, ops_util.hpp) and the
// weighted sum.
#include <algorithm>
#include <string>

#include "ops_util.hpp"

namespace gptoss::cuda::ops {
namespace {

// One pass of the MoE over n tokens: grouping, both projections, the weighted sum.
gptoss_status moe_pass(Stream& s, const float* x, const int32_t* ids, const float* gates, const Weight& w1,
                       const float* b1, const Weight& w2, const float* b2, size_t n_tokens, size_t top_k,
                       float limit, bool few_tokens, float* out) {
  const Mxfp4View m1 = w1.mxfp4, m2 = w2.mxfp4;
  const int64_t n = int64_t(n_tokens), H = m2.rows, In = m2.cols, A = n * int64_t(top_k), E = m1.experts;
  const bool exact = s.dev->exact, q8 = !exact && few_tokens;
  const int32_t tile_m = !exact && !few_tokens ? kGemmTileM : (n == 1 ? 1 : kMoeGemvTile);
  // Scratch: routing, then the activations between the projections and the expert outputs.
  auto layout = [&](Carve& c, MoeRouting& r, int8_t*& xq, float*& xd, int8_t*& aq, float*& ad, float*& act,
                    float*& y) {
    int32_t* offsets = c.take<int32_t>(size_t(E) + 1);
    int32_t* tiles = c.take<int32_t>(size_t(E) + 1);
    int32_t* order = c.take<int32_t>(size_t(A));
    r = MoeRouting{offsets, tiles, order, int32_t(E), tile_m};
    xq = nullptr, xd = nullptr, aq = nullptr, ad = nullptr, act = nullptr;
    if (q8) {
      xq = c.take<int8_t>(size_t(n * m1.cols));
      xd = c.take<float>(size_t(n * m1.cols / 32));
      aq = c.take<int8_t>(size_t(A * In));
      ad = c.take<float>(size_t(A * In / 32));
    } else {
      act = c.take<float>(size_t(A * In));
    }
    y = c.take<float>(size_t(A * H));
  };
  MoeRouting routing;
  int8_t *xq, *aq;
  float *xd, *ad, *act, *y;
  Carve measure;
  layout(measure, routing, xq, xd, aq, ad, act, y);
  void* ws;
  if (gptoss_status st = s.workspace.reserve(*s.dev, s.stream, measure.used(), &ws);
      st != gptoss_status_success)
    return st;
  Carve carve(ws);
  layout(carve, routing, xq, xd, aq, ad, act, y);

  const int64_t tiles = moe_max_tiles(A, E, tile_m);
  const int k = int(top_k);
  cudaError_t e = launch_moe_group(
      s.stream, ids, A, int32_t(E), w1.first_expert, tile_m, const_cast<int32_t*>(routing.offsets),
      const_cast<int32_t*>(routing.tile_offsets), const_cast<int32_t*>(routing.order));
  if (q8) {
    if (e == cudaSuccess) e = launch_quantize_q8(s.stream, x, n, m1.cols, xq, xd);
    if (e == cudaSuccess)
      e = launch_moe_q8(s.stream, true, xq, xd, k, m1, b1, routing, tiles, limit, aq, ad, nullptr);
    if (e == cudaSuccess)
      e = launch_moe_q8(s.stream, false, aq, ad, 1, m2, b2, routing, tiles, limit, nullptr, nullptr, y);
  } else if (exact) {
    if (e == cudaSuccess) e = launch_moe_f32(s.stream, true, x, k, m1, b1, routing, tiles, limit, act);
    if (e == cudaSuccess) e = launch_moe_f32(s.stream, false, act, 1, m2, b2, routing, tiles, limit, y);
  } else {
    if (e == cudaSuccess) e = launch_gemm_moe(s.stream, true, x, k, m1, b1, routing, tiles, limit, act);
    if (e == cudaSuccess) e = launch_gemm_moe(s.stream, false, act, 1, m2, b2, routing, tiles, limit, y);
  }
  if (e == cudaSuccess)
    e = launch_moe_combine(s.stream, y, ids, gates, n, k, H, w1.first_expert, int32_t(E), out);
  return launched(s, e, "moe");
}

}  // namespace

// A dense linear whose weight is one MXFP4 matrix (the ABI allows it; the model's MXFP4
// tensors are experts): the MoE's second projection with every token routed to expert 0,
// so its three arithmetics (exact fp32, int8, tensor cores) apply unchanged.
gptoss_status mxfp4_linear(Stream& s, const float* x, const Weight& w, const float* bias, size_t n_tokens,
                           float* out) {
  if (n_tokens == 0) return gptoss_status_success;
  const Mxfp4View m = w.mxfp4;
  const int64_t n = int64_t(n_tokens);
  const bool exact = s.dev->exact, few = !kernel_choice(*s.dev, n_tokens).matrix_units;
  const int32_t tile_m = !exact && !few ? kGemmTileM : (n == 1 ? 1 : kMoeGemvTile);
  auto layout = [&](Carve& c, int32_t*& ids, MoeRouting& r, int8_t*& xq, float*& xd) {
    ids = c.take<int32_t>(size_t(n));
    int32_t* offsets = c.take<int32_t>(2);
    int32_t* tiles = c.take<int32_t>(2);
    r = MoeRouting{offsets, tiles, c.take<int32_t>(size_t(n)), 1, tile_m};
    xq = !exact && few ? c.take<int8_t>(size_t(n * m.cols)) : nullptr;
    xd = !exact && few ? c.take<float>(size_t(n * m.cols / 32)) : nullptr;
  };
  int32_t* ids;
  MoeRouting routing;
  int8_t* xq;
  float* xd;
  Carve measure;
  layout(measure, ids, routing, xq, xd);
  void* ws;
  if (gptoss_status st = s.workspace.reserve(*s.dev, s.stream, measure.used(), &ws);
      st != gptoss_status_success)
    return st;
  Carve carve(ws);
  layout(carve, ids, routing, xq, xd);
  const int64_t tiles = moe_max_tiles(n, 1, tile_m);
  cudaError_t e = cudaMemsetAsync(ids, 0, size_t(n) * sizeof(int32_t), s.stream);
  if (e == cudaSuccess)
    e = launch_moe_group(s.stream, ids, n, 1, 0, tile_m, const_cast<int32_t*>(routing.offsets),
                         const_cast<int32_t*>(routing.tile_offsets), const_cast<int32_t*>(routing.order));
  if (!exact && few) {
    if (e == cudaSuccess) e = launch_quantize_q8(s.stream, x, n, m.cols, xq, xd);
    if (e == cudaSuccess)
      e = launch_moe_q8(s.stream, false, xq, xd, 1, m, bias, routing, tiles, 0.0f, nullptr, nullptr, out);
  } else if (exact) {
    if (e == cudaSuccess) e = launch_moe_f32(s.stream, false, x, 1, m, bias, routing, tiles, 0.0f, out);
  } else {
    if (e == cudaSuccess) e = launch_gemm_moe(s.stream, false, x, 1, m, bias, routing, tiles, 0.0f, out);
  }
  return launched(s, e, "linear");
}

gptoss_status do_moe(Stream& s, Buf x, Buf ids, Buf gates, Wt mlp1, Wt mlp1_bias, Wt mlp2, Wt mlp2_bias,
                     size_t n_tokens, size_t dim, size_t inter, size_t top_k, float limit, Buf out) {
  if (mlp1 == nullptr || mlp2 == nullptr) return bad("moe", "no expert weights");
  const Weight &w1 = weight_of(mlp1), &w2 = weight_of(mlp2);
  if (w1.kind != Weight::Kind::mxfp4 || w2.kind != Weight::Kind::mxfp4)
    return fail(gptoss_status_unsupported_argument,
                "moe: the CUDA backend takes MXFP4 experts (" + w1.name + ")");
  const int64_t E = w1.mxfp4.experts;
  if (w1.mxfp4.rows != int64_t(2 * inter) || w1.mxfp4.cols != int64_t(dim) || w2.mxfp4.experts != E ||
      w2.mxfp4.rows != int64_t(dim) || w2.mxfp4.cols != int64_t(inter) || w2.first_expert != w1.first_expert)
    return bad("moe", "expert shapes do not match dim " + std::to_string(dim) + ", intermediate " +
                          std::to_string(inter));
  if (inter % 32 != 0 || E > kMaxExperts || top_k == 0)
    return fail(gptoss_status_unsupported_argument, "moe: intermediate " + std::to_string(inter) + ", " +
                                                        std::to_string(E) + " experts, top " +
                                                        std::to_string(top_k));
  const float *b1, *b2;
  if (gptoss_status st = vector_arg(mlp1_bias, E * 2 * int64_t(inter), "moe", "mlp1 bias", true, &b1);
      st != gptoss_status_success)
    return st;
  if (gptoss_status st = vector_arg(mlp2_bias, E * int64_t(dim), "moe", "mlp2 bias", true, &b2);
      st != gptoss_status_success)
    return st;
  if (n_tokens == 0) return gptoss_status_success;
  if (x == nullptr || ids == nullptr || gates == nullptr || out == nullptr) return bad("moe", "null buffer");
  // Long prefill chunks in pieces: the scratch between the projections is 2 x 4 floats per
  // token and unit (94 MB for 2048 tokens of the 20b), and would grow without bound.
  for (size_t t0 = 0; t0 < n_tokens; t0 += kMoeMaxTokens) {
    const size_t n = std::min(kMoeMaxTokens, n_tokens - t0);
    if (gptoss_status st =
            moe_pass(s, ptr<const float>(x) + t0 * dim, ptr<const int32_t>(ids) + t0 * top_k,
                     ptr<const float>(gates) + t0 * top_k, w1, b1, w2, b2, n, top_k, limit,
                     !kernel_choice(*s.dev, n_tokens).matrix_units, ptr<float>(out) + t0 * dim);
        st != gptoss_status_success)
      return st;
  }
  return gptoss_status_success;
}

}  // namespace gptoss::cuda::ops
