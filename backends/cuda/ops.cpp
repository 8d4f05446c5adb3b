// The op slots: the host-side checks of each call (shapes against the weights and the cache),
// the choice of kernel, scratch from the stream's workspace, and, inside a forward step, the
// op's record for the step's CUDA graph (step_graph.hpp).
//
// Kernel choice: kernel_choice (ops_util.hpp) decides, the same for every op of a call.
// By default (batch-invariant) every call takes the GEMV-style kernels (gemv.cu; moe_gemv.cu:
// fp32 in exact precision, int8 activations in fast) and the fp32 attention with each
// token's keys split by its own span. With GPTOSS_CUDA_BATCH_INVARIANT=0, fast-precision calls
// of more than kGemvMaxTokens tokens go to the tensor cores (gemm_mma.cu, attention_mma.cu)
// and longer exact calls to the one-pass attention. The HIP build runs its MFMA GEMM only with
// GPTOSS_HIP_MFMA=1 too and has no matrix-unit attention: attention_mma_supported() is false.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "../common/yarn.hpp"
#include "ops_util.hpp"

namespace gptoss::cuda {
namespace ops {
namespace {

static_assert(sizeof(AttnSeq) == sizeof(gptoss_attn_seq) &&
                  offsetof(AttnSeq, n_q) == offsetof(gptoss_attn_seq, n_q) &&
                  offsetof(AttnSeq, page_table_offset) == offsetof(gptoss_attn_seq, page_table_offset),
              "AttnSeq mirrors gptoss_attn_seq");
static_assert(sizeof(SampleRow) == sizeof(gptoss_sample_row) &&
                  offsetof(SampleRow, uniform) == offsetof(gptoss_sample_row, uniform) &&
                  offsetof(SampleRow, top_n) == offsetof(gptoss_sample_row, top_n),
              "SampleRow mirrors gptoss_sample_row");
static_assert(sizeof(SampleResult) == sizeof(gptoss_sample_result) &&
                  kSampleMaxTop == GPTOSS_SAMPLE_MAX_TOP &&
                  offsetof(SampleResult, top) == offsetof(gptoss_sample_result, top),
              "SampleResult mirrors gptoss_sample_result");

// YaRN inverse frequencies (OpenAI's reference; rounded ramp bounds only with truncate), as
// the CPU reference computes them, in double; kept per stream for the last parameters.
gptoss_status rope_table(Stream& s, const gptoss_rope_params& p, size_t head_dim, const char* op) {
  if (head_dim == 0 || head_dim % 2 != 0 || head_dim / 2 > size_t(kMaxRopeHalf))
    return fail(gptoss_status_unsupported_argument, std::string(op) + ": head_dim " +
                                                        std::to_string(head_dim) + " (even, at most " +
                                                        std::to_string(2 * kMaxRopeHalf) + ")");
  const gptoss_rope_params& q = s.rope_params;
  if (s.rope_head_dim == head_dim && q.theta == p.theta && q.scaling_factor == p.scaling_factor &&
      q.original_context == p.original_context && q.beta_fast == p.beta_fast && q.beta_slow == p.beta_slow &&
      q.truncate == p.truncate)
    return gptoss_status_success;
  RopeTable& t = s.rope;
  const size_t half = head_dim / 2;
  t.half = int32_t(half);
  t.concentration = backends::yarn_inv_freq(p, head_dim, t.inv_freq);
  s.rope_params = p;
  s.rope_head_dim = head_dim;
  return gptoss_status_success;
}

// ---- the ops ---------------------------------------------------------------------------

gptoss_status do_embedding(Stream& s, Wt w, Buf tokens, size_t n, Buf out) {
  DenseView table;
  if (gptoss_status st = dense_arg(w, -1, -1, "embedding", &table); st != gptoss_status_success) return st;
  if (n > 0 && (tokens == nullptr || out == nullptr)) return bad("embedding", "null buffer");
  return launched(s,
                  launch_embedding(s.stream, table, ptr<const int32_t>(tokens), int64_t(n), ptr<float>(out),
                                   s.errors.device()),
                  "embedding");
}

gptoss_status do_rmsnorm(Stream& s, Buf x, Buf residual, Wt scale, size_t n, size_t dim, float eps, Buf out) {
  const char* op = residual != nullptr ? "add_rmsnorm" : "rmsnorm";
  const float* g;
  if (gptoss_status st = vector_arg(scale, int64_t(dim), op, "scale", false, &g); st != gptoss_status_success)
    return st;
  if (n > 0 && (x == nullptr || out == nullptr)) return bad(op, "null buffer");
  return launched(s,
                  launch_rmsnorm(s.stream, ptr<float>(x), ptr<const float>(residual), g, int64_t(n),
                                 int64_t(dim), eps, ptr<float>(out)),
                  op);
}

gptoss_status run_linear(Stream& s, Buf x, const LinearSegs& segs, size_t n_tokens, size_t n_in,
                         const char* op) {
  if (n_tokens > 0 && x == nullptr) return bad(op, "null buffer");
  bool same = true;  // one launch takes matrices of one dtype
  for (int j = 1; j < segs.n; ++j) same &= segs.w[j].dt == segs.w[0].dt;
  if (!same) {
    for (int j = 0; j < segs.n; ++j)
      if (gptoss_status st =
              run_linear(s, x, one_linear(segs.w[j], segs.bias[j], segs.out[j]), n_tokens, n_in, op);
          st != gptoss_status_success)
        return st;
    return gptoss_status_success;
  }
  // (Rows of a length not a multiple of 8, which no real model has, take the GEMV.)
  if (!kernel_choice(*s.dev, n_tokens).matrix_units || n_in % 8 != 0)
    return launched(s, launch_gemv(s.stream, ptr<const float>(x), segs, int64_t(n_tokens)), op);
  return launched(s, launch_gemm_dense(s.stream, ptr<const float>(x), segs, int64_t(n_tokens)), op);
}

gptoss_status do_linear(Stream& s, Buf x, Wt w, Wt b, size_t n, size_t n_in, size_t n_out, Buf out) {
  const float* bias;
  if (gptoss_status st = vector_arg(b, int64_t(n_out), "linear", "bias", true, &bias);
      st != gptoss_status_success)
    return st;
  if (n > 0 && (x == nullptr || out == nullptr)) return bad("linear", "null buffer");
  if (w != nullptr && weight_of(w).kind == Weight::Kind::mxfp4) {
    const Weight& m = weight_of(w);
    if (m.mxfp4.experts != 1 || m.mxfp4.rows != int64_t(n_out) || m.mxfp4.cols != int64_t(n_in))
      return bad("linear",
                 m.name + " is not one [" + std::to_string(n_out) + ", " + std::to_string(n_in) + "] matrix");
    return mxfp4_linear(s, ptr<const float>(x), m, bias, n, ptr<float>(out));
  }
  DenseView m;
  if (gptoss_status st = dense_arg(w, int64_t(n_out), int64_t(n_in), "linear", &m);
      st != gptoss_status_success)
    return st;
  return run_linear(s, x, one_linear(m, bias, ptr<float>(out)), n, n_in, "linear");
}

gptoss_status do_qkv(Stream& s, Buf x, Wt wq, Wt bq, Wt wk, Wt bk, Wt wv, Wt bv, size_t n, size_t n_in,
                     size_t q_dim, size_t kv_dim, Buf q, Buf k, Buf v) {
  LinearSegs segs{3, {}, {}, {ptr<float>(q), ptr<float>(k), ptr<float>(v)}};
  const Wt w[3] = {wq, wk, wv}, b[3] = {bq, bk, bv};
  const size_t rows[3] = {q_dim, kv_dim, kv_dim};
  for (int j = 0; j < 3; ++j) {
    if (gptoss_status st = dense_arg(w[j], int64_t(rows[j]), int64_t(n_in), "linear_qkv", &segs.w[j]);
        st != gptoss_status_success)
      return st;
    if (gptoss_status st = vector_arg(b[j], int64_t(rows[j]), "linear_qkv", "bias", true, &segs.bias[j]);
        st != gptoss_status_success)
      return st;
  }
  if (n > 0 && (q == nullptr || k == nullptr || v == nullptr)) return bad("linear_qkv", "null buffer");
  return run_linear(s, x, segs, n, n_in, "linear_qkv");
}

gptoss_status do_rope(Stream& s, Buf x, Buf positions, size_t n, size_t n_heads, size_t head_dim,
                      gptoss_rope_params p) {
  if (gptoss_status st = rope_table(s, p, head_dim, "rope"); st != gptoss_status_success) return st;
  if (n > 0 && (x == nullptr || positions == nullptr)) return bad("rope", "null buffer");
  return launched(s,
                  launch_rope(s.stream, ptr<float>(x), ptr<const int32_t>(positions), int64_t(n),
                              int64_t(n_heads), s.rope),
                  "rope");
}

gptoss_status do_kv_write(Stream& s, Kv kv_, uint32_t layer, Buf k, Buf v, Buf slots, size_t n) {
  if (gptoss_status st = kv_layer(kv_, layer, "kv_write"); st != gptoss_status_success) return st;
  const KvCache& kv = kv_of(kv_);
  if (n > 0 && (k == nullptr || v == nullptr || slots == nullptr)) return bad("kv_write", "null buffer");
  return launched(
      s,
      launch_kv_write(s.stream, kv.k[layer], kv.v[layer], kv.dt, ptr<const float>(k), ptr<const float>(v),
                      ptr<const int32_t>(slots), int64_t(n), kv.kv_dim, kv.slots(), s.errors.device()),
      "kv_write");
}

gptoss_status do_rope_kv(Stream& s, Buf q, Buf k, Buf v, Buf positions, size_t n, size_t n_heads,
                         gptoss_rope_params p, Kv kv_, uint32_t layer, Buf slots) {
  if (gptoss_status st = kv_layer(kv_, layer, "rope_kv_write"); st != gptoss_status_success) return st;
  const KvCache& kv = kv_of(kv_);
  if (gptoss_status st = rope_table(s, p, kv.desc.head_dim, "rope_kv_write"); st != gptoss_status_success)
    return st;
  if (n > 0 && (q == nullptr || k == nullptr || v == nullptr || positions == nullptr || slots == nullptr))
    return bad("rope_kv_write", "null buffer");
  return launched(s,
                  launch_rope_kv_write(s.stream, ptr<float>(q), ptr<const float>(k), ptr<const float>(v),
                                       ptr<const int32_t>(positions), int64_t(n), int64_t(n_heads),
                                       kv.desc.n_kv_heads, s.rope, kv.k[layer], kv.v[layer], kv.dt,
                                       ptr<const int32_t>(slots), kv.slots(), s.errors.device()),
                  "rope_kv_write");
}

gptoss_status do_attention(Stream& s, Buf q, Kv kv_, uint32_t layer, Wt sinks, Buf seqs, Buf pages,
                           gptoss_attn_shape shape, Buf out) {
  if (gptoss_status st = kv_layer(kv_, layer, "attention"); st != gptoss_status_success) return st;
  const KvCache& kv = kv_of(kv_);
  const uint32_t n_kv = kv.desc.n_kv_heads;
  if (shape.n_heads == 0 || shape.n_heads % n_kv != 0 || shape.n_seqs > shape.n_tokens || shape.max_q == 0 ||
      shape.max_q > shape.n_tokens)
    return bad("attention", std::to_string(shape.n_heads) + " heads over " + std::to_string(n_kv) +
                                " KV heads, " + std::to_string(shape.n_seqs) + " sequences of at most " +
                                std::to_string(shape.max_q) + " of " + std::to_string(shape.n_tokens) +
                                " rows");
  const int hd = int(kv.desc.head_dim);
  if (hd > kAttnMaxHeadDim || (hd == kAttnHeadDim && shape.n_heads / n_kv > 64))
    return fail(gptoss_status_unsupported_argument,
                "attention: head_dim " + std::to_string(hd) + " with " +
                    std::to_string(shape.n_heads / n_kv) +
                    " query heads per KV head (the CUDA kernels take heads of up to " +
                    std::to_string(kAttnMaxHeadDim) + ", and 64 at most 64 per KV head)");
  const float* sink;
  if (gptoss_status st = vector_arg(sinks, int64_t(shape.n_heads), "attention", "sinks", false, &sink);
      st != gptoss_status_success)
    return st;
  if (shape.n_tokens == 0) return gptoss_status_success;
  if (q == nullptr || seqs == nullptr || pages == nullptr || out == nullptr)
    return bad("attention", "null buffer");
  AttnSeqArgs a{};
  a.q = ptr<const float>(q);
  a.k_cache = kv.k[layer];
  a.v_cache = kv.v[layer];
  a.n_slots = kv.slots();
  a.seqs = ptr<const AttnSeq>(seqs);
  a.n_seqs = int32_t(shape.n_seqs);
  a.n_tokens = int32_t(shape.n_tokens);
  a.max_q = int32_t(shape.max_q);
  a.window = int32_t(shape.window);
  a.page_table = ptr<const int32_t>(pages);
  a.page_table_len = int64_t(s.dev->extent(ptr(pages)) / sizeof(int32_t));
  a.sinks = sink;
  a.n_heads = int32_t(shape.n_heads);
  a.group = int32_t(shape.n_heads / n_kv);
  a.page_size = int32_t(kv.desc.page_size);
  a.scale = shape.scale;
  a.out = ptr<float>(out);
  a.err = s.errors.device();
  const KernelChoice k = kernel_choice(*s.dev, shape.n_tokens);
  if (k.matrix_units && hd == kAttnHeadDim && attention_mma_supported(a.group))
    return launched(s, launch_attention_mma(s.stream, a, kv.dt), "attention");
  if (const size_t scratch =
          attention_scratch_bytes(shape.n_tokens, shape.n_heads, hd, a.group, k.split_attention);
      scratch > 0) {
    void* ws;
    if (gptoss_status st = s.workspace.reserve(*s.dev, s.stream, scratch, &ws); st != gptoss_status_success)
      return st;
    a.partial = static_cast<float*>(ws);
  }
  return launched(s, launch_attention(s.stream, a, shape.n_tokens, hd, kv.dt, k.split_attention),
                  "attention");
}

gptoss_status do_router(Stream& s, Buf x, Wt w, Wt b, size_t n, size_t dim, size_t experts, size_t top_k,
                        Buf ids, Buf gates) {
  DenseView m;
  const float* bias;
  if (gptoss_status st = dense_arg(w, int64_t(experts), int64_t(dim), "router", &m);
      st != gptoss_status_success)
    return st;
  if (gptoss_status st = vector_arg(b, int64_t(experts), "router", "bias", true, &bias);
      st != gptoss_status_success)
    return st;
  if (top_k == 0 || top_k > experts)
    return bad("router", "top_k " + std::to_string(top_k) + " of " + std::to_string(experts));
  if (top_k > size_t(kMaxTopK) || experts > size_t(kMaxExperts))
    return fail(gptoss_status_unsupported_argument,
                "router: " + std::to_string(experts) + " experts, top " + std::to_string(top_k) +
                    " (the CUDA kernels take at most " + std::to_string(kMaxExperts) + " experts, top " +
                    std::to_string(kMaxTopK) + ")");
  if (n > 0 && (x == nullptr || ids == nullptr || gates == nullptr)) return bad("router", "null buffer");
  return launched(s,
                  launch_router(s.stream, ptr<const float>(x), m, bias, int64_t(n), int(top_k),
                                ptr<int32_t>(ids), ptr<float>(gates)),
                  "router");
}

gptoss_status do_add(Stream& s, Buf x, Buf y, size_t n) {
  if (n > 0 && (x == nullptr || y == nullptr)) return bad("add", "null buffer");
  return launched(s, launch_add(s.stream, ptr<float>(x), ptr<const float>(y), int64_t(n)), "add");
}

gptoss_status do_sample(Stream& s, Buf logits, Buf rows, Buf mask, gptoss_sample_shape shape, Buf results) {
  if (shape.n_rows == 0) return gptoss_status_success;
  if (shape.vocab == 0) return bad("sample", "empty vocabulary");
  if (logits == nullptr || rows == nullptr || results == nullptr) return bad("sample", "null buffer");
  void* ws;
  if (gptoss_status st =
          s.workspace.reserve(*s.dev, s.stream, sample_scratch_bytes(shape.n_rows, shape.vocab), &ws);
      st != gptoss_status_success)
    return st;
  return launched(
      s,
      launch_sample(s.stream, ptr<const float>(logits), ptr<const SampleRow>(rows), ptr<const uint32_t>(mask),
                    shape.n_rows, shape.vocab, ptr<SampleResult>(results), ws, s.errors.device()),
      "sample");
}

}  // namespace
}  // namespace ops

namespace slots {
using namespace ops;

gptoss_status embedding(Stm s, Wt w, Buf tokens, size_t n, Buf out) {
  return enqueue(s, Op::embedding, do_embedding, w, tokens, n, out);
}
gptoss_status rmsnorm(Stm s, Buf x, Wt scale, size_t n, size_t dim, float eps, Buf out) {
  return enqueue(s, Op::rmsnorm, do_rmsnorm, x, Buf(nullptr), scale, n, dim, eps, out);
}
gptoss_status add_rmsnorm(Stm s, Buf x, Buf y, Wt scale, size_t n, size_t dim, float eps, Buf out) {
  if (y == nullptr) return bad("add_rmsnorm", "null buffer");
  return enqueue(s, Op::add_norm, do_rmsnorm, x, y, scale, n, dim, eps, out);
}
gptoss_status linear(Stm s, Buf x, Wt w, Wt b, size_t n, size_t n_in, size_t n_out, Buf out) {
  return enqueue(s, Op::linear, do_linear, x, w, b, n, n_in, n_out, out);
}
gptoss_status linear_qkv(Stm s, Buf x, Wt wq, Wt bq, Wt wk, Wt bk, Wt wv, Wt bv, size_t n, size_t n_in,
                         size_t q_dim, size_t kv_dim, Buf q, Buf k, Buf v) {
  return enqueue(s, Op::qkv, do_qkv, x, wq, bq, wk, bk, wv, bv, n, n_in, q_dim, kv_dim, q, k, v);
}
gptoss_status rope(Stm s, Buf x, Buf positions, size_t n, size_t n_heads, size_t head_dim,
                   const gptoss_rope_params* p) {
  if (p == nullptr) return bad("rope", "no parameters");
  return enqueue(s, Op::rope, do_rope, x, positions, n, n_heads, head_dim, *p);
}
gptoss_status kv_write(Stm s, Kv kv, uint32_t layer, Buf k, Buf v, Buf slots, size_t n) {
  return enqueue(s, Op::kv_write, do_kv_write, kv, layer, k, v, slots, n);
}
gptoss_status rope_kv_write(Stm s, Buf q, Buf k, Buf v, Buf positions, size_t n, size_t n_heads,
                            const gptoss_rope_params* p, Kv kv, uint32_t layer, Buf slots) {
  if (p == nullptr) return bad("rope_kv_write", "no parameters");
  return enqueue(s, Op::rope_kv, do_rope_kv, q, k, v, positions, n, n_heads, *p, kv, layer, slots);
}
gptoss_status attention(Stm s, Buf q, Kv kv, uint32_t layer, Wt sinks, Buf seqs, Buf pages,
                        const gptoss_attn_shape* shape, Buf out) {
  if (shape == nullptr || shape->struct_size < sizeof(gptoss_attn_shape)) return bad("attention", "no shape");
  gptoss_attn_shape sh = *shape;
  sh.max_keys = 0;  // a hint no kernel reads: it changes every decode step
  return enqueue(s, Op::attention, do_attention, q, kv, layer, sinks, seqs, pages, sh, out);
}
gptoss_status router(Stm s, Buf x, Wt w, Wt b, size_t n, size_t dim, size_t experts, size_t top_k, Buf ids,
                     Buf gates) {
  return enqueue(s, Op::router, do_router, x, w, b, n, dim, experts, top_k, ids, gates);
}
gptoss_status moe(Stm s, Buf x, Buf ids, Buf gates, Wt mlp1, Wt b1, Wt mlp2, Wt b2, size_t n, size_t dim,
                  size_t inter, size_t top_k, float limit, Buf out) {
  return enqueue(s, Op::moe, do_moe, x, ids, gates, mlp1, b1, mlp2, b2, n, dim, inter, top_k, limit, out);
}
gptoss_status add(Stm s, Buf x, Buf y, size_t n) { return enqueue(s, Op::add, do_add, x, y, n); }
gptoss_status sample(Stm s, Buf logits, Buf rows, Buf mask, const gptoss_sample_shape* shape, Buf results) {
  if (shape == nullptr || shape->struct_size < sizeof(gptoss_sample_shape)) return bad("sample", "no shape");
  gptoss_sample_shape sh = *shape;
  sh.max_top_k = sh.max_top_n = sh.all_greedy = 0;  // hints no kernel reads
  return enqueue(s, Op::sample, do_sample, logits, rows, mask, sh, results);
}

}  // namespace slots
}  // namespace gptoss::cuda
