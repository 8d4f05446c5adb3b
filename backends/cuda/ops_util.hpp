#pragma once
// What the op slots share (ops.cpp, ops_moe.cpp): argument checks, launch results, and the
// route of an op through the forward step's graph.
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "cuda_backend.hpp"
#include "slots.hpp"

namespace gptoss::cuda::ops {

using namespace slots;

// Which kernels a call takes: the one place that decides, by precision and the call's
// token count (docs/backends.md, "Which kernels run").
//
// Batch-invariant (the default; Device::batch_invariant): every call, whatever its size,
// takes the kernels whose arithmetic for a token depends on that token alone: the GEMV-style
// dense and MoE kernels (fp32, or int8 activations for the MoE in fast precision) and the
// fp32 attention that splits each token's keys by its own span. A token's logits are then
// bit for bit those it gets alone, in a decode step of any width or a prefill of any size.
// GPTOSS_CUDA_BATCH_INVARIANT=0 (read when a device is opened): fast-precision calls of more
// than kGemvMaxTokens tokens take the matrix units (gemm_mma.cu, attention_mma.cu: bf16
// operands) and exact ones the one-pass attention, meant to be faster for prefill (not yet
// measured), but a token's rounding then depends on how many tokens share its call.
// The HIP build's matrix units also need GPTOSS_HIP_MFMA=1 (matrix_units_enabled, kernels.hpp).
constexpr size_t kGemvMaxTokens = 8;
struct KernelChoice {
  bool matrix_units;     // dense + MoE projections on tensor cores / MFMA, attention_mma
  bool split_attention;  // fp32 attention splits each token's keys, whatever the call's size
};
inline KernelChoice kernel_choice(const Device& dev, size_t n_tokens) {
  if (dev.batch_invariant) return {false, true};
  return {!dev.exact && n_tokens > kGemvMaxTokens && matrix_units_enabled(),
          n_tokens <= kGemvMaxTokens};
}
constexpr size_t kMoeMaxTokens = 4096;  // tokens per MoE pass (see moe)

enum class Op : uint32_t {
  embedding = 1,
  rmsnorm,
  linear,
  rope,
  kv_write,
  attention,
  router,
  moe,
  add,
  qkv,
  add_norm,
  rope_kv,
  sample
};

// GPTOSS_CUDA_SYNC=1: every op waits for its kernels, so that a fault inside one is reported
// by the op that caused it rather than at the next synchronising call (debugging; slow).
inline bool sync_each_op() {
  static const bool on = [] {
    const char* v = std::getenv("GPTOSS_CUDA_SYNC");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

inline gptoss_status launched(Stream& s, cudaError_t e, const char* op) {
  if (e != cudaSuccess) return fail(e, std::string(op) + ": kernel launch");
  if (!sync_each_op()) return gptoss_status_success;
  return s.errors.sync_take(s.stream, std::string(op) + " (GPTOSS_CUDA_SYNC)");
}

inline gptoss_status bad(const char* op, const std::string& why) {
  return fail(gptoss_status_invalid_argument, std::string(op) + ": " + why);
}

// Runs an op now, or, inside a forward step, through the step's graph (captured, replayed
// or run eagerly: StepGraph decides). The signature is the op and every argument by value
// (host parameter structs are passed here by value, their mere hints zeroed).
template <typename... A>
gptoss_status enqueue(Stm stream, Op op, gptoss_status (*impl)(Stream&, A...),
                      std::type_identity_t<A>... args) {
  if (stream == nullptr) return fail(gptoss_status_invalid_argument, "op without a stream");
  Stream& s = stream_of(stream);
  if (!s.in_step) {
    if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
    return impl(s, args...);
  }
  OpSignature sig;
  sig.add(uint32_t(op));
  (sig.add(args), ...);
  return s.graph.op(sig, [&s, impl, args...] {
    if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
    return impl(s, args...);
  });
}

// A weight that must be a vector of n values (f32 on the device); null allowed if optional.
inline gptoss_status vector_arg(Wt w, int64_t n, const char* op, const char* what, bool optional,
                                const float** out) {
  *out = nullptr;
  if (w == nullptr) return optional ? gptoss_status_success : bad(op, std::string("no ") + what);
  const Weight& v = weight_of(w);
  if (v.kind != Weight::Kind::vector || v.dense.rows * v.dense.cols != n)
    return bad(op, v.name + " is not a vector of " + std::to_string(n) + " values (" + what + ")");
  *out = v.f32();
  return gptoss_status_success;
}

inline gptoss_status dense_arg(Wt w, int64_t rows, int64_t cols, const char* op, DenseView* out) {
  if (w == nullptr) return bad(op, "no weight");
  const Weight& m = weight_of(w);
  if (m.kind != Weight::Kind::dense) return bad(op, m.name + " is not a dense matrix");
  if ((rows >= 0 && m.dense.rows != rows) || (cols >= 0 && m.dense.cols != cols))
    return bad(op, m.name + " is [" + std::to_string(m.dense.rows) + ", " + std::to_string(m.dense.cols) +
                       "], not [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  *out = m.dense;
  return gptoss_status_success;
}

inline gptoss_status kv_layer(Kv kv, uint32_t layer, const char* op) {
  if (kv == nullptr) return bad(op, "no KV cache");
  if (layer >= kv_of(kv).desc.n_layers)
    return bad(op, "layer " + std::to_string(layer) + " outside the cache");
  return gptoss_status_success;
}

// ops_moe.cpp
gptoss_status mxfp4_linear(Stream& s, const float* x, const Weight& w, const float* bias, size_t n_tokens,
                           float* out);
gptoss_status do_moe(Stream& s, Buf x, Buf ids, Buf gates, Wt mlp1, Wt mlp1_bias, Wt mlp2, Wt mlp2_bias,
                     size_t n_tokens, size_t dim, size_t inter, size_t top_k, float limit, Buf out);

}  // namespace gptoss::cuda::ops
