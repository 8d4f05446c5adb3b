// Prefill attention on tensor cores (fast precision): flash attention with sinks over the
// paged cache, GQA heads of one KV head in one tile, bf16 Q, K, V and probabilities with fp32
// scores, softmax state and accumulators. The same semantics as attention.cu's kernels.
//
// Work split: a block takes one sequence's 64 / G consecutive query tokens and one KV head,
// so its 64 rows are (token, query head) pairs sharing every K and V tile; 4 warps each own
// 16 rows (an m16 tile) and keep their Q fragments in registers for the whole key range.
// Keys go in absolute-aligned tiles of 64 over the union of the rows' ranges (tiles outside
// a row's own range change nothing for it); per tile: S = Q K^T (4 x 8 m16n8k16 MMAs per
// warp), the online softmax on the accumulator fragments (row max and sum over the 4 lanes
// of a fragment row), then O += P V with P's fragments reused in registers as the A operand
// (the accumulator layout of two n8 tiles is the A layout of one k16 step). V is stored
// transposed in shared memory so that its B fragments are contiguous pairs of keys. The next
// tile's K and V are fetched into registers while the current one is used.
#include <cmath>

#include "device/attention_plan.cuh"
#include "device/compat.cuh"
#include "device/formats.cuh"
#include "device/mma.cuh"
#include "device/rows.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
#if !defined(GPTOSS_HIP)
namespace {

constexpr int HD = kAttnHeadDim;  // 64
constexpr int TK = 64;            // keys per tile
constexpr int kRows = 64;         // rows per block
constexpr int kThreads = 128;     // 4 warps x 16 rows
constexpr int LDK = HD + 8;       // bf16 per shared row: conflict-free fragment loads
constexpr int LDV = TK + 8;
constexpr int kChunks = TK * HD / 8;  // 8-element pieces of one K (or V) tile
constexpr int kChunksPerThread = kChunks / kThreads;
static_assert(kChunks % kThreads == 0, "K/V tile pieces per thread");

__device__ void report(DeviceError* err, int32_t code, int64_t value, int64_t limit) {
  if (err != nullptr && atomicCAS(&err->code, 0, code) == 0) {
    err->value = value;
    err->limit = limit;
  }
}

template <typename KT>
struct Raw {
  uint4 w[sizeof(KT) == 2 ? 1 : 2];
};

// Row-group max / sum over the 4 lanes that hold one row of an accumulator fragment.
__device__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

template <typename KT>
__global__ void __launch_bounds__(kThreads) attention_mma_kernel(AttnSeqArgs a) {
  __shared__ __align__(16) uint16_t Ks[TK * LDK];
  __shared__ __align__(16) uint16_t Vt[HD * LDV];
  const int tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int G = a.group, per_block = kRows / G, kvh = blockIdx.y;
  const int seq = blockIdx.x / a.q_blocks, qb = blockIdx.x % a.q_blocks;
  const AttnSeq sq = a.seqs[seq];
  const int t0 = qb * per_block;  // first token of the block, within the sequence
  if (sq.q_begin < 0 || sq.n_q < 0 || sq.pos_begin < 0 || int64_t(sq.q_begin) + sq.n_q > a.n_tokens ||
      sq.n_q > a.q_blocks * per_block) {  // outside the call's rows, or beyond max_q
    if (qb == 0 && tid == 0 && kvh == 0) report(a.err, kErrAttnSeq, seq, a.n_tokens);
    return;
  }
  if (t0 >= sq.n_q) return;  // the whole block
  const int n_tok = min(per_block, sq.n_q - t0);
  const int64_t kv_dim = int64_t(a.n_heads / G) * HD;
  const KT* k_cache = static_cast<const KT*>(a.k_cache);
  const KT* v_cache = static_cast<const KT*>(a.v_cache);

  // Keys of the block: the union of its rows' ranges.
  const int32_t pos_first = sq.pos_begin + t0, pos_last = sq.pos_begin + t0 + n_tok - 1;
  const int32_t lo = a.window > 0 ? max(0, pos_first - a.window + 1) : 0, hi = pos_last + 1;

  // This thread's two rows (g and g + 8 of its warp's m16 tile): token, head, key range.
  const int g = lane / 4, c = lane % 4;
  int32_t r_lo[2], r_hi[2];
  bool r_ok[2];
  int64_t r_out[2];
  for (int h = 0; h < 2; ++h) {
    const int row = warp * 16 + g + 8 * h, t = row / G;
    r_ok[h] = t < n_tok;
    const int32_t pos = sq.pos_begin + t0 + t;
    r_lo[h] = a.window > 0 ? max(0, pos - a.window + 1) : 0;
    r_hi[h] = r_ok[h] ? pos + 1 : 0;  // rows past the sequence see nothing
    r_out[h] = (int64_t(sq.q_begin) + t0 + t) * a.n_heads + int64_t(kvh) * G + row % G;
  }

  // Q fragments of the warp's 16 rows, bf16, for the 4 k16 steps over the head dimension.
  uint32_t qf[4][4];
  for (int ks = 0; ks < 4; ++ks)
    for (int r = 0; r < 4; ++r) {
      const mma::Coord p = mma::a_coord(lane, r);
      const int row = warp * 16 + p.row, t = row / G;
      float x0 = 0.0f, x1 = 0.0f;
      if (t < n_tok) {
        const float* qr =
            a.q + ((int64_t(sq.q_begin) + t0 + t) * a.n_heads + int64_t(kvh) * G + row % G) * HD;
        x0 = qr[ks * 16 + p.col];
        x1 = qr[ks * 16 + p.col + 1];
      }
      qf[ks][r] = pack_bf16x2(x0, x1);
    }

  Raw<KT> kraw[kChunksPerThread], vraw[kChunksPerThread];
  auto fetch = [&](int32_t tile) {
    for (int i = 0; i < kChunksPerThread; ++i) {
      const int cidx = tid + i * kThreads, j = cidx / (HD / 8), part = cidx % (HD / 8);
      const int32_t kp = tile * TK + j;
      kraw[i] = Raw<KT>{};
      vraw[i] = Raw<KT>{};
      if (kp < lo || kp >= hi) continue;
      const int64_t entry = int64_t(sq.page_table_offset) + kp / a.page_size;
      const int64_t page = entry >= 0 && entry < a.page_table_len ? a.page_table[entry] : -1;
      const int64_t slot = page * a.page_size + kp % a.page_size;
      if (page < 0 || slot >= a.n_slots) {
        report(a.err, kErrPageTable, page < 0 ? entry : slot, page < 0 ? a.page_table_len : a.n_slots);
        continue;
      }
      const int64_t off = slot * kv_dim + int64_t(kvh) * HD + part * 8;
      for (int w = 0; w < int(sizeof(kraw[i].w) / sizeof(uint4)); ++w) {
        kraw[i].w[w] = reinterpret_cast<const uint4*>(k_cache + off)[w];
        vraw[i].w[w] = reinterpret_cast<const uint4*>(v_cache + off)[w];
      }
    }
  };

  float o[8][4];  // 16 rows x 64 dims: 8 n8 tiles
  for (int ni = 0; ni < 8; ++ni)
    for (int i = 0; i < 4; ++i) o[ni][i] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // per row; l is this lane's share

  const int32_t first = lo < hi ? lo / TK : 0, last = lo < hi ? (hi - 1) / TK : -1;
  if (first <= last) fetch(first);
  for (int32_t tile = first; tile <= last; ++tile) {
    __syncthreads();  // the previous tile's fragments are all read
    for (int i = 0; i < kChunksPerThread; ++i) {
      const int cidx = tid + i * kThreads, j = cidx / (HD / 8), part = cidx % (HD / 8);
      float kv[8], vv[8];
      if constexpr (sizeof(KT) == 2) {
        load8(reinterpret_cast<const uint16_t*>(&kraw[i].w[0]), kv);
        load8(reinterpret_cast<const uint16_t*>(&vraw[i].w[0]), vv);
      } else {
        load8(reinterpret_cast<const float*>(&kraw[i].w[0]), kv);
        load8(reinterpret_cast<const float*>(&vraw[i].w[0]), vv);
      }
      *reinterpret_cast<uint4*>(&Ks[j * LDK + part * 8]) =
          make_uint4(pack_bf16x2(kv[0], kv[1]), pack_bf16x2(kv[2], kv[3]), pack_bf16x2(kv[4], kv[5]),
                     pack_bf16x2(kv[6], kv[7]));
      for (int e = 0; e < 8; ++e) Vt[(part * 8 + e) * LDV + j] = f32_to_bf16(vv[e]);
    }
    __syncthreads();
    if (tile < last) fetch(tile + 1);

    // S = Q K^T for the warp's 16 rows and the tile's 64 keys.
    float s[8][4];
    for (int ni = 0; ni < 8; ++ni) {
      for (int i = 0; i < 4; ++i) s[ni][i] = 0.0f;
      for (int ks = 0; ks < 4; ++ks) {
        uint32_t b[2];
        mma::load_b(b, Ks + ni * 8 * LDK + ks * 16, LDK, lane);
        mma::mma_bf16_16x8x16(s[ni], qf[ks], b);
      }
    }
    // Online softmax per row (h: row g or g + 8); masked keys get probability 0.
    for (int h = 0; h < 2; ++h) {
      float mx = -INFINITY;
      for (int ni = 0; ni < 8; ++ni)
        for (int e = 0; e < 2; ++e) {
          const int32_t kp = tile * TK + ni * 8 + 2 * c + e;
          float& v = s[ni][2 * h + e];
          v = kp >= r_lo[h] && kp < r_hi[h] ? v * a.scale : -INFINITY;
          mx = fmaxf(mx, v);
        }
      mx = quad_max(mx);
      if (mx == -INFINITY) {  // no key of this tile for the row: nothing changes
        for (int ni = 0; ni < 8; ++ni) s[ni][2 * h] = s[ni][2 * h + 1] = 0.0f;
        continue;
      }
      const float m_new = fmaxf(m[h], mx), corr = expf(m[h] - m_new);
      float sum = 0.0f;
      for (int ni = 0; ni < 8; ++ni)
        for (int e = 0; e < 2; ++e) {
          float& v = s[ni][2 * h + e];
          v = v == -INFINITY ? 0.0f : expf(v - m_new);
          sum += v;
        }
      l[h] = l[h] * corr + sum;
      m[h] = m_new;
      for (int ni = 0; ni < 8; ++ni) o[ni][2 * h] *= corr, o[ni][2 * h + 1] *= corr;
    }
    // O += P V: P's accumulators of n8 tiles 2j, 2j + 1 are the A fragment of k16 step j.
    for (int j = 0; j < 4; ++j) {
      const uint32_t pf[4] = {pack_bf16x2(s[2 * j][0], s[2 * j][1]), pack_bf16x2(s[2 * j][2], s[2 * j][3]),
                              pack_bf16x2(s[2 * j + 1][0], s[2 * j + 1][1]),
                              pack_bf16x2(s[2 * j + 1][2], s[2 * j + 1][3])};
      for (int ni = 0; ni < 8; ++ni) {
        uint32_t b[2];
        mma::load_b(b, Vt + ni * 8 * LDV + j * 16, LDV, lane);
        mma::mma_bf16_16x8x16(o[ni], pf, b);
      }
    }
  }

  // The sink joins each row's denominator; lanes of a row add their shares of l.
  for (int h = 0; h < 2; ++h) {
    const float lt = quad_sum(l[h]);
    if (!r_ok[h]) continue;
    const int row = warp * 16 + g + 8 * h;
    const float sink = a.sinks[int64_t(kvh) * G + row % G];
    const float M = fmaxf(m[h], sink), f = expf(m[h] - M), inv = f / (lt * f + expf(sink - M));
    float* out = a.out + r_out[h] * HD;
    for (int ni = 0; ni < 8; ++ni) {
      const int d = ni * 8 + 2 * c;
      *reinterpret_cast<float2*>(out + d) = make_float2(o[ni][2 * h] * inv, o[ni][2 * h + 1] * inv);
    }
  }
}

}  // namespace

bool attention_mma_supported(int32_t group) { return group >= 1 && group <= kRows && kRows % group == 0; }

cudaError_t launch_attention_mma(cudaStream_t s, AttnSeqArgs a, Dt kv_dt) {
  if (a.n_seqs == 0) return cudaSuccess;
  if (!attention_mma_supported(a.group) || a.n_heads % a.group != 0 || a.page_size < 1)
    return cudaErrorInvalidValue;
  a.q_blocks = (a.max_q + kRows / a.group - 1) / (kRows / a.group);
  const dim3 grid{unsigned(int64_t(a.n_seqs) * a.q_blocks), unsigned(a.n_heads / a.group)};
  if (kv_dt == Dt::bf16)
    attention_mma_kernel<uint16_t><<<grid, kThreads, 0, s>>>(a);
  else
    attention_mma_kernel<float><<<grid, kThreads, 0, s>>>(a);
  return cudaGetLastError();
}

#else  // HIP: no MFMA kernel yet; ops.cpp takes the fp32 attention (attention.cu) instead.

bool attention_mma_supported(int32_t) { return false; }

cudaError_t launch_attention_mma(cudaStream_t, AttnSeqArgs, Dt) { return cudaErrorNotSupported; }

#endif
}  // namespace gptoss::cuda
