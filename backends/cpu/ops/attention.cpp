// Fast attention with sinks over the paged KV cache (flash-style tiles; read in place, bf16
// widened per tile).
//
// Work split: consecutive query tokens of one sequence (same page table, positions +1 apart)
// form a block of up to kRowsPerBlock / G tokens, G = n_heads / n_kv_heads. A work item is
// (block, KV head, key split) and owns the block's tokens x G query heads as rows: every K and
// V row gathered from the cache then serves all of them (GQA and neighbouring tokens alike),
// and scores and P.V become small register-tiled matrix products (attention_kernels.hpp)
// instead of one dot product per (token, head, key). The block reads the union of its rows'
// key ranges in tiles of kAttnTile keys; each row masks the keys outside its own
// [kv_start, pos] (causal limit, sliding window), so blocks cost a few masked keys at the
// edges. Per tile: gather K (transposed) and V, scores, one online-softmax step, P.V.
//
// Decode-shaped calls (each block's rows over all heads fit one item: one token of a 64-head
// model) group every KV head into one item instead: per tile the cached K and V rows, all
// heads wide, are then read whole, one head's slice after another, while the next tile is
// prefetched.
//
// Over short key ranges (<= kShortKeys) no call splits its keys: a decode-shaped call instead
// halves its groups of KV heads until every thread has an item (20b on 2 threads: two items of
// 4 heads, rows read in 1 KiB slices). A split costs a second pass to merge partials, more
// than longer items cost at these lengths (a model with fewer KV heads than threads then
// leaves threads idle here).
//
// Segments: a row's keys are taken in segments of kSegmentKeys at absolute positions; each
// segment's partial (max, sum, accumulator) is folded into the row's state in segment order,
// and the sink joins the softmax denominator at the end. Over longer ranges, when there are
// fewer items than twice the threads, an item takes one segment of its block and a second pass
// folds them; otherwise an item folds its segments as it goes. The arithmetic is the same
// either way, so a row's result never depends on the call (docs/architecture.md,
// "Determinism").
//
// Long-context decode from a cold cache is the in-cache time plus the time to fetch the cache:
// compute and memory do not overlap. The alternatives tried against that (prefetch hints,
// distances, copies, more key splits, P.V over more rows) and their figures are in
// docs/performance.md, "CPU kernel choices".
#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <vector>

#include "attention_kernels.hpp"
#include "ops.hpp"
#include "pieces.hpp"

namespace gptoss::cpu {
using namespace ops;

namespace {
constexpr size_t kRowsPerBlock = 64;  // enough rows to reuse each K/V tile; few masked keys
constexpr size_t kShortKeys = 1024;     // see the top of the file
constexpr size_t kSegmentKeys = 1024;   // a multiple of kAttnTile
// KV heads one item may take: a decode-shaped item has at most kRowsPerBlock query rows, and
// every KV head has at least one.
constexpr size_t kMaxHeadsPerItem = kRowsPerBlock;

struct Block {
  size_t t0, n;             // tokens [t0, t0 + n) of the call
  int32_t k_begin, k_end;   // key positions [k_begin, k_end): the union of the tokens' ranges
};

std::vector<Block> make_blocks(const AttnToken* toks, size_t n_tokens, size_t max_tokens) {
  std::vector<Block> blocks;
  for (size_t t = 0; t < n_tokens; ++t) {
    const AttnToken& tk = toks[t];
    if (!blocks.empty()) {
      Block& b = blocks.back();
      const AttnToken& last = toks[b.t0 + b.n - 1];
      if (b.n < max_tokens && tk.page_table_offset == last.page_table_offset && tk.pos == last.pos + 1) {
        ++b.n;
        b.k_begin = std::min(b.k_begin, tk.kv_start);
        b.k_end = std::max(b.k_end, tk.pos + 1);
        continue;
      }
    }
    blocks.push_back({t, 1, tk.kv_start, tk.pos + 1});
  }
  return blocks;
}

// Partial state of `rows` query rows: running max, sum and accumulator (hd per row).
struct Partial {
  float* m;
  float* l;
  float* acc;
  static size_t floats(size_t rows, size_t hd) { return rows * (hd + 2); }
  static Partial at(float* p, size_t rows) { return {p, p + rows, p + 2 * rows}; }
};

// out = sum_s acc_s e^(m_s - M) / (e^(sink - M) + sum_s l_s e^(m_s - M)), M = max(sink, m_s):
// row r of the partials p[0..splits). A split that saw no key of the row has m = -inf, l = 0.
void finish_row(const Partial* p, size_t splits, size_t r, size_t hd, float sink, float* out) {
  float M = sink;
  for (size_t s = 0; s < splits; ++s) M = std::max(M, p[s].m[r]);
  float denom = std::exp(sink - M);
  std::fill(out, out + hd, 0.0f);
  for (size_t s = 0; s < splits; ++s) {
    const float f = std::exp(p[s].m[r] - M);
    denom += p[s].l[r] * f;
    const float* a = p[s].acc + r * hd;
    for (size_t d = 0; d < hd; ++d) out[d] += f * a[d];
  }
  const float inv = 1.0f / denom;
  for (size_t d = 0; d < hd; ++d) out[d] *= inv;
}

// Folds row r of partial p into row r of state s (a segment's keys after s's): the rescaled sum
// of the two. A partial that saw no key (m = -inf) leaves s as it is.
void fold_row(Partial& s, const Partial& p, size_t r, size_t hd) {
  if (p.m[r] == -std::numeric_limits<float>::infinity()) return;
  float* acc = s.acc + r * hd;
  const float* pacc = p.acc + r * hd;
  if (s.m[r] == -std::numeric_limits<float>::infinity()) {
    s.m[r] = p.m[r];
    s.l[r] = p.l[r];
    std::copy(pacc, pacc + hd, acc);
    return;
  }
  const float M = std::max(s.m[r], p.m[r]);
  const float a = std::exp(s.m[r] - M), b = std::exp(p.m[r] - M);
  s.m[r] = M;
  s.l[r] = s.l[r] * a + p.l[r] * b;
  for (size_t d = 0; d < hd; ++d) acc[d] = acc[d] * a + pacc[d] * b;
}

size_t round16(size_t n) { return (n + 15) / 16 * 16; }  // 64-byte alignment of scratch parts
}  // namespace

gptoss_status op_attention(Stream* stream, const float* q, const void* k_cache, const void* v_cache,
                           gptoss_kv_dtype dtype, const Weight* sinks, const AttnToken* tokens,
                           const int32_t* page_table, size_t n_tokens, size_t n_heads,
                           size_t n_kv_heads, size_t head_dim, size_t page_size, float scale,
                           float* out) {
  Device& dev = device_of(stream);
  if (n_kv_heads == 0 || n_heads % n_kv_heads != 0 || page_size == 0 || head_dim == 0)
    return gptoss_status_invalid_argument;
  const AttnToken* toks = tokens;
  for (size_t t = 0; t < n_tokens; ++t)  // every token sees at least itself
    if (toks[t].kv_start < 0 || toks[t].pos < toks[t].kv_start) return gptoss_status_invalid_argument;
  if (dev.isa == Isa::scalar)
    return ref_attention(stream, q, k_cache, v_cache, dtype, sinks, tokens, page_table, n_tokens,
                         n_heads, n_kv_heads, head_dim, page_size, scale, out);
  const size_t G = n_heads / n_kv_heads, kv_dim = n_kv_heads * head_dim, hd = head_dim;
  const size_t elem = dtype == gptoss_kv_dtype_f32 ? 4 : 2;
  const int bf16 = dtype == gptoss_kv_dtype_f32 ? 0 : 1;
  const AttnKernels& A = *dev.kernels->attention;
  // Fast precision over a bf16 cache: bf16-pair dot products where the CPU has them.
  const AttnBf16Kernels* B =
      bf16 && dev.quantize_activations && hd % 2 == 0 ? dev.kernels->attention_bf16 : nullptr;
  try {
    std::vector<float> sink(n_heads);
    decode_row(*sinks, 0, sink.data());
    const size_t max_block = std::max<size_t>(1, kRowsPerBlock / G);
    const std::vector<Block> blocks = make_blocks(toks, n_tokens, max_block);
    size_t max_keys = 1, max_n = 1;
    double work = 0;
    for (const Block& b : blocks) {
      max_keys = std::max(max_keys, size_t(b.k_end - b.k_begin));
      max_n = std::max(max_n, b.n);
      work += double(b.k_end - b.k_begin) * double(b.n);
    }
    work *= 2.0 * double(n_heads * hd);
    // Rows per KV head of a block (R_max), and KV heads per item (hg): decode-shaped calls
    // (a block's rows over all heads fit one register-friendly item) take every KV head of
    // a key range in one item, so each cached K and V row (kv_dim wide, all heads) is read
    // once, front to back; an item of one head reads hd values kv_dim apart, a strided walk
    // that leaves long-context decode latency-bound.
    const size_t R_max = std::min(max_block, max_n) * G;
    size_t hg = max_n * n_heads <= kRowsPerBlock ? n_kv_heads : 1;
    const size_t threads = dev.pool.size(), want = 2 * threads;
    const bool short_keys = max_keys <= kShortKeys;
    if (short_keys)
      while (blocks.size() * (n_kv_heads / hg) < threads && hg % 2 == 0) hg /= 2;
    const size_t groups = n_kv_heads / hg, items = blocks.size() * groups;
    // Segments of the longest block: a split is one segment (empty for a block with fewer).
    size_t max_segments = 1;
    for (const Block& b : blocks)
      max_segments = std::max(max_segments, size_t((b.k_end - 1) / int32_t(kSegmentKeys) -
                                                   b.k_begin / int32_t(kSegmentKeys) + 1));
    const size_t splits = items >= want || short_keys ? 1 : max_segments;
    const size_t part = round16(Partial::floats(R_max, hd));
    thread_local std::vector<float> parts_temp;  // reused across calls: see op_moe
    std::vector<float>& parts = parts_temp;
    // Partials of (block, KV head, split) at ((block * n_kv_heads + kvh) * splits + split).
    if (splits > 1) parts.resize(std::max(parts.size(), blocks.size() * n_kv_heads * splits * part));
    const size_t row_bytes = kv_dim * elem, head_bytes = hd * elem;

    const size_t n_items = items * splits;
    for_each_piece(dev.pool, n_items, 1, work, [&](size_t b_, size_t e_) {
      thread_local std::vector<int32_t> bounds;  // per row: first and one-past-last key
      bounds.resize(2 * R_max);
      // Per head of the group: its partial (when the keys are not split) and its queries.
      // (A second partial per head holds the segments folded so far.)
      const size_t per_head = 2 * part + R_max * hd + (B ? round16(R_max * hd / 2) : 0);
      float* scratch = thread_scratch(hg * per_head + 2 * kAttnTile * hd + R_max * kAttnTile +
                                          round16(R_max) + hd, 1);
      float* kt = scratch + hg * per_head;  // K tile, transposed
      float* vt = kt + kAttnTile * hd;      // V tile widened from bf16
      float* sc = vt + kAttnTile * hd;      // scores, then probabilities
      float* corr = sc + R_max * kAttnTile;
      float* zero_row = corr + round16(R_max);  // stands in for keys outside the item's range
      std::fill(zero_row, zero_row + hd, 0.0f);
      const char* kbase[kAttnTile];  // a tile's cached rows at the group's first head
      const char* vbase[kAttnTile];
      const void* krow[kAttnTile];
      const void* vrow[kAttnTile];
      const float* vf[kAttnTile];
      for (size_t idx = b_; idx < e_; ++idx) {
        // Longest items first (the last blocks of a causal prefill), so none is left alone
        // at the end while other threads idle.
        const size_t it = n_items - 1 - idx;
        const size_t s = it % splits, gi = it / splits, kvh0 = gi % groups * hg;
        const size_t bi = gi / groups;
        const Block& blk = blocks[bi];
        const size_t R = blk.n * G;
        // Tiles start at multiples of kAttnTile and segments at multiples of kSegmentKeys, the
        // same for every block and split: a row then goes through the same tiles and segments
        // whatever block it is in (keys it does not see add exact zeros), so prefill, decode
        // and batching give bit-identical rows. This split's keys: [k0, k1), in tiles from
        // `first` (split s: segment s of the block; one split: all of them).
        const int32_t seg = int32_t(kSegmentKeys), tile = int32_t(kAttnTile);
        const int32_t base = blk.k_begin / tile * tile, seg0 = blk.k_begin / seg * seg;
        const int32_t first = splits == 1 ? base : std::max(base, seg0 + seg * int32_t(s));
        const int32_t last = splits == 1 ? blk.k_end : seg0 + seg * int32_t(s + 1);
        const int32_t k0 = std::max(blk.k_begin, first), k1 = std::min(blk.k_end, last);
        for (size_t r = 0; r < R; ++r) {
          const AttnToken& tk = toks[blk.t0 + r / G];
          bounds[r] = std::max(tk.kv_start, k0);
          bounds[R_max + r] = std::min(tk.pos + 1, k1);
        }
        Partial st[kMaxHeadsPerItem];
        Partial folded[kMaxHeadsPerItem];  // one split: the segments before the current one
        float* qs[kMaxHeadsPerItem];  // the rows' queries, pre-scaled
        float* q2[kMaxHeadsPerItem];  // ... rounded to bf16 pairs (B only)
        for (size_t h = 0; h < hg; ++h) {
          const size_t kvh = kvh0 + h;
          st[h] = Partial::at(splits > 1 ? parts.data() + ((bi * n_kv_heads + kvh) * splits + s) * part
                                         : scratch + h * per_head,
                              R_max);
          folded[h] = Partial::at(scratch + h * per_head + part, R_max);
          qs[h] = scratch + h * per_head + 2 * part;
          for (size_t r = 0; r < R; ++r) {
            const float* src = q + ((blk.t0 + r / G) * n_heads + kvh * G + r % G) * hd;
            for (size_t d = 0; d < hd; ++d) qs[h][r * hd + d] = src[d] * scale;
            st[h].m[r] = folded[h].m[r] = -std::numeric_limits<float>::infinity();
            st[h].l[r] = folded[h].l[r] = 0.0f;
          }
          std::fill(st[h].acc, st[h].acc + R * hd, 0.0f);
          q2[h] = qs[h] + R_max * hd;
          if (B) B->round_pairs(qs[h], R * hd / 2, q2[h]);
        }
        const int32_t* pt = page_table + toks[blk.t0].page_table_offset;
        // Cached rows of the tile at j0 at the group's first head; null for keys before k0
        // (they read as zeros: positions before k0 may lie in released pages, never read them).
        // Walks the pages rather than divide per key (a division per key costs a visible part
        // of the op).
        const auto rows_of = [&](int32_t j0, size_t n, const char** kb, const char** vb) {
          size_t pos = size_t(std::max(j0, k0)), i = 0;
          for (; i < pos - size_t(j0); ++i) kb[i] = vb[i] = nullptr;
          size_t page = pos / page_size, in_page = pos % page_size;
          for (; i < n; ++i) {
            const size_t off = (size_t(pt[page]) * page_size + in_page) * row_bytes + kvh0 * head_bytes;
            kb[i] = static_cast<const char*>(k_cache) + off;
            vb[i] = static_cast<const char*>(v_cache) + off;
            if (++in_page == page_size) in_page = 0, ++page;
          }
        };
        // Each tile's rows are walked once: as the next tile of the one before (for the
        // prefetch), then carried over.
        size_t n = first < k1 ? std::min(kAttnTile, size_t(k1 - first)) : 0;
        if (n > 0) rows_of(first, n, kbase, vbase);
        bool any_folded = false;
        for (int32_t j0 = first; j0 < k1; j0 += int32_t(kAttnTile)) {
          const int32_t j1 = j0 + int32_t(kAttnTile);
          if (j0 % seg == 0 && j0 > first) {  // a new segment: fold the last one, start afresh
            for (size_t h = 0; h < hg; ++h)
              for (size_t r = 0; r < R; ++r) {
                fold_row(folded[h], st[h], r, hd);
                st[h].m[r] = -std::numeric_limits<float>::infinity();
                st[h].l[r] = 0.0f;
                std::fill(st[h].acc + r * hd, st[h].acc + (r + 1) * hd, 0.0f);
              }
            any_folded = true;
          }
          const size_t n_next = j1 < k1 ? std::min(kAttnTile, size_t(k1 - j1)) : 0;
          const char* next_k[kAttnTile];
          const char* next_v[kAttnTile];
          if (n_next > 0) rows_of(j1, n_next, next_k, next_v);
          for (size_t h = 0; h < hg; ++h) {
            // Decode: the next tile streams in while this one is computed, its keys [i, i1) now,
            // the group's bytes of each (a quarter off a cold bf16 call; f32: no change).
            // Prefill computes 64 rows per tile: no need.
            for (size_t i = hg > 1 ? n_next * h / hg : 0, i1 = hg > 1 ? n_next * (h + 1) / hg : 0; i < i1; ++i)
              for (size_t b = 0; b < hg * head_bytes; b += 64) {
                __builtin_prefetch(next_k[i] + b);
                __builtin_prefetch(next_v[i] + b);
              }
            for (size_t i = 0; i < n; ++i) {
              krow[i] = kbase[i] ? kbase[i] + h * head_bytes : static_cast<const void*>(zero_row);
              vrow[i] = vbase[i] ? vbase[i] + h * head_bytes : static_cast<const void*>(zero_row);
            }
            if (B) {  // K as pairs moved bit for bit, V rows interleaved in pairs
              A.load_k_tile(krow, n, hd / 2, 0, kt);
              B->scores(q2[h], R, hd / 2, kt, sc);
              A.softmax_step(sc, R, bounds.data(), bounds.data() + R_max, j0, n, st[h].m, st[h].l, corr);
              B->pair_rows(vrow, n, hd, vt);
              B->pv(sc, R, vt, n, hd, corr, st[h].acc);
              continue;
            }
            A.load_k_tile(krow, n, hd, bf16, kt);
            A.scores(qs[h], R, hd, kt, sc);
            A.softmax_step(sc, R, bounds.data(), bounds.data() + R_max, j0, n, st[h].m, st[h].l, corr);
            if (bf16) A.widen_rows(vrow, n, hd, vt);
            for (size_t i = 0; i < n; ++i) vf[i] = bf16 ? vt + i * hd : static_cast<const float*>(vrow[i]);
            A.pv(sc, R, vf, n, hd, corr, st[h].acc);
          }
          std::copy(next_k, next_k + n_next, kbase);
          std::copy(next_v, next_v + n_next, vbase);
          n = n_next;
        }
        if (splits == 1)
          for (size_t h = 0; h < hg; ++h)
            for (size_t r = 0; r < R; ++r) {
              const size_t head = (kvh0 + h) * G + r % G;
              if (any_folded) fold_row(folded[h], st[h], r, hd);
              finish_row(any_folded ? &folded[h] : &st[h], 1, r, hd, sink[head],
                         out + ((blk.t0 + r / G) * n_heads + head) * hd);
            }
      }
    });
    if (splits == 1) return gptoss_status_success;

    for_each_piece(dev.pool, blocks.size() * n_kv_heads, 4, double(n_tokens) * double(splits * n_heads * hd), [&](size_t b_, size_t e_) {
      for (size_t bk = b_; bk < e_; ++bk) {
        const Block& blk = blocks[bk / n_kv_heads];
        const size_t kvh = bk % n_kv_heads;
        // Segments folded in order into the first one's partial (as one split folds them).
        Partial acc = Partial::at(parts.data() + bk * splits * part, R_max);
        for (size_t r = 0; r < blk.n * G; ++r) {
          for (size_t s = 1; s < splits; ++s)
            fold_row(acc, Partial::at(parts.data() + (bk * splits + s) * part, R_max), r, hd);
          const size_t h = kvh * G + r % G;
          finish_row(&acc, 1, r, hd, sink[h], out + ((blk.t0 + r / G) * n_heads + h) * hd);
        }
      }
    });
  } catch (const std::bad_alloc&) {
    return gptoss_status_insufficient_memory;
  }
  return gptoss_status_success;
}

}  // namespace gptoss::cpu
