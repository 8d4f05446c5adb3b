#pragma once
// The op calls of the forward pass on one device and stream, checked: the fused slot where
// the backend has one, else the reference composition it stands for (include/gptoss/backend.h).
#include "gptoss/backend.h"
#include "libgptoss/runtime/device.hpp"

namespace gptoss {

using Buf = gptoss_backend_buffer_t;
using Wt = gptoss_backend_weight_t;

class DeviceOps {
 public:
  DeviceOps(const BackendDevice& dev, gptoss_backend_stream_t stream);

  void write(Buf dst, const void* host, size_t bytes) const;
  void copy(Buf dst, size_t dst_offset, Buf src, size_t src_offset, size_t bytes) const;
  void embedding(Wt w, Buf tokens, size_t n, Buf out) const;
  void rmsnorm(Buf x, Wt scale, size_t n, size_t dim, float eps, Buf out) const;
  void linear(Buf x, Wt w, Wt bias, size_t n, size_t n_in, size_t n_out, Buf out) const;
  void add(Buf x, Buf y, size_t n) const;
  void attention(Buf q, gptoss_backend_kv_t kv, uint32_t layer, Wt sinks, Buf seqs, Buf pages,
                 const gptoss_attn_shape& shape, Buf out) const;
  void router(Buf x, Wt w, Wt bias, size_t n, size_t dim, size_t experts, size_t top_k, Buf ids,
              Buf gates) const;
  void moe(Buf x, Buf ids, Buf gates, Wt mlp1, Wt b1, Wt mlp2, Wt b2, size_t n, size_t dim,
           size_t inter, size_t top_k, float limit, Buf out) const;
  void sample(Buf logits, Buf rows, Buf mask, const gptoss_sample_shape& shape, Buf results) const;

  // Fused where possible.
  void qkv(Buf x, Wt wq, Wt bq, Wt wk, Wt bk, Wt wv, Wt bv, size_t n, size_t n_in, size_t q_dim,
           size_t kv_dim, Buf q, Buf k, Buf v) const;
  void add_rmsnorm(Buf x, Buf y, Wt scale, size_t n, size_t dim, float eps, Buf out) const;
  void rope_kv_write(Buf q, Buf k, Buf v, Buf positions, size_t n, size_t n_heads,
                     size_t n_kv_heads, size_t head_dim, const gptoss_rope_params& rope,
                     gptoss_backend_kv_t kv, uint32_t layer, Buf slots) const;

 private:
  const BackendDevice& dev_;
  const gptoss_backend_api& api_;
  gptoss_backend_stream_t s_;
};

}  // namespace gptoss
