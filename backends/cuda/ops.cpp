// The op slots: the checks ref_* of the CPU backend make (shapes against the weights), the
// choice of kernel, and the stream's workspace for scratch.
//
// Kernel choice. Exact precision runs fp32 on CUDA cores only: the GEMV-style kernels for
// every token count (gemv.cu, moe_gemv.cu exact) and the fp32 attention. Fast precision
// keeps those for calls of at most kGemvMaxTokens tokens (decode: memory-bound, where the
// GEMV reads each weight once per call) except the MoE, which quantizes activations to int8
// (moe_gemv.cu fast); larger calls go to the tensor-core GEMM (gemm_mma.cu). Attention is
// fp32 in both precisions.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_backend.hpp"
#include "ops.hpp"

namespace gptoss::cuda {
namespace {

static_assert(sizeof(AttnToken) == sizeof(gptoss_attn_token) &&
                  offsetof(AttnToken, pos) == offsetof(gptoss_attn_token, pos) &&
                  offsetof(AttnToken, kv_start) == offsetof(gptoss_attn_token, kv_start) &&
                  offsetof(AttnToken, page_table_offset) == offsetof(gptoss_attn_token, page_table_offset),
              "AttnToken mirrors gptoss_attn_token");

constexpr size_t kGemvMaxTokens = 8;
constexpr size_t kMoeMaxTokens = 4096;  // tokens per MoE pass (see op_moe)

const float* F(const void* p) { return static_cast<const float*>(p); }
float* F(void* p) { return static_cast<float*>(p); }
const int32_t* I(const void* p) { return static_cast<const int32_t*>(p); }

// GPTOSS_CUDA_SYNC=1: every op waits for its kernels, so that a fault inside one is reported
// by the op that caused it rather than at the next synchronising call (debugging; slow).
bool sync_each_op() {
  static const bool on = [] {
    const char* v = std::getenv("GPTOSS_CUDA_SYNC");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

gptoss_status launched(Stream& s, cudaError_t e, const char* op) {
  if (e != cudaSuccess) return fail(e, std::string(op) + ": kernel launch");
  if (!sync_each_op()) return gptoss_status_success;
  if (cudaError_t f = cudaStreamSynchronize(s.stream); f != cudaSuccess) return fail(f, std::string(op) + " (GPTOSS_CUDA_SYNC)");
  return s.dev->take_device_error();
}

gptoss_status bad(const char* op, const std::string& why) {
  return fail(gptoss_status_invalid_argument, std::string(op) + ": " + why);
}

// The stream of a call, its device made current.
gptoss_status enter(void* stream, const char* op, Stream*& s) {
  if (stream == nullptr) return bad(op, "no stream");
  s = &stream_of(stream);
  return s->dev->activate();
}

// A weight that must be a vector of n values (f32 on the device); null allowed if optional.
gptoss_status vector_arg(const void* w, int64_t n, const char* op, const char* what, bool optional,
                         const float** out) {
  *out = nullptr;
  if (w == nullptr) return optional ? gptoss_status_success : bad(op, std::string("no ") + what);
  const Weight& v = weight_of(w);
  if (v.kind != Weight::Kind::vector || v.dense.rows * v.dense.cols != n)
    return bad(op, v.name + " is not a vector of " + std::to_string(n) + " values (" + what + ")");
  *out = v.f32();
  return gptoss_status_success;
}

gptoss_status dense_arg(const void* w, int64_t rows, int64_t cols, const char* op, DenseView* out) {
  if (w == nullptr) return bad(op, "no weight");
  const Weight& m = weight_of(w);
  if (m.kind != Weight::Kind::dense) return bad(op, m.name + " is not a dense matrix");
  if ((rows >= 0 && m.dense.rows != rows) || (cols >= 0 && m.dense.cols != cols))
    return bad(op, m.name + " is [" + std::to_string(m.dense.rows) + ", " + std::to_string(m.dense.cols) +
                       "], not [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  *out = m.dense;
  return gptoss_status_success;
}

Dt kv_dt(gptoss_kv_dtype d) { return d == gptoss_kv_dtype_bf16 ? Dt::bf16 : Dt::f32; }

// Slots of a KV cache buffer of kv_dim elements per slot (0: not a buffer of this device).
int64_t kv_slots(Device& dev, const void* cache, gptoss_kv_dtype d, size_t kv_dim) {
  return int64_t(dev.buffer_size(cache) / (kv_dim * (d == gptoss_kv_dtype_bf16 ? 2 : 4)));
}

// YaRN inverse frequencies (OpenAI's reference; rounded ramp bounds only with truncate), as
// the CPU reference computes them, in double.
void yarn_table(const gptoss_rope_params& p, size_t head_dim, RopeTable& t) {
  const size_t half = head_dim / 2;
  t.half = int32_t(half);
  t.concentration = 1.0;
  for (size_t i = 0; i < half; ++i) t.inv_freq[i] = 1.0 / std::pow(p.theta, double(2 * i) / double(head_dim));
  if (p.scaling_factor <= 1.0) return;
  t.concentration = 0.1 * std::log(p.scaling_factor) + 1.0;
  const double pi = 3.14159265358979323846;
  double low = double(half) * std::log(p.original_context / (p.beta_fast * 2 * pi)) / std::log(p.theta);
  double high = double(half) * std::log(p.original_context / (p.beta_slow * 2 * pi)) / std::log(p.theta);
  if (p.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  for (size_t i = 0; i < half; ++i) {
    const double ramp = std::fmin(std::fmax((double(i) - low) / (high - low), 0.0), 1.0);
    const double mask = 1.0 - ramp;
    t.inv_freq[i] = t.inv_freq[i] / p.scaling_factor * (1.0 - mask) + t.inv_freq[i] * mask;
  }
}

gptoss_status moe_chunk(Stream& s, const float* x, const int32_t* ids, const float* gates, Mxfp4View m1,
                        const float* b1, Mxfp4View m2, const float* b2, size_t n_tokens, size_t dim, size_t inter,
                        size_t top_k, float limit, bool few_tokens, float* out);

}  // namespace

gptoss_status op_embedding(void* stream, const void* weight, const void* tokens, size_t n, void* out) {
  Stream* s;
  if (gptoss_status st = enter(stream, "embedding", s); st != gptoss_status_success) return st;
  DenseView table;
  if (gptoss_status st = dense_arg(weight, -1, -1, "embedding", &table); st != gptoss_status_success) return st;
  if (n > 0 && (tokens == nullptr || out == nullptr)) return bad("embedding", "null buffer");
  return launched(*s, launch_embedding(s->stream, table, I(tokens), int64_t(n), F(out), s->dev->error_device),
                  "embedding");
}

gptoss_status op_rmsnorm(void* stream, const void* x, const void* scale, size_t n, size_t dim, float eps,
                         void* out) {
  Stream* s;
  if (gptoss_status st = enter(stream, "rmsnorm", s); st != gptoss_status_success) return st;
  const float* g;
  if (gptoss_status st = vector_arg(scale, int64_t(dim), "rmsnorm", "scale", false, &g); st != gptoss_status_success)
    return st;
  if (n > 0 && (x == nullptr || out == nullptr)) return bad("rmsnorm", "null buffer");
  return launched(*s, launch_rmsnorm(s->stream, const_cast<float*>(F(x)), nullptr, g, int64_t(n), int64_t(dim), eps,
                                 F(out)),
                  "rmsnorm");
}

gptoss_status op_linear(void* stream, const void* x, const void* weight, const void* bias, size_t n_tokens,
                        size_t n_in, size_t n_out, void* out) {
  Stream* s;
  if (gptoss_status st = enter(stream, "linear", s); st != gptoss_status_success) return st;
  DenseView w;
  if (gptoss_status st = dense_arg(weight, int64_t(n_out), int64_t(n_in), "linear", &w); st != gptoss_status_success)
    return st;
  const float* b;
  if (gptoss_status st = vector_arg(bias, int64_t(n_out), "linear", "bias", true, &b); st != gptoss_status_success)
    return st;
  if (n_tokens > 0 && (x == nullptr || out == nullptr)) return bad("linear", "null buffer");
  const LinearSegs segs = one_linear(w, b, F(out));
  // (Rows of a length not a multiple of 8, which no real model has, take the GEMV.)
  if (s->dev->exact || n_tokens <= kGemvMaxTokens || n_in % 8 != 0)
    return launched(*s, launch_gemv(s->stream, F(x), segs, int64_t(n_tokens)), "linear");
  return launched(*s, launch_gemm_dense(s->stream, F(x), segs, int64_t(n_tokens)), "linear");
}

gptoss_status op_rope(void* stream, void* x, const void* positions, size_t n_tokens, size_t n_heads,
                      size_t head_dim, const gptoss_rope_params* params) {
  Stream* s;
  if (gptoss_status st = enter(stream, "rope", s); st != gptoss_status_success) return st;
  if (params == nullptr) return bad("rope", "no parameters");
  if (head_dim % 2 != 0 || head_dim / 2 > size_t(kMaxRopeHalf))
    return fail(gptoss_status_unsupported_argument, "rope: head_dim " + std::to_string(head_dim) + " (even, <= 256)");
  if (n_tokens > 0 && (x == nullptr || positions == nullptr)) return bad("rope", "null buffer");
  if (s->rope_head_dim != head_dim || std::memcmp(&s->rope_params, params, sizeof *params) != 0) {
    yarn_table(*params, head_dim, s->rope);
    s->rope_params = *params;
    s->rope_head_dim = head_dim;
  }
  return launched(*s, launch_rope(s->stream, F(x), I(positions), int64_t(n_tokens), int64_t(n_heads), s->rope), "rope");
}

gptoss_status op_kv_write(void* stream, void* k_cache, void* v_cache, gptoss_kv_dtype dtype, const void* k,
                          const void* v, const void* slots, size_t n_tokens, size_t kv_dim) {
  Stream* s;
  if (gptoss_status st = enter(stream, "kv_write", s); st != gptoss_status_success) return st;
  if (dtype != gptoss_kv_dtype_f32 && dtype != gptoss_kv_dtype_bf16)
    return bad("kv_write", "unknown KV dtype " + std::to_string(int(dtype)));
  if (kv_dim == 0) return bad("kv_write", "kv_dim 0");
  if (n_tokens == 0) return gptoss_status_success;
  if (k == nullptr || v == nullptr || slots == nullptr) return bad("kv_write", "null buffer");
  const int64_t n_slots = std::min(kv_slots(*s->dev, k_cache, dtype, kv_dim), kv_slots(*s->dev, v_cache, dtype, kv_dim));
  if (n_slots == 0) return bad("kv_write", "the caches are not buffers of this device");
  return launched(*s, launch_kv_write(s->stream, k_cache, v_cache, kv_dt(dtype), F(k), F(v), I(slots),
                                  int64_t(n_tokens), int64_t(kv_dim), n_slots, s->dev->error_device),
                  "kv_write");
}

gptoss_status op_attention(void* stream, const void* q, const void* k_cache, const void* v_cache,
                           gptoss_kv_dtype dtype, const void* sinks, const void* tokens, const void* page_table,
                           size_t n_tokens, size_t n_heads, size_t n_kv_heads, size_t head_dim, size_t page_size,
                           float scale, void* out) {
  Stream* s;
  if (gptoss_status st = enter(stream, "attention", s); st != gptoss_status_success) return st;
  if (n_kv_heads == 0 || n_heads % n_kv_heads != 0 || page_size == 0)
    return bad("attention", "heads " + std::to_string(n_heads) + " / " + std::to_string(n_kv_heads) +
                                ", page size " + std::to_string(page_size));
  if (head_dim != size_t(kAttnHeadDim) || n_heads / n_kv_heads > 64)
    return fail(gptoss_status_unsupported_argument,
                "attention: head_dim " + std::to_string(head_dim) + " with " + std::to_string(n_heads / n_kv_heads) +
                    " query heads per KV head (the CUDA kernels take head_dim 64, at most 64 per KV head)");
  if (dtype != gptoss_kv_dtype_f32 && dtype != gptoss_kv_dtype_bf16)
    return bad("attention", "unknown KV dtype " + std::to_string(int(dtype)));
  const float* sink;
  if (gptoss_status st = vector_arg(sinks, int64_t(n_heads), "attention", "sinks", false, &sink);
      st != gptoss_status_success)
    return st;
  if (n_tokens == 0) return gptoss_status_success;
  if (q == nullptr || tokens == nullptr || page_table == nullptr || out == nullptr) return bad("attention", "null buffer");
  const size_t kv_dim = n_kv_heads * head_dim;
  const int64_t n_slots = std::min(kv_slots(*s->dev, k_cache, dtype, kv_dim), kv_slots(*s->dev, v_cache, dtype, kv_dim));
  const int64_t pt_len = int64_t(s->dev->buffer_size(page_table) / sizeof(int32_t));
  if (n_slots == 0 || pt_len == 0) return bad("attention", "the caches or page table are not buffers of this device");
  AttnArgs a{};
  a.q = F(q);
  a.k_cache = k_cache;
  a.v_cache = v_cache;
  a.n_slots = n_slots;
  a.toks = static_cast<const AttnToken*>(tokens);
  a.page_table = I(page_table);
  a.page_table_len = pt_len;
  a.sinks = sink;
  a.n_tokens = int32_t(n_tokens);
  a.n_heads = int32_t(n_heads);
  a.group = int32_t(n_heads / n_kv_heads);
  a.page_size = int32_t(page_size);
  a.scale = scale;
  a.out = F(out);
  a.err = s->dev->error_device;
  if (const size_t scratch = attention_scratch_bytes(int64_t(n_tokens), int64_t(n_heads)); scratch > 0) {
    void* ws;
    if (gptoss_status st = s->workspace.reserve(s->stream, scratch, &ws); st != gptoss_status_success) return st;
    a.partial = static_cast<float*>(ws);
  }
  return launched(*s, launch_attention(s->stream, a, kv_dt(dtype)), "attention");
}

gptoss_status op_router(void* stream, const void* x, const void* weight, const void* bias, size_t n_tokens,
                        size_t dim, size_t n_experts, size_t top_k, void* expert_ids, void* expert_weights) {
  Stream* s;
  if (gptoss_status st = enter(stream, "router", s); st != gptoss_status_success) return st;
  DenseView w;
  if (gptoss_status st = dense_arg(weight, int64_t(n_experts), int64_t(dim), "router", &w); st != gptoss_status_success)
    return st;
  const float* b;
  if (gptoss_status st = vector_arg(bias, int64_t(n_experts), "router", "bias", true, &b); st != gptoss_status_success)
    return st;
  if (top_k == 0 || top_k > n_experts) return bad("router", "top_k " + std::to_string(top_k));
  if (top_k > size_t(kMaxTopK) || n_experts > size_t(kMaxExperts))
    return fail(gptoss_status_unsupported_argument,
                "router: " + std::to_string(n_experts) + " experts, top " + std::to_string(top_k) +
                    " (the CUDA kernels take at most 256 experts, top 16)");
  if (n_tokens > 0 && (x == nullptr || expert_ids == nullptr || expert_weights == nullptr))
    return bad("router", "null buffer");
  return launched(*s, launch_router(s->stream, F(x), w, b, int64_t(n_tokens), int(top_k), static_cast<int32_t*>(expert_ids),
                                F(expert_weights)),
                  "router");
}

gptoss_status op_moe(void* stream, const void* x, const void* expert_ids, const void* expert_weights,
                     const void* mlp1, const void* mlp1_bias, const void* mlp2, const void* mlp2_bias, size_t n_tokens,
                     size_t dim, size_t inter, size_t top_k, float limit, void* out) {
  Stream* s;
  if (gptoss_status st = enter(stream, "moe", s); st != gptoss_status_success) return st;
  if (mlp1 == nullptr || mlp2 == nullptr) return bad("moe", "no expert weights");
  const Weight &w1 = weight_of(mlp1), &w2 = weight_of(mlp2);
  if (w1.kind != Weight::Kind::mxfp4 || w2.kind != Weight::Kind::mxfp4)
    return fail(gptoss_status_unsupported_argument, "moe: the CUDA backend takes MXFP4 experts (" + w1.name + ")");
  const int64_t E = w1.mxfp4.experts;
  if (w1.mxfp4.rows != int64_t(2 * inter) || w1.mxfp4.cols != int64_t(dim) || w2.mxfp4.experts != E ||
      w2.mxfp4.rows != int64_t(dim) || w2.mxfp4.cols != int64_t(inter))
    return bad("moe", "expert shapes do not match dim " + std::to_string(dim) + ", intermediate " + std::to_string(inter));
  if (inter % 32 != 0 || E > kMaxExperts || top_k == 0)
    return fail(gptoss_status_unsupported_argument, "moe: intermediate " + std::to_string(inter) + ", " +
                                                        std::to_string(E) + " experts, top " + std::to_string(top_k));
  const float *b1, *b2;
  if (gptoss_status st = vector_arg(mlp1_bias, E * 2 * int64_t(inter), "moe", "mlp1 bias", true, &b1);
      st != gptoss_status_success)
    return st;
  if (gptoss_status st = vector_arg(mlp2_bias, E * int64_t(dim), "moe", "mlp2 bias", true, &b2);
      st != gptoss_status_success)
    return st;
  if (n_tokens == 0) return gptoss_status_success;
  if (x == nullptr || expert_ids == nullptr || expert_weights == nullptr || out == nullptr)
    return bad("moe", "null buffer");
  // Long prefill chunks in pieces: the scratch between the projections is 2 x 4 floats per
  // token and unit (94 MB for 2048 tokens of the 20b), and would grow without bound.
  for (size_t t0 = 0; t0 < n_tokens; t0 += kMoeMaxTokens) {
    const size_t n = std::min(kMoeMaxTokens, n_tokens - t0);
    if (gptoss_status st = moe_chunk(*s, F(x) + t0 * dim, I(expert_ids) + t0 * top_k, F(expert_weights) + t0 * top_k,
                                     w1.mxfp4, b1, w2.mxfp4, b2, n, dim, inter, top_k, limit,
                                     n_tokens <= kGemvMaxTokens, F(out) + t0 * dim);
        st != gptoss_status_success)
      return st;
  }
  return gptoss_status_success;
}

namespace {

gptoss_status moe_chunk(Stream& s, const float* x, const int32_t* ids, const float* gates, Mxfp4View m1,
                        const float* b1, Mxfp4View m2, const float* b2, size_t n_tokens, size_t dim, size_t inter,
                        size_t top_k, float limit, bool few_tokens, float* out) {
  const int64_t n = int64_t(n_tokens), H = int64_t(dim), In = int64_t(inter), A = n * int64_t(top_k);
  const int64_t E = m1.experts;
  const bool exact = s.dev->exact, small = few_tokens;
  const int32_t tile_m = !exact && !small ? kGemmTileM : (n == 1 ? 1 : kMoeGemvTile);
  // Scratch: routing, then the activations between the projections and the expert outputs.
  auto layout = [&](Carve& c, MoeRouting& r, int8_t*& xq, float*& xd, int8_t*& aq, float*& ad, float*& act,
                    float*& y) {
    int32_t* offsets = c.take<int32_t>(size_t(E) + 1);
    int32_t* tiles = c.take<int32_t>(size_t(E) + 1);
    int32_t* order = c.take<int32_t>(size_t(A));
    r = MoeRouting{offsets, tiles, order, int32_t(E), tile_m};
    xq = nullptr, xd = nullptr, aq = nullptr, ad = nullptr, act = nullptr;
    if (!exact && small) {
      xq = c.take<int8_t>(size_t(n * H));
      xd = c.take<float>(size_t(n * H / 32));
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
  if (gptoss_status st = s.workspace.reserve(s.stream, measure.used(), &ws); st != gptoss_status_success) return st;
  Carve carve(ws);
  layout(carve, routing, xq, xd, aq, ad, act, y);

  const int64_t tiles = moe_max_tiles(A, E, tile_m);
  cudaError_t e = launch_moe_group(s.stream, ids, A, int32_t(E), tile_m, const_cast<int32_t*>(routing.offsets),
                                   const_cast<int32_t*>(routing.tile_offsets), const_cast<int32_t*>(routing.order),
                                   s.dev->error_device);
  const int k = int(top_k);
  if (!exact && small) {
    if (e == cudaSuccess) e = launch_quantize_q8(s.stream, x, n, H, xq, xd);
    if (e == cudaSuccess) e = launch_moe_q8(s.stream, true, xq, xd, k, m1, b1, routing, tiles, limit, aq, ad, nullptr);
    if (e == cudaSuccess) e = launch_moe_q8(s.stream, false, aq, ad, 1, m2, b2, routing, tiles, limit, nullptr, nullptr, y);
  } else if (exact) {
    if (e == cudaSuccess) e = launch_moe_f32(s.stream, true, x, k, m1, b1, routing, tiles, limit, act);
    if (e == cudaSuccess) e = launch_moe_f32(s.stream, false, act, 1, m2, b2, routing, tiles, limit, y);
  } else {
    if (e == cudaSuccess) e = launch_gemm_moe(s.stream, true, x, k, m1, b1, routing, tiles, limit, act);
    if (e == cudaSuccess) e = launch_gemm_moe(s.stream, false, act, 1, m2, b2, routing, tiles, limit, y);
  }
  if (e == cudaSuccess) e = launch_moe_combine(s.stream, y, ids, gates, n, k, H, int32_t(E), out);
  return launched(s, e, "moe");
}

}  // namespace

gptoss_status op_add(void* stream, void* x, const void* y, size_t n) {
  Stream* s;
  if (gptoss_status st = enter(stream, "add", s); st != gptoss_status_success) return st;
  if (n > 0 && (x == nullptr || y == nullptr)) return bad("add", "null buffer");
  return launched(*s, launch_add(s->stream, F(x), F(y), int64_t(n)), "add");
}

}  // namespace gptoss::cuda
