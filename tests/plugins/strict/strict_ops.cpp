// The strict device's op slots: each checks its buffers' sizes at the call, records its call
// for the replay check, copies what it needs from host memory, and queues the CPU plugin's op
// on the stream's worker. Weights are looked up when the op runs (their upload may still be
// in flight until weights_end).
#include <cstdlib>
#include <string>

#include "strict.hpp"

namespace gptoss::strict {
namespace {

using Stm = gptoss_backend_stream_t;
using Buf = gptoss_backend_buffer_t;
using Wt = gptoss_backend_weight_t;
using Kv = gptoss_backend_kv_t;

// The inner weights of an op at run time (handle 0: an absent optional bias). False, with
// the error set, when one has not finished uploading: the core used it before weights_end.
template <size_t N>
bool run_weights(const uint64_t (&h)[N], Wt (&out)[N]) {
  for (size_t i = 0; i < N; ++i) {
    out[i] = nullptr;
    if (h[i] == 0) continue;
    Object* o = find(h[i], Kind::weight);
    if (o == nullptr || o->inner == nullptr) {
      set_error("a weight used before its upload completed (weights_end not called?) or freed");
      return false;
    }
    out[i] = static_cast<Wt>(o->inner);
  }
  return true;
}
uint64_t wid(Wt w) { return w ? id(w) : 0; }
#define STRICT_WEIGHTS(...)                  \
  const uint64_t wh[] = {__VA_ARGS__};       \
  constexpr size_t kN = sizeof wh / sizeof wh[0]

// A call's text for the replay check: handles by number, sizes and parameters as given.
void append(std::string& s, uint64_t v) { s += ' ' + std::to_string(v); }
void append(std::string& s, double v) { s += ' ' + std::to_string(v); }
template <typename T>
void append(std::string& s, T* p) { append(s, id(p)); }
template <typename... A>
std::string call_text(const char* op, A... args) {
  std::string s = op;
  (append(s, args), ...);
  return s;
}

// Checks a weight handle names a weight (of `min_ndim` dims and more) at the call.
const Object* weight(Wt w, bool optional, const char* what) {
  if (w == nullptr && optional) return nullptr;
  const Object* o = find(id(w), Kind::weight);
  if (o == nullptr) set_error(std::string(what) + ": not a weight handle");
  return o;
}

const Object* kv_cache(Kv kv, uint32_t layer, const char* what) {
  const Object* o = find(id(kv), Kind::kv);
  if (o == nullptr || layer >= o->kv.n_layers) {
    set_error(std::string(what) + ": not a KV cache, or no layer " + std::to_string(layer));
    return nullptr;
  }
  return o;
}

constexpr gptoss_status kBad = gptoss_status_invalid_argument;

// GPTOSS_STRICT_SABOTAGE=wrong:OP or overrun:OP makes OP (rmsnorm or linear) add 1 to its
// first output element, or write 4 bytes past its output: how the tests check that
// gptoss-conformance backend-ops catches a wrong op and an out-of-bounds write.
void sabotage(Stream* s, const char* op, Buf out_inner, size_t out_bytes) {
  static const std::string spec = [] {
    const char* e = std::getenv("GPTOSS_STRICT_SABOTAGE");
    return std::string(e ? e : "");
  }();
  if (spec.empty() || spec.substr(spec.find(':') + 1) != op) return;
  const bool overrun = spec.rfind("overrun:", 0) == 0;
  s->queue.push(op, [=] {
    float v = 0;
    if (overrun) return g_inner->buffer_write(s->inner, out_inner, out_bytes, &v, 4);
    gptoss_status st = g_inner->buffer_read(s->inner, out_inner, 0, &v, 4);
    v += 1.0f;
    if (st == gptoss_status_success) st = g_inner->buffer_write(s->inner, out_inner, 0, &v, 4);
    return st;
  });
}

gptoss_status embedding(Stm st, Wt w, Buf tokens, size_t n, Buf out) {
  Stream* s = stream_of(st);
  const Object* wo = weight(w, false, "embedding");
  if (s == nullptr || wo == nullptr) return kBad;
  const size_t cols = size_t(wo->shape[wo->ndim - 1]);
  Buf t = inner_buffer(tokens, 0, n * 4, "embedding tokens");
  Buf o = inner_buffer(out, 0, n * cols * 4, "embedding out");
  if (t == nullptr || o == nullptr) return kBad;
  record_call(*s, call_text("embedding", w, tokens, uint64_t(n), out));
  STRICT_WEIGHTS(wid(w));
  s->queue.push("embedding", [=] {
    Wt W[kN];
    return run_weights(wh, W) ? g_inner->embedding(s->inner, W[0], t, n, o) : kBad;
  });
  return gptoss_status_success;
}

gptoss_status rmsnorm(Stm st, Buf x, Wt scale, size_t n, size_t dim, float eps, Buf out) {
  Stream* s = stream_of(st);
  Buf xi = inner_buffer(x, 0, n * dim * 4, "rmsnorm x");
  Buf oi = inner_buffer(out, 0, n * dim * 4, "rmsnorm out");
  if (s == nullptr || xi == nullptr || oi == nullptr || !weight(scale, false, "rmsnorm")) return kBad;
  record_call(*s, call_text("rmsnorm", x, scale, uint64_t(n), uint64_t(dim), double(eps), out));
  STRICT_WEIGHTS(wid(scale));
  s->queue.push("rmsnorm", [=] {
    Wt W[kN];
    return run_weights(wh, W) ? g_inner->rmsnorm(s->inner, xi, W[0], n, dim, eps, oi) : kBad;
  });
  sabotage(s, "rmsnorm", oi, n * dim * 4);
  return gptoss_status_success;
}

gptoss_status linear(Stm st, Buf x, Wt w, Wt b, size_t n, size_t n_in, size_t n_out, Buf out) {
  Stream* s = stream_of(st);
  Buf xi = inner_buffer(x, 0, n * n_in * 4, "linear x");
  Buf oi = inner_buffer(out, 0, n * n_out * 4, "linear out");
  if (s == nullptr || xi == nullptr || oi == nullptr || !weight(w, false, "linear")) return kBad;
  if (b != nullptr && !weight(b, true, "linear bias")) return kBad;
  record_call(*s, call_text("linear", x, w, b, uint64_t(n), uint64_t(n_in), uint64_t(n_out), out));
  STRICT_WEIGHTS(wid(w), wid(b));
  s->queue.push("linear", [=] {
    Wt W[kN];
    return run_weights(wh, W) ? g_inner->linear(s->inner, xi, W[0], W[1], n, n_in, n_out, oi) : kBad;
  });
  sabotage(s, "linear", oi, n * n_out * 4);
  return gptoss_status_success;
}

gptoss_status rope(Stm st, Buf x, Buf positions, size_t n, size_t heads, size_t hd,
                   const gptoss_rope_params* p) {
  Stream* s = stream_of(st);
  Buf xi = inner_buffer(x, 0, n * heads * hd * 4, "rope x");
  Buf pi = inner_buffer(positions, 0, n * 4, "rope positions");
  if (s == nullptr || xi == nullptr || pi == nullptr || p == nullptr) return kBad;
  record_call(*s, call_text("rope", x, positions, uint64_t(n), uint64_t(heads), uint64_t(hd)));
  const gptoss_rope_params params = *p;
  s->queue.push("rope", [=] { return g_inner->rope(s->inner, xi, pi, n, heads, hd, &params); });
  return gptoss_status_success;
}

gptoss_status kv_write(Stm st, Kv kv, uint32_t layer, Buf k, Buf v, Buf slots, size_t n) {
  Stream* s = stream_of(st);
  const Object* c = kv_cache(kv, layer, "kv_write");
  if (s == nullptr || c == nullptr) return kBad;
  const size_t kv_dim = size_t(c->kv.n_kv_heads) * c->kv.head_dim;
  Buf ki = inner_buffer(k, 0, n * kv_dim * 4, "kv_write k");
  Buf vi = inner_buffer(v, 0, n * kv_dim * 4, "kv_write v");
  Buf si = inner_buffer(slots, 0, n * 4, "kv_write slots");
  if (ki == nullptr || vi == nullptr || si == nullptr) return kBad;
  record_call(*s, call_text("kv_write", kv, uint64_t(layer), k, v, slots, uint64_t(n)));
  Kv inner = static_cast<Kv>(c->inner);
  s->queue.push("kv_write", [=] { return g_inner->kv_write(s->inner, inner, layer, ki, vi, si, n); });
  return gptoss_status_success;
}

gptoss_status attention(Stm st, Buf q, Kv kv, uint32_t layer, Wt sinks, Buf seqs, Buf pages,
                        const gptoss_attn_shape* shape, Buf out) {
  Stream* s = stream_of(st);
  const Object* c = kv_cache(kv, layer, "attention");
  if (s == nullptr || c == nullptr || shape == nullptr || !weight(sinks, false, "attention sinks")) return kBad;
  const size_t rows = size_t(shape->n_tokens) * shape->n_heads * c->kv.head_dim * 4;
  Buf qi = inner_buffer(q, 0, rows, "attention q");
  Buf oi = inner_buffer(out, 0, rows, "attention out");
  Buf si = inner_buffer(seqs, 0, size_t(shape->n_seqs) * sizeof(gptoss_attn_seq), "attention seqs");
  Buf pi = inner_buffer(pages, 0, 4, "attention page table");
  if (qi == nullptr || oi == nullptr || si == nullptr || pi == nullptr) return kBad;
  // max_keys is a hint that may change from step to step: not part of the call's identity.
  record_call(*s, call_text("attention", q, kv, uint64_t(layer), sinks, seqs, pages,
                            uint64_t(shape->n_tokens), uint64_t(shape->n_seqs), uint64_t(shape->n_heads),
                            uint64_t(shape->window), double(shape->scale), uint64_t(shape->max_q), out));
  const gptoss_attn_shape sh = *shape;
  Kv inner = static_cast<Kv>(c->inner);
  STRICT_WEIGHTS(wid(sinks));
  s->queue.push("attention", [=] {
    Wt W[kN];
    return run_weights(wh, W) ? g_inner->attention(s->inner, qi, inner, layer, W[0], si, pi, &sh, oi) : kBad;
  });
  return gptoss_status_success;
}

gptoss_status router(Stm st, Buf x, Wt w, Wt b, size_t n, size_t dim, size_t experts,
                     size_t top_k, Buf ids, Buf gates) {
  Stream* s = stream_of(st);
  Buf xi = inner_buffer(x, 0, n * dim * 4, "router x");
  Buf ii = inner_buffer(ids, 0, n * top_k * 4, "router ids");
  Buf gi = inner_buffer(gates, 0, n * top_k * 4, "router gates");
  if (s == nullptr || xi == nullptr || ii == nullptr || gi == nullptr || !weight(w, false, "router")) return kBad;
  record_call(*s, call_text("router", x, w, b, uint64_t(n), uint64_t(dim), uint64_t(experts),
                            uint64_t(top_k), ids, gates));
  STRICT_WEIGHTS(wid(w), wid(b));
  s->queue.push("router", [=] {
    Wt W[kN];
    return run_weights(wh, W) ? g_inner->router(s->inner, xi, W[0], W[1], n, dim, experts, top_k, ii, gi)
                              : kBad;
  });
  return gptoss_status_success;
}

gptoss_status moe(Stm st, Buf x, Buf ids, Buf gates, Wt w1, Wt b1, Wt w2, Wt b2, size_t n,
                  size_t dim, size_t inter, size_t top_k, float limit, Buf out) {
  Stream* s = stream_of(st);
  Buf xi = inner_buffer(x, 0, n * dim * 4, "moe x");
  Buf ii = inner_buffer(ids, 0, n * top_k * 4, "moe ids");
  Buf gi = inner_buffer(gates, 0, n * top_k * 4, "moe gates");
  Buf oi = inner_buffer(out, 0, n * dim * 4, "moe out");
  if (s == nullptr || xi == nullptr || ii == nullptr || gi == nullptr || oi == nullptr ||
      !weight(w1, false, "moe mlp1") || !weight(w2, false, "moe mlp2"))
    return kBad;
  record_call(*s, call_text("moe", x, ids, gates, w1, b1, w2, b2, uint64_t(n), uint64_t(dim),
                            uint64_t(inter), uint64_t(top_k), double(limit), out));
  STRICT_WEIGHTS(wid(w1), wid(b1), wid(w2), wid(b2));
  s->queue.push("moe", [=] {
    Wt W[kN];
    return run_weights(wh, W) ? g_inner->moe(s->inner, xi, ii, gi, W[0], W[1], W[2], W[3], n, dim,
                                             inter, top_k, limit, oi)
                              : kBad;
  });
  return gptoss_status_success;
}

gptoss_status add(Stm st, Buf x, Buf y, size_t n) {
  Stream* s = stream_of(st);
  Buf xi = inner_buffer(x, 0, n * 4, "add x");
  Buf yi = inner_buffer(y, 0, n * 4, "add y");
  if (s == nullptr || xi == nullptr || yi == nullptr) return kBad;
  record_call(*s, call_text("add", x, y, uint64_t(n)));
  s->queue.push("add", [=] { return g_inner->add(s->inner, xi, yi, n); });
  return gptoss_status_success;
}

#ifndef STRICT_MINIMAL
gptoss_status linear_qkv(Stm st, Buf x, Wt wq, Wt bq, Wt wk, Wt bk, Wt wv, Wt bv, size_t n,
                         size_t n_in, size_t q_dim, size_t kv_dim, Buf q, Buf k, Buf v) {
  Stream* s = stream_of(st);
  Buf xi = inner_buffer(x, 0, n * n_in * 4, "linear_qkv x");
  Buf qi = inner_buffer(q, 0, n * q_dim * 4, "linear_qkv q");
  Buf ki = inner_buffer(k, 0, n * kv_dim * 4, "linear_qkv k");
  Buf vi = inner_buffer(v, 0, n * kv_dim * 4, "linear_qkv v");
  if (s == nullptr || xi == nullptr || qi == nullptr || ki == nullptr || vi == nullptr ||
      !weight(wq, false, "linear_qkv q") || !weight(wk, false, "linear_qkv k") ||
      !weight(wv, false, "linear_qkv v"))
    return kBad;
  record_call(*s, call_text("linear_qkv", x, wq, bq, wk, bk, wv, bv, uint64_t(n), uint64_t(n_in),
                            uint64_t(q_dim), uint64_t(kv_dim), q, k, v));
  STRICT_WEIGHTS(wid(wq), wid(bq), wid(wk), wid(bk), wid(wv), wid(bv));
  s->queue.push("linear_qkv", [=] {
    Wt W[kN];
    return run_weights(wh, W) ? g_inner->linear_qkv(s->inner, xi, W[0], W[1], W[2], W[3], W[4], W[5], n,
                                                    n_in, q_dim, kv_dim, qi, ki, vi)
                              : kBad;
  });
  return gptoss_status_success;
}

gptoss_status add_rmsnorm(Stm st, Buf x, Buf y, Wt scale, size_t n, size_t dim, float eps, Buf out) {
  Stream* s = stream_of(st);
  Buf xi = inner_buffer(x, 0, n * dim * 4, "add_rmsnorm x");
  Buf yi = inner_buffer(y, 0, n * dim * 4, "add_rmsnorm y");
  Buf oi = inner_buffer(out, 0, n * dim * 4, "add_rmsnorm out");
  if (s == nullptr || xi == nullptr || yi == nullptr || oi == nullptr ||
      !weight(scale, false, "add_rmsnorm"))
    return kBad;
  record_call(*s, call_text("add_rmsnorm", x, y, scale, uint64_t(n), uint64_t(dim), double(eps), out));
  STRICT_WEIGHTS(wid(scale));
  s->queue.push("add_rmsnorm", [=] {
    Wt W[kN];
    return run_weights(wh, W) ? g_inner->add_rmsnorm(s->inner, xi, yi, W[0], n, dim, eps, oi) : kBad;
  });
  return gptoss_status_success;
}

gptoss_status rope_kv_write(Stm st, Buf q, Buf k, Buf v, Buf positions, size_t n, size_t n_heads,
                            const gptoss_rope_params* p, Kv kv, uint32_t layer, Buf slots) {
  Stream* s = stream_of(st);
  const Object* c = kv_cache(kv, layer, "rope_kv_write");
  if (s == nullptr || c == nullptr || p == nullptr) return kBad;
  const size_t hd = c->kv.head_dim, kv_dim = size_t(c->kv.n_kv_heads) * hd;
  Buf qi = inner_buffer(q, 0, n * n_heads * hd * 4, "rope_kv_write q");
  Buf ki = inner_buffer(k, 0, n * kv_dim * 4, "rope_kv_write k");
  Buf vi = inner_buffer(v, 0, n * kv_dim * 4, "rope_kv_write v");
  Buf pi = inner_buffer(positions, 0, n * 4, "rope_kv_write positions");
  Buf si = inner_buffer(slots, 0, n * 4, "rope_kv_write slots");
  if (qi == nullptr || ki == nullptr || vi == nullptr || pi == nullptr || si == nullptr) return kBad;
  record_call(*s, call_text("rope_kv_write", q, k, v, positions, uint64_t(n), uint64_t(n_heads), kv,
                            uint64_t(layer), slots));
  const gptoss_rope_params params = *p;
  Kv inner = static_cast<Kv>(c->inner);
  s->queue.push("rope_kv_write", [=] {
    return g_inner->rope_kv_write(s->inner, qi, ki, vi, pi, n, n_heads, &params, inner, layer, si);
  });
  return gptoss_status_success;
}

gptoss_status sample(Stm st, Buf logits, Buf rows, Buf mask, const gptoss_sample_shape* shape,
                     Buf results) {
  Stream* s = stream_of(st);
  if (s == nullptr || shape == nullptr) return kBad;
  const size_t R = shape->n_rows, V = shape->vocab;
  Buf li = inner_buffer(logits, 0, R * V * 4, "sample logits");
  Buf ri = inner_buffer(rows, 0, R * sizeof(gptoss_sample_row), "sample rows");
  Buf oi = inner_buffer(results, 0, R * sizeof(gptoss_sample_result), "sample results");
  Buf mi = mask ? inner_buffer(mask, 0, R * ((V + 31) / 32) * 4, "sample mask") : nullptr;
  if (li == nullptr || ri == nullptr || oi == nullptr || (mask != nullptr && mi == nullptr)) return kBad;
  // The shape's hints and whether a mask is given may change between steps.
  record_call(*s, call_text("sample", logits, rows, uint64_t(R), uint64_t(V), results));
  const gptoss_sample_shape sh = *shape;
  s->queue.push("sample", [=] { return g_inner->sample(s->inner, li, ri, mi, &sh, oi); });
  return gptoss_status_success;
}
#endif

}  // namespace

void fill_op_slots(gptoss_backend_api& a) {
  a.embedding = embedding;
  a.rmsnorm = rmsnorm;
  a.linear = linear;
  a.rope = rope;
  a.kv_write = kv_write;
  a.attention = attention;
  a.router = router;
  a.moe = moe;
  a.add = add;
#ifndef STRICT_MINIMAL
  a.linear_qkv = linear_qkv;
  a.add_rmsnorm = add_rmsnorm;
  a.rope_kv_write = rope_kv_write;
  a.sample = sample;
#endif
}

}  // namespace gptoss::strict
