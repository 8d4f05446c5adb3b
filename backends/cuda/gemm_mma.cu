// Tensor-core GEMM for many tokens in fast precision (prefill chunks, large batches), dense
// and MoE alike: C[m, n] = sum_k A[m, k] W[n, k] with A the f32 activation rows rounded to
// bf16 and W bf16 as stored, f32 rounded to bf16, or MXFP4 decoded exactly to bf16
// (v * 2^(e-127) has two significant bits); fp32 accumulation in mma.sync m16n8k16.
// Our own kernel, not cuBLASLt: one tile loop serves dense and MXFP4 weights, and the HIP build
// (no BLAS on Debian's ROCm) compiles the same file.
//
// MoE: the M rows of a tile are one expert's assignments (moe_group.cu; tile_m = kGemmTileM),
// gathered by index; the epilogue applies the bias and either the clamped SwiGLU (mlp1: the
// accumulator pair of a thread is a glu/linear column pair) or nothing (mlp2: y per
// assignment; moe_combine sums a token's experts).
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "device/compat.cuh"
#include "device/formats.cuh"
#include "device/mma.cuh"
#include "device/moe_routing.cuh"
#include "device/rows.cuh"
#include "device/segments.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

constexpr int BM = kGemmTileM;  // 64 rows of A (tokens / assignments)
constexpr int BN = 128;         // rows of W (outputs)
constexpr int BK = 32;          // K per step: one MXFP4 block per W row
constexpr int LDS = BK + 8;     // bf16 per shared row: fragment loads hit 32 distinct banks
constexpr int kThreads = 256;   // 8 warps (4 wavefronts): 2 (M) x 4 (2) of 32 x 32 (32 x 64)
constexpr int kWarpsN = kThreads / kWarpSize / 2;
constexpr int WN = BN / kWarpsN;  // columns per warp: 4 MMA tiles of 8 (mma.sync) or 16 (MFMA)

enum class WKind { bf16, f32, mxfp4 };
enum class Epi { dense, swiglu, down };

struct GemmArgs {
  const float* a;  // activations [*, k]
  int64_t m;       // dense: rows of a
  int64_t n;       // rows of W (per expert)
  int64_t k;
  const void* w;       // dense W [n, k]
  Mxfp4View wq;        // MoE W
  const float* bias;   // dense [n]; MoE [experts, n]; may be null
  MoeRouting routing;  // MoE
  int act_div;         // MoE: activation row of assignment a = a / act_div
  float limit;         // SwiGLU clamp
  float* out;          // dense [m, n]; swiglu act [n_assign, n / 2]; down y [n_assign, n]
  SegTable segs;       // dense: the matrices (Q, K, V fused); w, n, bias, out come from them
};

__device__ float bias_at(const float* bias, int64_t i) { return bias != nullptr ? bias[i] : 0.0f; }

__device__ float swiglu(float glu, float lin, float limit) {
  glu = fminf(glu, limit);
  lin = fminf(fmaxf(lin, -limit), limit);
  return glu / (1.0f + expf(-1.702f * glu)) * (lin + 1.0f);
}

// What one thread moves from global memory per K step, held in registers across the step's
// MMAs (the software pipeline): 8 floats of A (row tid / 4, columns (tid % 4) * 8 ..), and
// 16 elements of W (row tid / 2, columns (tid % 2) * 16 ..).
template <WKind WK>
struct Staged;
template <>
struct Staged<WKind::bf16> {
  float a[8];
  uint4 w[2];
};
template <>
struct Staged<WKind::f32> {
  float a[8];
  float w[16];
};
template <>
struct Staged<WKind::mxfp4> {
  float a[8];
  uint2 codes;
  uint8_t scale;
};

template <WKind WK>
__device__ void load_step(const GemmArgs& g, const int32_t* a_rows, int64_t n0, int64_t w_row0, int64_t k0,
                          Staged<WK>& st) {
  const int tid = threadIdx.x;
  {  // A: row tid / 4, 8 columns; zeros past K or for padding rows
    const int32_t ar = a_rows[tid / 4];
    const int64_t c = k0 + (tid % 4) * 8;
    if (ar >= 0 && c < g.k)
      load8(g.a + int64_t(ar) * g.k + c, st.a);
    else
      for (int i = 0; i < 8; ++i) st.a[i] = 0.0f;
  }
  const int64_t row = n0 + tid / 2;  // W row within the expert
  const bool row_ok = row < g.n;
  const int64_t c = k0 + (tid % 2) * 16;
  if constexpr (WK == WKind::bf16) {
    const uint16_t* w = static_cast<const uint16_t*>(g.w) + (w_row0 + row) * g.k + c;
    for (int i = 0; i < 2; ++i)
      st.w[i] =
          row_ok && c + 8 * i < g.k ? *reinterpret_cast<const uint4*>(w + 8 * i) : make_uint4(0, 0, 0, 0);
  } else if constexpr (WK == WKind::f32) {
    const float* w = static_cast<const float*>(g.w) + (w_row0 + row) * g.k + c;
    for (int i = 0; i < 2; ++i) {
      if (row_ok && c + 8 * i < g.k)
        load8(w + 8 * i, st.w + 8 * i);
      else
        for (int j = 0; j < 8; ++j) st.w[8 * i + j] = 0.0f;
    }
  } else {
    // One MXFP4 block per row and step: half (tid % 2) of its 16 code bytes, and its scale.
    const int64_t gr = w_row0 + row, b = k0 / 32;
    if (row_ok) {
      st.codes = *reinterpret_cast<const uint2*>(g.wq.codes + gr * (g.k / 2) + b * 16 + (tid % 2) * 8);
      st.scale = g.wq.scales[gr * (g.k / 32) + b];
    } else {
      st.codes = make_uint2(0, 0);
      st.scale = 127;  // 1.0: zero codes stay zero
    }
  }
}

template <WKind WK>
__device__ void store_step(const Staged<WK>& st, uint16_t* As, uint16_t* Bs) {
  const int tid = threadIdx.x;
  *reinterpret_cast<uint4*>(As + (tid / 4) * LDS + (tid % 4) * 8) =
      make_uint4(pack_bf16x2(st.a[0], st.a[1]), pack_bf16x2(st.a[2], st.a[3]), pack_bf16x2(st.a[4], st.a[5]),
                 pack_bf16x2(st.a[6], st.a[7]));
  uint16_t* b = Bs + (tid / 2) * LDS + (tid % 2) * 16;
  if constexpr (WK == WKind::bf16) {
    reinterpret_cast<uint4*>(b)[0] = st.w[0];
    reinterpret_cast<uint4*>(b)[1] = st.w[1];
  } else if constexpr (WK == WKind::f32) {
    for (int i = 0; i < 2; ++i)
      reinterpret_cast<uint4*>(b)[i] = make_uint4(
          pack_bf16x2(st.w[8 * i], st.w[8 * i + 1]), pack_bf16x2(st.w[8 * i + 2], st.w[8 * i + 3]),
          pack_bf16x2(st.w[8 * i + 4], st.w[8 * i + 5]), pack_bf16x2(st.w[8 * i + 6], st.w[8 * i + 7]));
  } else {
    const float s = 0.5f * e8m0_to_f32(st.scale);  // the int8 codes are 2v
    uint32_t q[4];
    e2m1x8_to_i8x8(st.codes.x, q);
    e2m1x8_to_i8x8(st.codes.y, q + 2);
    uint32_t p[8];
    for (int i = 0; i < 8; ++i)
      p[i] =
          pack_bf16x2(float(i8_at(q[i / 2], 2 * (i % 2))) * s, float(i8_at(q[i / 2], 2 * (i % 2) + 1)) * s);
    reinterpret_cast<uint4*>(b)[0] = make_uint4(p[0], p[1], p[2], p[3]);
    reinterpret_cast<uint4*>(b)[1] = make_uint4(p[4], p[5], p[6], p[7]);
  }
}

// Block: a BM x BN output tile, K in steps of BK through double-buffered shared memory: the
// next step's global loads are issued into registers before the current step's MMAs and
// stored (converted to bf16) after them. Warp (wm, wn) owns rows wm*32.., columns wn*WN..:
// 2 x 4 MMA tiles of 16 x 8 (mma.sync: 8 warps); in the HIP build, wavefront (wm, wn) owns
// 2 x 4 MFMA tiles of 16 x 16 (4 wavefronts). Loads, stores and the pipeline are shared.
template <WKind WK, Epi E>
__global__ void __launch_bounds__(kThreads) gemm_kernel(GemmArgs args) {
  GemmArgs g = args;
  __shared__ __align__(16) uint16_t As[2][BM * LDS];
  __shared__ __align__(16) uint16_t Bs[2][BN * LDS];
  __shared__ int32_t a_rows[BM];    // activation row of tile row i (-1: padding)
  __shared__ int32_t out_rows[BM];  // output row of tile row i (-1: none)
  const int tid = threadIdx.x, warp = tid / kWarpSize, lane = tid % kWarpSize;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;
  int64_t n0 = int64_t(blockIdx.x) * BN;
  int32_t expert = 0;
  if constexpr (E == Epi::dense) {
    int64_t local;
    const int sg = seg_of(g.segs, blockIdx.x, &local);
    n0 = local * BN;
    g.w = g.segs.w[sg];
    g.n = g.segs.rows[sg];
    g.bias = g.segs.bias[sg];
    g.out = g.segs.out[sg];
    const int64_t m0 = int64_t(blockIdx.y) * BM;
    for (int i = tid; i < BM; i += kThreads) a_rows[i] = out_rows[i] = m0 + i < g.m ? int32_t(m0 + i) : -1;
  } else {
    MoeTile tile;
    if (!moe_find_tile(g.routing, int32_t(blockIdx.y), tile)) return;  // the whole block
    expert = tile.expert;
    for (int i = tid; i < BM; i += kThreads) {
      const int32_t a = i < tile.count ? g.routing.order[tile.begin + i] : -1;
      out_rows[i] = a;
      a_rows[i] = a >= 0 ? a / g.act_div : -1;
    }
  }
  __syncthreads();
  const int64_t w_row0 = int64_t(expert) * g.n;  // MoE: the expert's first row

  float acc[2][4][4];
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mi][ni][i] = 0.0f;

  const int64_t steps = (g.k + BK - 1) / BK;
  Staged<WK> st;
  load_step<WK>(g, a_rows, n0, w_row0, 0, st);
  store_step<WK>(st, As[0], Bs[0]);
  __syncthreads();
  for (int64_t s = 0; s < steps; ++s) {
    const int cur = int(s & 1);
    if (s + 1 < steps) load_step<WK>(g, a_rows, n0, w_row0, (s + 1) * BK, st);
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
#if defined(GPTOSS_HIP)
      mfma::Frag af[2], bf[4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
        af[mi] = mfma::load_a(As[cur] + (wm * 32 + mi * 16) * LDS + kk, LDS, lane);
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
        bf[ni] = mfma::load_b(Bs[cur] + (wn * WN + ni * 16) * LDS + kk, LDS, lane);
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mfma::mma_bf16_16x16x16(acc[mi][ni], af[mi], bf[ni]);
#else
      uint32_t af[2][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) mma::load_a(af[mi], As[cur] + (wm * 32 + mi * 16) * LDS + kk, LDS, lane);
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) mma::load_b(bf[ni], Bs[cur] + (wn * WN + ni * 8) * LDS + kk, LDS, lane);
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mma::mma_bf16_16x8x16(acc[mi][ni], af[mi], bf[ni]);
#endif
    }
    // Buffer cur ^ 1 was last read in step s - 1, before the barrier that ended it.
    if (s + 1 < steps) store_step<WK>(st, As[cur ^ 1], Bs[cur ^ 1]);
    __syncthreads();
  }

  const float* bias = g.bias != nullptr ? g.bias + (E == Epi::dense ? 0 : w_row0) : nullptr;
#if defined(GPTOSS_HIP)
  // Epilogue: accumulator v of a lane is one element; its column's neighbour (c ^ 1, same
  // row) is on lane ^ 1, fetched before any lane leaves.
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const mfma::Coord p = mfma::c_coord(lane, v);
        const float val = acc[mi][ni][v], next = __shfl_xor(val, 1);
        const int32_t orow = out_rows[wm * 32 + mi * 16 + p.row];
        const int64_t col = n0 + wn * WN + ni * 16 + p.col;
        if (orow < 0 || col >= g.n) continue;
        if constexpr (E == Epi::swiglu) {  // glu at even columns, linear after it (n is even)
          if (col % 2 == 0)
            g.out[int64_t(orow) * (g.n / 2) + col / 2] =
                swiglu(val + bias_at(bias, col), next + bias_at(bias, col + 1), g.limit);
        } else {
          g.out[int64_t(orow) * g.n + col] = val + bias_at(bias, col);
        }
      }
#else
  // Epilogue: accumulators 2h, 2h + 1 of a thread are columns (c, c + 1), c even, of one row.
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const mma::Coord p = mma::c_coord(lane, 2 * h);
        const int32_t orow = out_rows[wm * 32 + mi * 16 + p.row];
        const int64_t col = n0 + wn * WN + ni * 8 + p.col;
        if (orow < 0 || col >= g.n) continue;
        const float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
        const float b0 = bias_at(bias, col);
        if constexpr (E == Epi::swiglu) {  // n is even: col + 1 < n
          g.out[int64_t(orow) * (g.n / 2) + col / 2] = swiglu(v0 + b0, v1 + bias_at(bias, col + 1), g.limit);
        } else {
          g.out[int64_t(orow) * g.n + col] = v0 + b0;
          if (col + 1 < g.n) g.out[int64_t(orow) * g.n + col + 1] = v1 + bias_at(bias, col + 1);
        }
      }
#endif
}

template <WKind WK, Epi E>
cudaError_t launch(cudaStream_t s, const GemmArgs& g, int64_t m_tiles) {
  const int64_t n_tiles = E == Epi::dense ? g.segs.first[g.segs.n] : (g.n + BN - 1) / BN;
  const dim3 grid{unsigned(n_tiles), unsigned(m_tiles)};
  gemm_kernel<WK, E><<<grid, kThreads, 0, s>>>(g);
  return cudaGetLastError();
}

}  // namespace

bool matrix_units_enabled() {
#if defined(GPTOSS_HIP)
  static const bool on = [] {
    const char* v = std::getenv("GPTOSS_HIP_MFMA");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
#else
  return true;
#endif
}

cudaError_t launch_gemm_dense(cudaStream_t s, const float* x, const LinearSegs& segs, int64_t m) {
  if (m == 0) return cudaSuccess;
  for (int j = 1; j < segs.n; ++j)
    if (segs.w[j].dt != segs.w[0].dt || segs.w[j].cols != segs.w[0].cols) return cudaErrorInvalidValue;
  GemmArgs g{};
  g.a = x;
  g.m = m;
  g.k = segs.w[0].cols;
  g.segs = seg_table(segs, BN);
  const int64_t m_tiles = (m + BM - 1) / BM;
  return segs.w[0].dt == Dt::bf16 ? launch<WKind::bf16, Epi::dense>(s, g, m_tiles)
                                  : launch<WKind::f32, Epi::dense>(s, g, m_tiles);
}

cudaError_t launch_gemm_moe(cudaStream_t s, bool stage1, const float* a, int act_div, Mxfp4View w,
                            const float* bias, const MoeRouting& routing, int64_t max_tiles, float limit,
                            float* out) {
  if (max_tiles == 0) return cudaSuccess;
  if (routing.tile_m != BM || (stage1 && w.rows % 2 != 0) || w.cols % BK != 0) return cudaErrorInvalidValue;
  GemmArgs g{};
  g.a = a;
  g.n = w.rows;
  g.k = w.cols;
  g.wq = w;
  g.bias = bias;
  g.routing = routing;
  g.act_div = act_div;
  g.limit = limit;
  g.out = out;
  return stage1 ? launch<WKind::mxfp4, Epi::swiglu>(s, g, max_tiles)
                : launch<WKind::mxfp4, Epi::down>(s, g, max_tiles);
}

}  // namespace gptoss::cuda
