// Attention with sinks over the paged KV cache, fp32 arithmetic on CUDA cores, head_dim 64.
// Mirrors ref_attention (cpu_ops.cpp): scores q.k * scale over each query's keys
// [kv_start, pos] (causal limit, sliding window), a softmax whose denominator also holds
// exp(sink) of the head (the sink has no value), the weighted sum of values.
//
// Work split: a block takes one KV head and consecutive tokens of one sequence (gptoss_attn_seq),
// whose rows (tokens x the G query heads of that KV head: GQA 8:1 puts 8 heads in one tile)
// share every K and V tile gathered from the cache. Keys are visited in absolute-aligned
// tiles of 32 (device/attention_plan.cuh) over the union of the rows' ranges; tiles outside
// a row's own range (the sliding window's start, the causal end) change nothing for it, and
// tiles outside every row's range are never visited.
//   split kernel (every call by default; decode-sized calls otherwise): one token per block,
//   rows = G, and the token's tiles split over up to 16 blocks by its own span
//   (flash-decoding); attention_merge_kernel combines the splits' (max, sum, accumulator)
//   with the sink, counted once. Block x takes row row_first + x of the call and finds the
//   sequence holding it, so the grid and the partials' scratch scale with the call's rows
//   (launched in chunks of rows that bound the scratch), not with sequences x max_q.
//   row kernel (prefill when batch invariance is off; G > 16): 64 / G tokens per block, one
//   split. Per row it is the same arithmetic as the split kernel with one split, but a token
//   whose span has several splits is summed in another order: the two give different bits.
// Per tile: 128 threads fetch the next tile's K and V rows (via the page table) into
// registers while the current tile is used; score group w (TK = 32 lanes: a warp, or half a
// wavefront) owns rows w, w + 4, ... with lane j = key j, keeps the rows' running max and sum in
// registers and writes probabilities; then thread (row group, d) accumulates P.V for its rows at
// dimension d.
#include <algorithm>
#include <climits>
#include <cmath>

#include "device/attention_plan.cuh"
#include "device/compat.cuh"
#include "device/rows.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

constexpr int HD = kAttnHeadDim;
constexpr int TK = kAttnTile;
constexpr int kThreads = 128;
// Scores: groups of TK lanes, one key per lane (a warp on NVIDIA, half a CDNA wavefront).
constexpr int kScoreGroups = kThreads / TK;
constexpr int kRowGroups = kThreads / HD;
constexpr int kChunks = 2 * TK * HD / 8;  // 8-element pieces of a K tile and a V tile
constexpr int kChunksPerThread = kChunks / kThreads;
static_assert(kWarpSize % TK == 0, "a score group lies within one warp");
static_assert(kChunks % kThreads == 0 && kThreads % HD == 0, "thread roles");

__device__ void report(DeviceError* err, int32_t code, int64_t value, int64_t limit) {
  if (err != nullptr && atomicCAS(&err->code, 0, code) == 0) {
    err->value = value;
    err->limit = limit;
  }
}

// A sequence within the call's rows, and of at most `max_rows` rows (what the launch covers).
__device__ bool seq_ok(const AttnSeqArgs& a, const AttnSeq& sq, int64_t max_rows) {
  return sq.q_begin >= 0 && sq.n_q >= 0 && sq.pos_begin >= 0 &&
         int64_t(sq.q_begin) + sq.n_q <= a.n_tokens && sq.n_q <= max_rows;
}

// The sequence holding row t of the call (the lowest-numbered valid one if several claim it;
// -1 if none), found by the block's threads together; every thread gets the answer. `found`
// is the block's shared scratch.
__device__ int32_t seq_of_row(const AttnSeqArgs& a, int64_t t, int32_t* found) {
  if (threadIdx.x == 0) *found = INT32_MAX;
  __syncthreads();
  for (int i = threadIdx.x; i < a.n_seqs; i += blockDim.x) {
    const AttnSeq sq = a.seqs[i];
    if (seq_ok(a, sq, a.max_q) && t >= sq.q_begin && t < int64_t(sq.q_begin) + sq.n_q)
      atomicMin(found, i);
  }
  __syncthreads();
  return *found == INT32_MAX ? -1 : *found;
}

// A chunk as fetched: 8 cache elements (bf16: one 16-byte word; f32: two).
template <typename KT>
struct RawChunk {
  uint4 w[sizeof(KT) == 2 ? 1 : 2];
};

template <typename KT>
__device__ void to_floats(const RawChunk<KT>& c, float v[8]) {
  if constexpr (sizeof(KT) == 2) {
    load8(reinterpret_cast<const uint16_t*>(&c.w[0]), v);
  } else {
    load8(reinterpret_cast<const float*>(&c.w[0]), v);
  }
}

// kSplit: the split kernel (one token per block, its keys split over gridDim.z); otherwise the
// row kernel (ROWS / G tokens per block, one split).
template <typename KT, int ROWS, bool kSplit>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttnSeqArgs a) {
  constexpr int kRowsPerGroup = ROWS / kScoreGroups;
  constexpr int kRowsPerThread = ROWS / kRowGroups;
  static_assert(ROWS % kScoreGroups == 0 && ROWS % kRowGroups == 0, "rows");
  __shared__ __align__(16) float q_s[ROWS][HD];
  __shared__ __align__(16) float k_s[TK][HD + 4];  // +4: lanes j read rows j conflict-free
  __shared__ __align__(16) float v_s[TK][HD];
  __shared__ __align__(16) float p_s[ROWS][TK];
  __shared__ float corr_s[ROWS], m_s[ROWS], l_s[ROWS];
  __shared__ int32_t row_start[ROWS], row_pos[ROWS];
  __shared__ int32_t found_seq;

  const int tid = threadIdx.x, group = tid / TK, lane = tid % TK;
  const int G = a.group, kvh = blockIdx.y, d = tid % HD, rg = tid / HD;
  const int64_t kv_dim = int64_t(a.n_heads / G) * HD;
  const KT* k_cache = static_cast<const KT*>(a.k_cache);
  const KT* v_cache = static_cast<const KT*>(a.v_cache);
  // The block's tokens: [t0, t0 + n_tok) of one sequence (every thread reads the same).
  const int per_block = kSplit ? 1 : ROWS / G;
  AttnSeq sq;
  int t0;
  if constexpr (kSplit) {
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0)
      for (int i = tid; i < a.n_seqs; i += kThreads)
        if (!seq_ok(a, a.seqs[i], a.max_q)) report(a.err, kErrAttnSeq, i, a.n_tokens);
    const int64_t t = int64_t(a.row_first) + blockIdx.x;
    const int32_t si = seq_of_row(a, t, &found_seq);
    if (si < 0) return;  // a row of no sequence (the whole block)
    sq = a.seqs[si];
    t0 = int(t - sq.q_begin);
  } else {
    sq = a.seqs[blockIdx.x / a.q_blocks];
    t0 = int(blockIdx.x % a.q_blocks) * per_block;
    if (!seq_ok(a, sq, int64_t(a.q_blocks) * per_block)) {
      if (t0 == 0 && tid == 0 && blockIdx.y == 0 && blockIdx.z == 0)
        report(a.err, kErrAttnSeq, blockIdx.x / a.q_blocks, a.n_tokens);
      return;
    }
    if (t0 >= sq.n_q) return;  // the whole block
  }
  const int n_tok = min(per_block, sq.n_q - t0), rows = n_tok * G;
  const int32_t pto = sq.page_table_offset;
  auto first_key = [&](int32_t pos) { return a.window > 0 ? max(0, pos - a.window + 1) : 0; };
  const int32_t lo = first_key(sq.pos_begin + t0), hi = sq.pos_begin + t0 + n_tok;
  const int32_t n_tiles = attn_tile_count(lo, hi);
  int32_t n_splits = 1, tile_first = attn_first_tile(lo), tile_end = tile_first + n_tiles;
  if (kSplit && n_tiles > 0) {  // one token per block, its keys split
    const int32_t per = attn_tiles_per_split(n_tiles);
    n_splits = (n_tiles + per - 1) / per;
    tile_first += int32_t(blockIdx.z) * per;
    tile_end = min(tile_end, tile_first + per);
  }
  if (int32_t(blockIdx.z) >= n_splits) return;  // this token has fewer splits

  for (int i = tid; i < rows * (HD / 4); i += kThreads) {
    const int r = i / (HD / 4), c = (i % (HD / 4)) * 4;
    const int64_t t = int64_t(sq.q_begin) + t0 + r / G, h = int64_t(kvh) * G + r % G;
    *reinterpret_cast<float4*>(&q_s[r][c]) =
        *reinterpret_cast<const float4*>(a.q + (t * a.n_heads + h) * HD + c);
  }
  for (int r = tid; r < ROWS; r += kThreads) {
    const int32_t pos = sq.pos_begin + t0 + r / G;
    row_start[r] = r < rows ? first_key(pos) : 0;
    row_pos[r] = r < rows ? pos : -1;  // rows past the block's see no key
  }

  // Fetches tile `tile`'s K and V pieces owned by this thread; positions outside [lo, hi)
  // or whose page table entry or slot is out of bounds read as zeros (the latter reported).
  RawChunk<KT> raw[kChunksPerThread];
  auto fetch = [&](int32_t tile) {
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i) {
      const int c = tid + i * kThreads, which = c / (kChunks / 2), cc = c % (kChunks / 2);
      const int j = cc / (HD / 8), part = cc % (HD / 8);
      const int32_t kp = tile * TK + j;
      raw[i] = RawChunk<KT>{};
      if (kp < lo || kp >= hi) continue;
      const int64_t entry = int64_t(pto) + kp / a.page_size;
      const int64_t page = entry >= 0 && entry < a.page_table_len ? a.page_table[entry] : -1;
      const int64_t slot = page * a.page_size + kp % a.page_size;
      if (page < 0 || slot >= a.n_slots) {
        report(a.err, kErrPageTable, page < 0 ? entry : slot, page < 0 ? a.page_table_len : a.n_slots);
        continue;
      }
      const KT* src = (which == 0 ? k_cache : v_cache) + slot * kv_dim + int64_t(kvh) * HD + part * 8;
      const uint4* s4 = reinterpret_cast<const uint4*>(src);
#pragma unroll
      for (int w = 0; w < int(sizeof(raw[i].w) / sizeof(uint4)); ++w) raw[i].w[w] = s4[w];
    }
  };

  float m[kRowsPerGroup], l[kRowsPerGroup], acc[kRowsPerThread];
#pragma unroll
  for (int i = 0; i < kRowsPerGroup; ++i) m[i] = -INFINITY, l[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) acc[i] = 0.0f;

  if (tile_first < tile_end) fetch(tile_first);
  for (int32_t tile = tile_first; tile < tile_end; ++tile) {
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i) {
      const int c = tid + i * kThreads, which = c / (kChunks / 2), cc = c % (kChunks / 2);
      const int j = cc / (HD / 8), part = cc % (HD / 8);
      float v[8];
      to_floats(raw[i], v);
      store8(which == 0 ? &k_s[j][part * 8] : &v_s[j][part * 8], v);
    }
    __syncthreads();  // q_s and row info (first tile), k_s and v_s
    if (tile + 1 < tile_end) fetch(tile + 1);

    // Scores and the online softmax of the rows of this group; lane = key.
    const int32_t kp = tile * TK + lane;
    float s[kRowsPerGroup];
#pragma unroll
    for (int i = 0; i < kRowsPerGroup; ++i) s[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < HD; c += 4) {
      const float4 k4 = *reinterpret_cast<const float4*>(&k_s[lane][c]);
#pragma unroll
      for (int i = 0; i < kRowsPerGroup; ++i) {
        const int r = group + kScoreGroups * i;
        if (r >= rows) break;
        const float4 q4 = *reinterpret_cast<const float4*>(&q_s[r][c]);
        s[i] = fmaf(q4.x, k4.x, s[i]);
        s[i] = fmaf(q4.y, k4.y, s[i]);
        s[i] = fmaf(q4.z, k4.z, s[i]);
        s[i] = fmaf(q4.w, k4.w, s[i]);
      }
    }
#pragma unroll
    for (int i = 0; i < kRowsPerGroup; ++i) {
      const int r = group + kScoreGroups * i;
      if (r >= rows) break;
      const bool visible = kp >= row_start[r] && kp <= row_pos[r];
      const float sv = visible ? s[i] * a.scale : -INFINITY;
      const float mt = warp_max<TK>(sv);
      float corr = 1.0f, p = 0.0f;
      if (mt != -INFINITY) {  // the row sees a key here (same on every lane)
        const float m_new = fmaxf(m[i], mt);
        corr = expf(m[i] - m_new);  // m = -inf: 0, and the accumulator is 0 anyway
        p = visible ? expf(sv - m_new) : 0.0f;
        l[i] = l[i] * corr + warp_sum<TK>(p);
        m[i] = m_new;
      }
      p_s[r][lane] = p;
      if (lane == 0) corr_s[r] = corr;
    }
    __syncthreads();  // p_s, corr_s

    // P.V: rows rg, rg + 2, ... at dimension d.
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const int r = rg + kRowGroups * i;
      if (r >= rows) break;
      float o = acc[i] * corr_s[r];
#pragma unroll
      for (int j = 0; j < TK; j += 4) {
        const float4 p4 = *reinterpret_cast<const float4*>(&p_s[r][j]);
        o = fmaf(p4.x, v_s[j][d], o);
        o = fmaf(p4.y, v_s[j + 1][d], o);
        o = fmaf(p4.z, v_s[j + 2][d], o);
        o = fmaf(p4.w, v_s[j + 3][d], o);
      }
      acc[i] = o;
    }
    __syncthreads();  // k_s, v_s, p_s are rewritten by the next tile
  }

  // The rows' max and sum to every thread; then the result, or this split's partial.
  if (lane == 0)
#pragma unroll
    for (int i = 0; i < kRowsPerGroup; ++i) {
      const int r = group + kScoreGroups * i;
      if (r < rows) m_s[r] = m[i], l_s[r] = l[i];
    }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const int r = rg + kRowGroups * i;
    if (r >= rows) break;
    const int64_t t = int64_t(sq.q_begin) + t0 + r / G, h = int64_t(kvh) * G + r % G;
    if (n_splits == 1) {
      const float sink = a.sinks[h], M = fmaxf(m_s[r], sink), f = expf(m_s[r] - M);
      a.out[(t * a.n_heads + h) * HD + d] = acc[i] * f / (l_s[r] * f + expf(sink - M));
    } else {
      // Partials by the block's row within this launch (rows row_first + blockIdx.x).
      float* part =
          a.partial +
          ((int64_t(blockIdx.x) * a.n_heads + h) * kAttnMaxSplits + blockIdx.z) * (HD + 2);
      part[2 + d] = acc[i];
      if (d == 0) part[0] = m_s[r], part[1] = l_s[r];
    }
  }
}

// One block per (row row_first + x of the call, query head), thread d: the token's splits
// merged with the sink.
__global__ void attention_merge_kernel(AttnSeqArgs a) {
  __shared__ int32_t found_seq;
  const int64_t t = int64_t(a.row_first) + blockIdx.x;
  const int32_t si = seq_of_row(a, t, &found_seq);
  if (si < 0) return;
  const AttnSeq sq = a.seqs[si];
  const int32_t pos = sq.pos_begin + int32_t(t - sq.q_begin);
  const int32_t n = attn_splits(a.window > 0 ? max(0, pos - a.window + 1) : 0, pos);
  if (n == 1) return;  // the attention kernel wrote the result
  const int64_t h = blockIdx.y;
  const int d = threadIdx.x;
  const float* part = a.partial + (int64_t(blockIdx.x) * a.n_heads + h) * kAttnMaxSplits * (HD + 2);
  const float sink = a.sinks[h];
  float M = sink;
  for (int z = 0; z < n; ++z) M = fmaxf(M, part[z * (HD + 2)]);
  float denom = expf(sink - M), o = 0.0f;
  for (int z = 0; z < n; ++z) {
    const float f = expf(part[z * (HD + 2)] - M);
    denom += part[z * (HD + 2) + 1] * f;
    o += f * part[z * (HD + 2) + 2 + d];
  }
  a.out[(t * a.n_heads + h) * HD + d] = o / denom;
}

// Any head size up to kAttnMaxHeadDim (no real model's: every gpt-oss model has 64): one
// block per (query row, head); keys in chunks of kThreads, each thread one key's score, then
// thread d the chunk's weighted values at dimension d, with the online softmax across chunks.
// Element by element, in the same fp32 arithmetic as the kernels above.
template <typename KT>
__global__ void __launch_bounds__(kThreads) attention_any_kernel(AttnSeqArgs a, int hd) {
  __shared__ float q_s[kAttnMaxHeadDim], acc_s[kAttnMaxHeadDim], p_s[kThreads], red[kThreads / kWarpSize];
  __shared__ int64_t slot_s[kThreads];
  const int tid = threadIdx.x;
  const AttnSeq sq = a.seqs[blockIdx.x / a.q_blocks];
  const int t_local = int(blockIdx.x % a.q_blocks);
  if (!seq_ok(a, sq, a.q_blocks)) {
    if (t_local == 0 && tid == 0 && blockIdx.y == 0)
      report(a.err, kErrAttnSeq, blockIdx.x / a.q_blocks, a.n_tokens);
    return;
  }
  if (t_local >= sq.n_q) return;
  const int h = blockIdx.y, kvh = h / a.group;
  const int64_t row = int64_t(sq.q_begin) + t_local, kv_dim = int64_t(a.n_heads / a.group) * hd;
  const int32_t pos = sq.pos_begin + t_local, lo = a.window > 0 ? max(0, pos - a.window + 1) : 0;
  const KT* k_cache = static_cast<const KT*>(a.k_cache);
  const KT* v_cache = static_cast<const KT*>(a.v_cache);
  for (int d = tid; d < hd; d += kThreads) {
    q_s[d] = a.q[(row * a.n_heads + h) * hd + d];
    acc_s[d] = 0.0f;
  }
  auto block_reduce = [&](float v, bool is_max) {
    v = is_max ? warp_max<kWarpSize>(v) : warp_sum<kWarpSize>(v);
    __syncthreads();
    if (tid % kWarpSize == 0) red[tid / kWarpSize] = v;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < kThreads / kWarpSize; ++w) r = is_max ? fmaxf(r, red[w]) : r + red[w];
    return r;
  };
  float m = -INFINITY, l = 0.0f;
  __syncthreads();
  for (int32_t base = lo; base <= pos; base += kThreads) {
    const int32_t kp = base + tid;
    float sc = -INFINITY;
    int64_t slot = -1;
    if (kp <= pos) {
      const int64_t entry = int64_t(sq.page_table_offset) + kp / a.page_size;
      const int64_t page = entry >= 0 && entry < a.page_table_len ? a.page_table[entry] : -1;
      slot = page * a.page_size + kp % a.page_size;
      if (page < 0 || slot >= a.n_slots) {
        report(a.err, kErrPageTable, page < 0 ? entry : slot, page < 0 ? a.page_table_len : a.n_slots);
        slot = -1;
      } else {
        float dot = 0.0f;
        for (int d = 0; d < hd; ++d)
          dot = fmaf(q_s[d], load1(k_cache + slot * kv_dim + int64_t(kvh) * hd + d), dot);
        sc = dot * a.scale;
      }
    }
    slot_s[tid] = slot;
    const float mt = block_reduce(sc, true);
    if (mt == -INFINITY) continue;  // no readable key in this chunk (every thread agrees)
    const float m_new = fmaxf(m, mt), corr = expf(m - m_new);
    const float p = sc == -INFINITY ? 0.0f : expf(sc - m_new);
    p_s[tid] = p;
    l = l * corr + block_reduce(p, false);
    m = m_new;
    __syncthreads();  // p_s, slot_s
    const int n = min(kThreads, int(pos - base + 1));
    for (int d = tid; d < hd; d += kThreads) {
      float o = acc_s[d] * corr;
      for (int j = 0; j < n; ++j)
        if (slot_s[j] >= 0) o = fmaf(p_s[j], load1(v_cache + slot_s[j] * kv_dim + int64_t(kvh) * hd + d), o);
      acc_s[d] = o;
    }
    __syncthreads();
  }
  const float sink = a.sinks[h], M = fmaxf(m, sink), f = expf(m - M), inv = f / (l * f + expf(sink - M));
  for (int d = tid; d < hd; d += kThreads) a.out[(row * a.n_heads + h) * hd + d] = acc_s[d] * inv;
}

bool uses_split_kernel(int head_dim, int32_t group, bool split) {
  return split && head_dim == HD && group <= 16;
}

template <typename KT>
cudaError_t launch_typed(cudaStream_t s, AttnSeqArgs a, int64_t n_tokens, int head_dim,
                         bool split) {
  if (head_dim != HD) {
    a.q_blocks = a.max_q;
    attention_any_kernel<KT>
        <<<dim3(unsigned(int64_t(a.n_seqs) * a.q_blocks), unsigned(a.n_heads)), kThreads, 0, s>>>(a,
                                                                                                  head_dim);
    return cudaGetLastError();
  }
  const unsigned n_kv = unsigned(a.n_heads / a.group);
  if (uses_split_kernel(head_dim, a.group, split)) {
    a.q_blocks = a.max_q;  // one token per block (not used to place blocks: row_first does)
    const int64_t chunk = attn_split_rows_per_launch(n_tokens, a.n_heads, HD);
    for (int64_t r0 = 0; r0 < n_tokens; r0 += chunk) {
      a.row_first = int32_t(r0);
      const unsigned rows = unsigned(std::min(chunk, n_tokens - r0));
      attention_kernel<KT, 16, true><<<dim3(rows, n_kv, kAttnMaxSplits), kThreads, 0, s>>>(a);
      if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
      attention_merge_kernel<<<dim3(rows, unsigned(a.n_heads)), HD, 0, s>>>(a);
      if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
  const int per_block = 64 / a.group;
  a.q_blocks = (a.max_q + per_block - 1) / per_block;
  a.row_first = 0;
  attention_kernel<KT, 64, false>
      <<<dim3(unsigned(int64_t(a.n_seqs) * a.q_blocks), n_kv, 1), kThreads, 0, s>>>(a);
  return cudaGetLastError();
}

}  // namespace

size_t attention_scratch_bytes(int64_t n_tokens, int64_t n_heads, int head_dim, int32_t group,
                               bool split) {
  if (n_tokens == 0 || !uses_split_kernel(head_dim, group, split)) return 0;
  return size_t(attn_split_rows_per_launch(n_tokens, n_heads, HD) *
                attn_partial_bytes_per_row(n_heads, HD));
}

cudaError_t launch_attention(cudaStream_t s, const AttnSeqArgs& a, int64_t n_tokens, int head_dim,
                             Dt kv_dt, bool split) {
  if (n_tokens == 0 || a.n_seqs == 0) return cudaSuccess;
  if (a.group < 1 || a.n_heads % a.group != 0 || a.page_size < 1 || a.max_q < 1 || head_dim < 1 ||
      head_dim > kAttnMaxHeadDim || (head_dim == HD && a.group > 64))
    return cudaErrorInvalidValue;
  return kv_dt == Dt::bf16 ? launch_typed<uint16_t>(s, a, n_tokens, head_dim, split)
                           : launch_typed<float>(s, a, n_tokens, head_dim, split);
}

}  // namespace gptoss::cuda
