#include "libgptoss/runtime/device_ops.hpp"

namespace gptoss {

DeviceOps::DeviceOps(const BackendDevice& dev, gptoss_backend_stream_t stream)
    : dev_(dev), api_(dev.api()), s_(stream) {}

void DeviceOps::write(Buf dst, const void* host, size_t bytes) const {
  if (bytes > 0) dev_.check(api_.buffer_write(s_, dst, 0, host, bytes), "buffer write");
}
void DeviceOps::copy(Buf dst, size_t dst_offset, Buf src, size_t src_offset, size_t bytes) const {
  dev_.check(api_.buffer_copy(s_, dst, dst_offset, src, src_offset, bytes), "buffer copy");
}
void DeviceOps::embedding(Wt w, Buf tokens, size_t n, Buf out) const {
  dev_.check(api_.embedding(s_, w, tokens, n, out), "embedding");
}
void DeviceOps::rmsnorm(Buf x, Wt scale, size_t n, size_t dim, float eps, Buf out) const {
  dev_.check(api_.rmsnorm(s_, x, scale, n, dim, eps, out), "rmsnorm");
}
void DeviceOps::linear(Buf x, Wt w, Wt bias, size_t n, size_t n_in, size_t n_out, Buf out) const {
  dev_.check(api_.linear(s_, x, w, bias, n, n_in, n_out, out), "linear");
}
void DeviceOps::add(Buf x, Buf y, size_t n) const { dev_.check(api_.add(s_, x, y, n), "residual add"); }
void DeviceOps::attention(Buf q, gptoss_backend_kv_t kv, uint32_t layer, Wt sinks, Buf seqs,
                          Buf pages, const gptoss_attn_shape& shape, Buf out) const {
  dev_.check(api_.attention(s_, q, kv, layer, sinks, seqs, pages, &shape, out), "attention");
}
void DeviceOps::router(Buf x, Wt w, Wt bias, size_t n, size_t dim, size_t experts, size_t top_k,
                       Buf ids, Buf gates) const {
  dev_.check(api_.router(s_, x, w, bias, n, dim, experts, top_k, ids, gates), "router");
}
void DeviceOps::moe(Buf x, Buf ids, Buf gates, Wt mlp1, Wt b1, Wt mlp2, Wt b2, size_t n,
                    size_t dim, size_t inter, size_t top_k, float limit, Buf out) const {
  dev_.check(api_.moe(s_, x, ids, gates, mlp1, b1, mlp2, b2, n, dim, inter, top_k, limit, out), "moe");
}
void DeviceOps::sample(Buf logits, Buf rows, Buf mask, const gptoss_sample_shape& shape,
                       Buf results) const {
  dev_.check(api_.sample(s_, logits, rows, mask, &shape, results), "sample");
}

void DeviceOps::qkv(Buf x, Wt wq, Wt bq, Wt wk, Wt bk, Wt wv, Wt bv, size_t n, size_t n_in,
                    size_t q_dim, size_t kv_dim, Buf q, Buf k, Buf v) const {
  if (GPTOSS_HAS_SLOT(&api_, linear_qkv)) {
    dev_.check(api_.linear_qkv(s_, x, wq, bq, wk, bk, wv, bv, n, n_in, q_dim, kv_dim, q, k, v),
               "qkv projection");
    return;
  }
  linear(x, wq, bq, n, n_in, q_dim, q);
  linear(x, wk, bk, n, n_in, kv_dim, k);
  linear(x, wv, bv, n, n_in, kv_dim, v);
}

void DeviceOps::add_rmsnorm(Buf x, Buf y, Wt scale, size_t n, size_t dim, float eps, Buf out) const {
  if (GPTOSS_HAS_SLOT(&api_, add_rmsnorm)) {
    dev_.check(api_.add_rmsnorm(s_, x, y, scale, n, dim, eps, out), "residual add + rmsnorm");
    return;
  }
  add(x, y, n * dim);
  rmsnorm(x, scale, n, dim, eps, out);
}

void DeviceOps::rope_kv_write(Buf q, Buf k, Buf v, Buf positions, size_t n, size_t n_heads,
                              size_t n_kv_heads, size_t head_dim, const gptoss_rope_params& rope,
                              gptoss_backend_kv_t kv, uint32_t layer, Buf slots) const {
  if (GPTOSS_HAS_SLOT(&api_, rope_kv_write)) {
    dev_.check(api_.rope_kv_write(s_, q, k, v, positions, n, n_heads, &rope, kv, layer, slots),
               "rope + kv_write");
    return;
  }
  dev_.check(api_.rope(s_, q, positions, n, n_heads, head_dim, &rope), "rope(q)");
  dev_.check(api_.rope(s_, k, positions, n, n_kv_heads, head_dim, &rope), "rope(k)");
  dev_.check(api_.kv_write(s_, kv, layer, k, v, slots, n), "kv_write");
}

}  // namespace gptoss
