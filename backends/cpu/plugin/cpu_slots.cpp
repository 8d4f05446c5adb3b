// The CPU plugin's function table: the op slots, which turn the ABI's handles and
// descriptors into the ops' types and call them (ops.hpp), and the fused slots as the exact
// compositions they stand for (run back to back, no launch to save on a CPU; add_rmsnorm is
// one pass per row, computing what add then rmsnorm compute).
#include <chrono>
#include <vector>

#include "cpu_backend.hpp"
#include "ops.hpp"
#include "sample.hpp"
#include "slots.hpp"

namespace gptoss::cpu {

namespace {

using Stm = gptoss_backend_stream_t;
using Buf = gptoss_backend_buffer_t;
using Wt = gptoss_backend_weight_t;
using Kv = gptoss_backend_kv_t;

// The ABI's handles as the ops' types.
Stream* stream(Stm s) { return reinterpret_cast<Stream*>(s); }
Device& dev_of(Stm s) { return *stream(s)->dev; }
const Weight* weight(Wt w) { return reinterpret_cast<const Weight*>(w); }
float* f32(Buf b) { return reinterpret_cast<float*>(b); }
int32_t* i32(Buf b) { return reinterpret_cast<int32_t*>(b); }
const KvCache& kv_of(Kv kv) { return *reinterpret_cast<const KvCache*>(kv); }

gptoss_status refuse(const char* why) {
  set_last_error(why);
  return gptoss_status_invalid_argument;
}

// Every slot in [0, pages * page_size) of the cache.
bool slots_in_range(const KvCache& kv, Buf slots, size_t n) {
  const auto* s = reinterpret_cast<const int32_t*>(slots);
  const size_t end = kv.pages * kv.page_size;
  for (size_t t = 0; t < n; ++t)
    if (s[t] < 0 || size_t(s[t]) >= end) return false;
  return true;
}

gptoss_status embedding(Stm s, Wt w, Buf tokens, size_t n, Buf out) {
  return ref_embedding(stream(s), weight(w), i32(tokens), n, f32(out));
}
gptoss_status rmsnorm(Stm s, Buf x, Wt scale, size_t n, size_t dim, float eps, Buf out) {
  return ref_rmsnorm(stream(s), f32(x), weight(scale), n, dim, eps, f32(out));
}
gptoss_status linear(Stm s, Buf x, Wt w, Wt b, size_t n, size_t n_in, size_t n_out, Buf out) {
  return op_linear(stream(s), f32(x), weight(w), weight(b), n, n_in, n_out, f32(out));
}
gptoss_status rope(Stm s, Buf x, Buf pos, size_t n, size_t heads, size_t hd, const gptoss_rope_params* p) {
  return ref_rope(stream(s), f32(x), i32(pos), n, heads, hd, p);
}
gptoss_status kv_write(Stm s, Kv kv_, uint32_t layer, Buf k, Buf v, Buf slots, size_t n) {
  const KvCache& kv = kv_of(kv_);
  if (layer >= kv.n_layers) return refuse("kv_write: layer outside the cache");
  if (!slots_in_range(kv, slots, n)) return refuse("kv_write: a slot outside the cache's pages");
  return ref_kv_write(stream(s), kv.k(layer), kv.v(layer), kv.dtype, f32(k), f32(v), i32(slots), n,
                      kv.kv_dim);
}

// The kernels take one AttnToken per query row; the ABI describes sequences.
gptoss_status attention(Stm s, Buf q, Kv kv_, uint32_t layer, Wt sinks, Buf seqs_, Buf pages,
                        const gptoss_attn_shape* shape, Buf out) {
  const KvCache& kv = kv_of(kv_);
  if (shape == nullptr || shape->struct_size < sizeof(gptoss_attn_shape))
    return refuse("attention: no shape");
  if (layer >= kv.n_layers) return refuse("attention: layer outside the cache");
  const auto* seqs = reinterpret_cast<const gptoss_attn_seq*>(seqs_);
  thread_local std::vector<AttnToken> toks;
  toks.resize(shape->n_tokens);
  int32_t row = 0;
  for (uint32_t i = 0; i < shape->n_seqs; ++i) {
    const gptoss_attn_seq& sq = seqs[i];
    if (sq.q_begin != row || sq.n_q <= 0 || sq.pos_begin < 0 ||
        int64_t(row) + sq.n_q > int64_t(shape->n_tokens))
      return refuse("attention: sequences do not cover the query rows in order");
    for (int32_t j = 0; j < sq.n_q; ++j) {
      const int32_t pos = sq.pos_begin + j;
      const int32_t first = shape->window ? std::max(0, pos - int32_t(shape->window) + 1) : 0;
      toks[size_t(row++)] = {pos, first, sq.page_table_offset, 0};
    }
  }
  if (uint32_t(row) != shape->n_tokens) return refuse("attention: sequences do not cover the query rows");
  return op_attention(stream(s), f32(q), kv.k(layer), kv.v(layer), kv.dtype, weight(sinks),
                      toks.data(), i32(pages), shape->n_tokens, shape->n_heads, kv.n_kv_heads,
                      kv.head_dim, kv.page_size, shape->scale, f32(out));
}

gptoss_status router(Stm s, Buf x, Wt w, Wt b, size_t n, size_t dim, size_t experts, size_t top_k,
                     Buf ids, Buf gates) {
  return op_router(stream(s), f32(x), weight(w), weight(b), n, dim, experts, top_k, i32(ids),
                   f32(gates));
}
gptoss_status moe(Stm s, Buf x, Buf ids, Buf gates, Wt w1, Wt b1, Wt w2, Wt b2, size_t n,
                  size_t dim, size_t inter, size_t top_k, float limit, Buf out) {
  return op_moe(stream(s), f32(x), i32(ids), f32(gates), weight(w1), weight(b1), weight(w2),
                weight(b2), n, dim, inter, top_k, limit, f32(out));
}
gptoss_status add(Stm s, Buf x, Buf y, size_t n) { return ref_add(stream(s), f32(x), f32(y), n); }

gptoss_status linear_qkv(Stm s, Buf x, Wt wq, Wt bq, Wt wk, Wt bk, Wt wv, Wt bv, size_t n,
                         size_t n_in, size_t q_dim, size_t kv_dim, Buf q, Buf k, Buf v) {
  gptoss_status st = linear(s, x, wq, bq, n, n_in, q_dim, q);
  if (st == gptoss_status_success) st = linear(s, x, wk, bk, n, n_in, kv_dim, k);
  if (st == gptoss_status_success) st = linear(s, x, wv, bv, n, n_in, kv_dim, v);
  return st;
}
gptoss_status add_rmsnorm(Stm s, Buf x, Buf y, Wt scale, size_t n, size_t dim, float eps, Buf out) {
  return op_add_rmsnorm(stream(s), f32(x), f32(y), weight(scale), n, dim, eps, f32(out));
}
gptoss_status rope_kv_write(Stm s, Buf q, Buf k, Buf v, Buf pos, size_t n, size_t n_heads,
                            const gptoss_rope_params* p, Kv kv_, uint32_t layer, Buf slots) {
  const KvCache& kv = kv_of(kv_);
  if (layer >= kv.n_layers) return refuse("rope_kv_write: layer outside the cache");
  if (!slots_in_range(kv, slots, n)) return refuse("rope_kv_write: a slot outside the cache's pages");
  gptoss_status st = rope(s, q, pos, n, n_heads, kv.head_dim, p);
  if (st == gptoss_status_success) st = rope(s, k, pos, n, kv.n_kv_heads, kv.head_dim, p);
  if (st == gptoss_status_success)
    st = ref_kv_write(stream(s), kv.k(layer), kv.v(layer), kv.dtype, f32(k), f32(v), i32(slots), n,
                      kv.kv_dim);
  return st;
}

gptoss_status sample(Stm s, Buf logits, Buf rows, Buf mask, const gptoss_sample_shape* shape,
                     Buf results) {
  if (shape == nullptr || shape->struct_size < sizeof(gptoss_sample_shape))
    return refuse("sample: no shape");
  return sample_rows(dev_of(s).pool, *dev_of(s).kernels, reinterpret_cast<const float*>(logits),
                     reinterpret_cast<const gptoss_sample_row*>(rows),
                     reinterpret_cast<const uint32_t*>(mask), shape->n_rows, shape->vocab,
                     reinterpret_cast<gptoss_sample_result*>(results));
}

// Weight bytes an op call reads (OpProfile::add_bytes): zero but for the weight-streaming ops.
uint64_t rows_bytes(Wt w) { return w ? weight_rows_bytes(*weight(w), weight(w)->rows) : 0; }
template <OpKind K>
struct WeightBytes {
  template <typename... A>
  static uint64_t of(A...) {
    return 0;
  }
};
template <>
struct WeightBytes<OpKind::linear> {
  template <typename... A>
  static uint64_t of(Buf, Wt weight, A...) {
    return rows_bytes(weight);
  }
};
template <>
struct WeightBytes<OpKind::router> : WeightBytes<OpKind::linear> {};
template <>
struct WeightBytes<OpKind::linear_qkv> {
  template <typename... A>
  static uint64_t of(Buf, Wt wq, Wt, Wt wk, Wt, Wt wv, A...) {
    return rows_bytes(wq) + rows_bytes(wk) + rows_bytes(wv);
  }
};
template <>
struct WeightBytes<OpKind::moe> {
  static uint64_t of(Buf, Buf ids, Buf, Wt mlp1, Wt, Wt mlp2, Wt, size_t n_tokens, size_t, size_t,
                     size_t top_k, float, Buf) {
    if (mlp1 == nullptr || mlp2 == nullptr) return 0;
    return routed_expert_bytes(reinterpret_cast<const int32_t*>(ids), n_tokens * top_k,
                               *weight(mlp1), *weight(mlp2));
  }
};

// An op slot that adds its wall time (and the weight bytes it read) to the device's OpProfile
// when profiling is on.
template <OpKind K, auto Fn>
struct Timed;
template <OpKind K, typename... A, gptoss_status (*Fn)(Stm, A...)>
struct Timed<K, Fn> {
  static gptoss_status call(Stm stream, A... a) {
    if (stream == nullptr) return gptoss_status_invalid_argument;
    OpProfile& p = dev_of(stream).profile;
    if (!p.enabled()) return Fn(stream, a...);
    const auto t0 = std::chrono::steady_clock::now();
    const gptoss_status st = Fn(stream, a...);
    p.add(K, std::chrono::steady_clock::now() - t0);
    if (st == gptoss_status_success) p.add_bytes(K, WeightBytes<K>::of(a...));
    return st;
  }
};

}  // namespace

const gptoss_backend_api kApi = {
    /* .struct_size          = */ sizeof(gptoss_backend_api),
    /* .abi_major            = */ GPTOSS_BACKEND_ABI_MAJOR,
    /* .abi_minor            = */ GPTOSS_BACKEND_ABI_MINOR,
    /* .name                 = */ "cpu",
    /* .flags                = */ 0,
    /* .device_count         = */ slots::device_count,
    /* .device_describe      = */ slots::device_describe,
    /* .device_open          = */ slots::device_open,
    /* .device_close         = */ slots::device_close,
    /* .last_error           = */ slots::last_error,
    /* .device_set_precision = */ slots::device_set_precision,
    /* .device_memory_info   = */ slots::device_memory_info,
    /* .stream_create        = */ slots::stream_create,
    /* .stream_destroy       = */ slots::stream_destroy,
    /* .stream_synchronize   = */ slots::stream_synchronize,
    /* .event_create         = */ nullptr,  // ops are synchronous: nothing to wait for
    /* .event_destroy        = */ nullptr,
    /* .event_record         = */ nullptr,
    /* .stream_wait_event    = */ nullptr,
    /* .buffer_alloc         = */ slots::buffer_alloc,
    /* .buffer_free          = */ slots::buffer_free,
    /* .buffer_view          = */ slots::buffer_view,
    /* .buffer_write         = */ slots::buffer_write,
    /* .buffer_read          = */ slots::buffer_read,
    /* .buffer_copy          = */ slots::buffer_copy,
    /* .buffer_copy_peer     = */ slots::buffer_copy_peer,
    /* .weights_begin        = */ nullptr,  // weights stay where the host maps them
    /* .weight_upload        = */ slots::weight_upload,
    /* .weights_end          = */ nullptr,  // uploads are synchronous
    /* .weight_free          = */ slots::weight_free,
    /* .kv_create            = */ slots::kv_create,
    /* .kv_grow              = */ slots::kv_grow,
    /* .kv_destroy           = */ slots::kv_destroy,
    /* .step_begin           = */ nullptr,
    /* .step_end             = */ nullptr,
    /* .embedding            = */ Timed<OpKind::embedding, embedding>::call,
    /* .rmsnorm              = */ Timed<OpKind::rmsnorm, rmsnorm>::call,
    /* .linear               = */ Timed<OpKind::linear, linear>::call,
    /* .rope                 = */ Timed<OpKind::rope, rope>::call,
    /* .kv_write             = */ Timed<OpKind::kv_write, kv_write>::call,
    /* .attention            = */ Timed<OpKind::attention, attention>::call,
    /* .router               = */ Timed<OpKind::router, router>::call,
    /* .moe                  = */ Timed<OpKind::moe, moe>::call,
    /* .add                  = */ Timed<OpKind::add, add>::call,
    /* .linear_qkv           = */ Timed<OpKind::linear_qkv, linear_qkv>::call,
    /* .add_rmsnorm          = */ Timed<OpKind::add_rmsnorm, add_rmsnorm>::call,
    /* .rope_kv_write        = */ Timed<OpKind::rope_kv_write, rope_kv_write>::call,
    /* .sample               = */ Timed<OpKind::sample, sample>::call,
    /* .device_properties    = */ slots::device_properties,
};

}  // namespace gptoss::cpu
