// Fast attention with sinks over the paged KV cache (read in place; bf16 rows widened per
// tile). A work item is (query token, KV head, key split): the G = n_heads / n_kv_heads query
// heads sharing a KV head are processed together, so each key and value row is loaded once
// for all of them (GQA). Keys are visited in tiles of kTile with an online softmax
// (flash-style): per tile, scores for all G heads, one rescale of the running sums, then the
// weighted values. When there are fewer (token, KV head) items than twice the threads
// (decode of a model with few KV heads) the keys of each item are split into ranges whose
// partial (max, sum, accumulator) are merged afterwards, together with the sink.
#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <vector>

#include "formats.hpp"
#include "ops.hpp"
#include "ops_util.hpp"

namespace gptoss::cpu {
using namespace ops;

namespace {
constexpr size_t kTile = 32;
constexpr size_t kMinKeysPerSplit = 64;
}  // namespace

gptoss_status op_attention(void* stream, const void* q, const void* k_cache, const void* v_cache,
                           gptoss_kv_dtype dtype, const void* sinks, const void* tokens,
                           const void* page_table, size_t n_tokens, size_t n_heads,
                           size_t n_kv_heads, size_t head_dim, size_t page_size, float scale,
                           void* out) {
  Device& dev = device_of(stream);
  if (dev.isa == Isa::scalar)
    return ref_attention(stream, q, k_cache, v_cache, dtype, sinks, tokens, page_table, n_tokens,
                         n_heads, n_kv_heads, head_dim, page_size, scale, out);
  if (n_kv_heads == 0 || n_heads % n_kv_heads != 0 || page_size == 0)
    return gptoss_status_invalid_argument;
  const auto* toks = static_cast<const gptoss_attn_token*>(tokens);
  const size_t G = n_heads / n_kv_heads, kv_dim = n_kv_heads * head_dim, hd = head_dim;
  const Kernels& K = *dev.kernels;
  try {
    std::vector<float> sink(n_heads);
    decode_row(W(sinks), 0, sink.data());
    size_t max_keys = 1;
    for (size_t t = 0; t < n_tokens; ++t)
      max_keys = std::max(max_keys, size_t(toks[t].pos - toks[t].kv_start + 1));
    const size_t items = n_tokens * n_kv_heads, want = 2 * size_t(dev.pool.size());
    size_t splits = items >= want ? 1 : (want + items - 1) / items;
    splits = std::max<size_t>(1, std::min(splits, max_keys / kMinKeysPerSplit));
    // Partial results per (item, split): G running maxima, G sums, G accumulators of hd.
    const size_t part = G * (hd + 2);
    thread_local std::vector<float> parts_temp;  // reused across calls: see op_moe
    std::vector<float>& parts = parts_temp;
    parts.resize(std::max(parts.size(), items * splits * part));

    double work = 0;
    for (size_t t = 0; t < n_tokens; ++t) work += double(toks[t].pos - toks[t].kv_start + 1);
    work *= 2.0 * double(n_heads * hd);
    for_each_piece(dev.pool, items * splits, 1, work, [&](size_t b, size_t e) {
      float* kt = thread_scratch(kTile * hd * 2, 1);  // widened K then V rows of a tile
      float* vt = kt + kTile * hd;
      float* sc = thread_scratch(G * kTile, 2);
      for (size_t it = b; it < e; ++it) {
        const size_t s = it % splits, item = it / splits, t = item / n_kv_heads,
                     kvh = item % n_kv_heads;
        const gptoss_attn_token& tk = toks[t];
        const size_t n_keys = size_t(tk.pos - tk.kv_start + 1);
        const size_t k_begin = n_keys * s / splits, k_end = n_keys * (s + 1) / splits;
        float* pm = parts.data() + it * part;  // [G] max, [G] sum, [G][hd] acc
        float* pl = pm + G;
        float* acc = pl + G;
        std::fill(pm, pm + G, -std::numeric_limits<float>::infinity());
        std::fill(pl, pl + G, 0.0f);
        std::fill(acc, acc + G * hd, 0.0f);
        const float* qh = F(q) + (t * n_heads + kvh * G) * hd;
        auto row = [&](const void* cache, size_t j, float* tmp) -> const float* {
          const size_t pos = size_t(tk.kv_start) + j;
          const size_t slot = size_t(I(page_table)[size_t(tk.page_table_offset) + pos / page_size]) *
                                  page_size + pos % page_size;
          const size_t off = slot * kv_dim + kvh * hd;
          if (dtype == gptoss_kv_dtype_f32) return F(cache) + off;
          const uint16_t* src = static_cast<const uint16_t*>(cache) + off;
          for (size_t d = 0; d < hd; ++d) tmp[d] = bf16_to_f32(src[d]);
          return tmp;
        };
        for (size_t j0 = k_begin; j0 < k_end; j0 += kTile) {
          const size_t n = std::min(kTile, k_end - j0);
          for (size_t i = 0; i < n; ++i) {
            const float* kr = row(k_cache, j0 + i, kt + i * hd);
            for (size_t g = 0; g < G; ++g) sc[g * kTile + i] = K.dot(qh + g * hd, kr, hd) * scale;
          }
          for (size_t g = 0; g < G; ++g) {
            float* sg = sc + g * kTile;
            const float m_new = std::max(pm[g], *std::max_element(sg, sg + n));
            const float corr = std::exp(pm[g] - m_new);  // 0 on the first tile
            float sum = 0.0f;
            for (size_t i = 0; i < n; ++i) sum += (sg[i] = std::exp(sg[i] - m_new));
            pl[g] = pl[g] * corr + sum;
            pm[g] = m_new;
            for (size_t d = 0; d < hd; ++d) acc[g * hd + d] *= corr;
          }
          for (size_t i = 0; i < n; ++i) {
            const float* vr = row(v_cache, j0 + i, vt + i * hd);
            for (size_t g = 0; g < G; ++g) K.scale_add(acc + g * hd, 1.0f, sc[g * kTile + i], vr, hd);
          }
        }
      }
    });

    // Merge the splits with the sink: out = sum_s acc_s e^(m_s - M) / (e^(sink - M) + sum_s l_s e^(m_s - M)).
    for_each_piece(dev.pool, items, 4, double(items) * double(splits * G * hd), [&](size_t b, size_t e) {
      for (size_t item = b; item < e; ++item) {
        const size_t t = item / n_kv_heads, kvh = item % n_kv_heads;
        for (size_t g = 0; g < G; ++g) {
          const size_t h = kvh * G + g;
          float M = sink[h];
          for (size_t s = 0; s < splits; ++s) M = std::max(M, parts[(item * splits + s) * part + g]);
          float denom = std::exp(sink[h] - M);
          float* o = F(out) + (t * n_heads + h) * hd;
          std::fill(o, o + hd, 0.0f);
          for (size_t s = 0; s < splits; ++s) {
            const float* p = parts.data() + (item * splits + s) * part;
            const float f = std::exp(p[g] - M);
            denom += p[G + g] * f;
            K.scale_add(o, 1.0f, f, p + 2 * G + g * hd, hd);
          }
          const float inv = 1.0f / denom;
          for (size_t d = 0; d < hd; ++d) o[d] *= inv;
        }
      }
    });
  } catch (const std::bad_alloc&) {
    return gptoss_status_insufficient_memory;
  }
  return gptoss_status_success;
}

}  // namespace gptoss::cpu
