// Scalar reference kernels of the CPU backend: the ops of include/gptoss/backend.h, one each,
// fp32 throughout. Every output element is computed by exactly one thread in a fixed order,
// so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "../../common/yarn.hpp"
#include "cpu_backend.hpp"
#include "formats.hpp"
#include "ops.hpp"
#include "router_topk.hpp"

namespace gptoss::cpu {
namespace {

ThreadPool& pool_of(Stream* stream) { return stream->dev->pool; }
const float* F(const void* p) { return static_cast<const float*>(p); }
float* F(void* p) { return static_cast<float*>(p); }

float dot(const float* a, const float* b, size_t n) {
  float s = 0.0f;
  for (size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Thread-local scratch that grows and is reused across calls.
float* scratch(size_t n, int slot = 0) {
  thread_local std::vector<float> buf[2];
  if (buf[slot].size() < n) buf[slot].resize(n);
  return buf[slot].data();
}

// All rows of a (small) bias tensor as floats; zeros when there is no bias.
std::vector<float> decode_all(const Weight* b, size_t rows, size_t cols) {
  std::vector<float> v(rows * cols, 0.0f);
  if (b != nullptr)
    for (size_t r = 0; r < rows; ++r) decode_row(*b, r, v.data() + r * cols);
  return v;
}

}  // namespace

gptoss_status ref_embedding(Stream* stream, const Weight* weight, const int32_t* tokens, size_t n,
                            float* out) {
  const Weight& w = *weight;
  for (size_t t = 0; t < n; ++t) {
    const int32_t id = tokens[t];
    if (id < 0 || size_t(id) >= w.rows) return gptoss_status_invalid_argument;
  }
  pool_of(stream).parallel_for(n, [&](size_t b, size_t e, unsigned) {
    for (size_t t = b; t < e; ++t) decode_row(w, size_t(tokens[t]), out + t * w.cols);
  });
  return gptoss_status_success;
}

gptoss_status ref_rmsnorm(Stream* stream, const float* x, const Weight* scale, size_t n, size_t dim,
                          float eps, float* out) {
  const Weight& s = *scale;
  pool_of(stream).parallel_for(n, [&](size_t b, size_t e, unsigned) {
    float* g = scratch(dim);
    decode_row(s, 0, g);
    for (size_t t = b; t < e; ++t) {
      const float* xr = x + t * dim;
      float ss = 0.0f;
      for (size_t i = 0; i < dim; ++i) ss += xr[i] * xr[i];
      const float r = 1.0f / std::sqrt(ss / float(dim) + eps);
      float* o = out + t * dim;
      for (size_t i = 0; i < dim; ++i) o[i] = xr[i] * r * g[i];
    }
  });
  return gptoss_status_success;
}

gptoss_status ref_linear(Stream* stream, const float* x, const Weight* weight, const Weight* bias,
                         size_t n_tokens, size_t n_in, size_t n_out, float* out) {
  const Weight& w = *weight;
  const Weight* bw = bias;
  if (w.cols != n_in || w.rows != n_out) return gptoss_status_invalid_argument;
  // Each thread owns a range of output rows: a weight row is decoded once and used for every
  // token.
  pool_of(stream).parallel_for(n_out, [&](size_t b, size_t e, unsigned) {
    float* row = scratch(n_in);
    std::vector<float> brow = decode_all(bw, 1, n_out);
    for (size_t n = b; n < e; ++n) {
      decode_row(w, n, row);
      const float bn = brow[n];
      for (size_t t = 0; t < n_tokens; ++t) out[t * n_out + n] = dot(x + t * n_in, row, n_in) + bn;
    }
  });
  return gptoss_status_success;
}

gptoss_status ref_rope(Stream* stream, float* x, const int32_t* positions, size_t n_tokens,
                       size_t n_heads, size_t head_dim, const gptoss_rope_params* params) {
  if (params == nullptr || head_dim % 2 != 0) return gptoss_status_invalid_argument;
  std::vector<double> inv(head_dim / 2);
  const double conc = backends::yarn_inv_freq(*params, head_dim, inv.data());
  const size_t half = head_dim / 2;
  pool_of(stream).parallel_for(n_tokens, [&](size_t b, size_t e, unsigned) {
    std::vector<float> c(half), s(half);
    for (size_t t = b; t < e; ++t) {
      const double pos = double(positions[t]);
      for (size_t i = 0; i < half; ++i) {
        c[i] = float(std::cos(pos * inv[i]) * conc);
        s[i] = float(std::sin(pos * inv[i]) * conc);
      }
      for (size_t h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * head_dim;
        for (size_t i = 0; i < half; ++i) {
          const float x1 = v[i], x2 = v[i + half];
          v[i] = x1 * c[i] - x2 * s[i];
          v[i + half] = x2 * c[i] + x1 * s[i];
        }
      }
    }
  });
  return gptoss_status_success;
}

static void store_kv(void* cache, gptoss_kv_dtype dtype, size_t slot, const float* src, size_t n) {
  if (dtype == gptoss_kv_dtype_f32) {
    std::memcpy(F(cache) + slot * n, src, n * 4);
  } else {
    uint16_t* d = static_cast<uint16_t*>(cache) + slot * n;
    for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
  }
}

// n elements starting at element `offset` of a KV cache.
static void load_head(const void* cache, gptoss_kv_dtype dtype, size_t offset, float* dst,
                      size_t n) {
  if (dtype == gptoss_kv_dtype_f32) {
    std::memcpy(dst, F(cache) + offset, n * 4);
  } else {
    const uint16_t* s = static_cast<const uint16_t*>(cache) + offset;
    for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
  }
}

gptoss_status ref_kv_write(Stream*, void* k_cache, void* v_cache, gptoss_kv_dtype dtype,
                           const float* k, const float* v, const int32_t* slots, size_t n_tokens,
                           size_t kv_dim) {
  for (size_t t = 0; t < n_tokens; ++t) {
    const size_t slot = size_t(slots[t]);
    store_kv(k_cache, dtype, slot, k + t * kv_dim, kv_dim);
    store_kv(v_cache, dtype, slot, v + t * kv_dim, kv_dim);
  }
  return gptoss_status_success;
}

gptoss_status ref_attention(Stream* stream, const float* q, const void* k_cache,
                            const void* v_cache, gptoss_kv_dtype dtype, const Weight* sinks,
                            const AttnToken* tokens, const int32_t* page_table, size_t n_tokens,
                            size_t n_heads, size_t n_kv_heads, size_t head_dim, size_t page_size,
                            float scale, float* out) {
  if (n_kv_heads == 0 || n_heads % n_kv_heads != 0) return gptoss_status_invalid_argument;
  const AttnToken* toks = tokens;
  const size_t group = n_heads / n_kv_heads, kv_dim = n_kv_heads * head_dim;
  std::vector<float> sink(n_heads);
  decode_row(*sinks, 0, sink.data());
  // One (token, head) pair per work item: scores over the visible keys, softmax whose
  // denominator also holds exp(sink), then the weighted sum of values.
  pool_of(stream).parallel_for(n_tokens * n_heads, [&](size_t b, size_t e, unsigned) {
    std::vector<float> scores, kv(head_dim);
    for (size_t item = b; item < e; ++item) {
      const size_t t = item / n_heads, h = item % n_heads, kvh = h / group;
      const AttnToken& tk = toks[t];
      const float* qv = q + (t * n_heads + h) * head_dim;
      const size_t n_keys = size_t(tk.pos - tk.kv_start + 1);
      scores.resize(n_keys);
      float m = sink[h];
      auto slot_of = [&](int32_t j) {
        return size_t(page_table[tk.page_table_offset + j / int32_t(page_size)]) * page_size +
               size_t(j) % page_size;
      };
      for (size_t i = 0; i < n_keys; ++i) {
        load_head(k_cache, dtype, slot_of(tk.kv_start + int32_t(i)) * kv_dim + kvh * head_dim,
                  kv.data(), head_dim);
        scores[i] = dot(qv, kv.data(), head_dim) * scale;
        m = std::max(m, scores[i]);
      }
      float denom = std::exp(sink[h] - m);
      for (size_t i = 0; i < n_keys; ++i) {
        scores[i] = std::exp(scores[i] - m);
        denom += scores[i];
      }
      float* o = out + (t * n_heads + h) * head_dim;
      std::fill(o, o + head_dim, 0.0f);
      for (size_t i = 0; i < n_keys; ++i) {
        const size_t slot = slot_of(tk.kv_start + int32_t(i));
        const float p = scores[i] / denom;
        load_head(v_cache, dtype, slot * kv_dim + kvh * head_dim, kv.data(), head_dim);
        for (size_t d = 0; d < head_dim; ++d) o[d] += p * kv[d];
      }
    }
  });
  return gptoss_status_success;
}

gptoss_status ref_router(Stream* stream, const float* x, const Weight* weight, const Weight* bias,
                         size_t n_tokens, size_t dim, size_t n_experts, size_t top_k,
                         int32_t* expert_ids, float* expert_weights) {
  const Weight& w = *weight;
  const Weight* bw = bias;
  if (w.rows != n_experts || w.cols != dim || top_k == 0 || top_k > n_experts)
    return gptoss_status_invalid_argument;
  pool_of(stream).parallel_for(n_tokens, [&](size_t b, size_t e, unsigned) {
    std::vector<float> logits(n_experts), row(dim), bvec(n_experts, 0.0f);
    std::vector<size_t> order;
    if (bw) decode_row(*bw, 0, bvec.data());
    for (size_t t = b; t < e; ++t) {
      for (size_t j = 0; j < n_experts; ++j) {
        decode_row(w, j, row.data());
        logits[j] = dot(x + t * dim, row.data(), dim) + bvec[j];
      }
      router_topk_softmax(logits.data(), n_experts, top_k, expert_ids + t * top_k,
                          expert_weights + t * top_k, order);
    }
  });
  return gptoss_status_success;
}

gptoss_status ref_moe(Stream* stream, const float* x, const int32_t* expert_ids,
                      const float* expert_weights, const Weight* mlp1, const Weight* mlp1_bias,
                      const Weight* mlp2, const Weight* mlp2_bias, size_t n_tokens, size_t dim,
                      size_t inter, size_t top_k, float limit, float* out) {
  const Weight &w1 = *mlp1, &w2 = *mlp2;
  const Weight* b1 = mlp1_bias;
  const Weight* b2 = mlp2_bias;
  const size_t n_experts = size_t(w1.shape[0]);
  if (w1.ndim != 3 || size_t(w1.shape[1]) != 2 * inter || w1.cols != dim || w2.ndim != 3 ||
      size_t(w2.shape[1]) != dim || w2.cols != inter)
    return gptoss_status_invalid_argument;
  // Slots routed to experts these weights hold (a slice from first_expert); the others add
  // nothing here.
  std::vector<char> held(n_tokens * top_k);
  for (size_t i = 0; i < n_tokens * top_k; ++i) {
    const int64_t ex = int64_t(expert_ids[i]) - w1.first_expert;
    if (expert_ids[i] < 0) return gptoss_status_invalid_argument;
    held[i] = ex >= 0 && size_t(ex) < n_experts;
  }
  auto local = [&](size_t tk) { return size_t(expert_ids[tk] - w1.first_expert); };
  const std::vector<float> bias1 = decode_all(b1, n_experts, 2 * inter);
  const std::vector<float> bias2 = decode_all(b2, n_experts, dim);
  // Phase 1: activations a[t, k, i] of the clamped SwiGLU, one intermediate unit per item.
  std::vector<float> act(n_tokens * top_k * inter), y(n_tokens * top_k * dim);
  pool_of(stream).parallel_for(n_tokens * top_k * inter, [&](size_t b, size_t e, unsigned) {
    float* row = scratch(dim);
    for (size_t item = b; item < e; ++item) {
      const size_t tk = item / inter, i = item % inter, t = tk / top_k;
      if (!held[tk]) continue;
      const size_t ex = local(tk);
      decode_row(w1, ex * 2 * inter + 2 * i, row);
      float glu = dot(x + t * dim, row, dim) + bias1[ex * 2 * inter + 2 * i];
      decode_row(w1, ex * 2 * inter + 2 * i + 1, row);
      float lin = dot(x + t * dim, row, dim) + bias1[ex * 2 * inter + 2 * i + 1];
      glu = std::min(glu, limit);
      lin = std::clamp(lin, -limit, limit);
      act[item] = glu / (1.0f + std::exp(-1.702f * glu)) * (lin + 1.0f);
    }
  });
  // Phase 2: expert outputs y[t, k, :], one output row per item.
  pool_of(stream).parallel_for(n_tokens * top_k * dim, [&](size_t b, size_t e, unsigned) {
    float* row = scratch(inter);
    for (size_t item = b; item < e; ++item) {
      const size_t tk = item / dim, r = item % dim;
      if (!held[tk]) continue;
      const size_t ex = local(tk);
      decode_row(w2, ex * dim + r, row);
      y[item] = dot(act.data() + tk * inter, row, inter) + bias2[ex * dim + r];
    }
  });
  // Weighted sum in a fixed order.
  for (size_t t = 0; t < n_tokens; ++t) {
    float* o = out + t * dim;
    std::fill(o, o + dim, 0.0f);
    for (size_t k = 0; k < top_k; ++k) {
      if (!held[t * top_k + k]) continue;
      const float wk = expert_weights[t * top_k + k];
      const float* yk = y.data() + (t * top_k + k) * dim;
      for (size_t r = 0; r < dim; ++r) o[r] += wk * yk[r];
    }
  }
  return gptoss_status_success;
}

gptoss_status ref_add(Stream*, float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
  return gptoss_status_success;
}

gptoss_status ref_add_rmsnorm(Stream* stream, float* x, const float* y, const Weight* scale,
                              size_t n_tokens, size_t dim, float eps, float* out) {
  ref_add(stream, x, y, n_tokens * dim);
  return ref_rmsnorm(stream, x, scale, n_tokens, dim, eps, out);
}

}  // namespace gptoss::cpu
