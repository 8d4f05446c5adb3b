#pragma once
// Eight consecutive elements at a time, f32 or bf16, as one or two 16-byte accesses (callers
// guarantee 16-byte alignment: rows of cols % 8 == 0 elements from aligned buffers), and one
// at a time for rows of other lengths.
#include "../kernels.hpp"
#include "compat.cuh"
#include "formats.cuh"

namespace gptoss::cuda {

#if GPTOSS_GPU_CODE
GPTOSS_DEV void load8(const float* p, float v[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p);
  const float4 b = *reinterpret_cast<const float4*>(p + 4);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

GPTOSS_DEV void load8(const uint16_t* p, float v[8]) {
  const uint4 q = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = bits_to_float(w[i] << 16);
    v[2 * i + 1] = bits_to_float(w[i] & 0xffff0000u);
  }
}

GPTOSS_DEV void store8(float* p, const float v[8]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  *reinterpret_cast<float4*>(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
}

GPTOSS_DEV void store8(uint16_t* p, const float v[8]) {
  *reinterpret_cast<uint4*>(p) = make_uint4(pack_bf16x2(v[0], v[1]), pack_bf16x2(v[2], v[3]),
                                            pack_bf16x2(v[4], v[5]), pack_bf16x2(v[6], v[7]));
}

GPTOSS_DEV float load1(const float* p) { return *p; }
GPTOSS_DEV float load1(const uint16_t* p) { return bf16_to_f32(*p); }

// Elements [col, col + 8) of row `row` of a dense matrix.
GPTOSS_DEV void load8(const DenseView& m, int64_t row, int64_t col, float v[8]) {
  if (m.dt == Dt::bf16)
    load8(static_cast<const uint16_t*>(m.data) + row * m.cols + col, v);
  else
    load8(static_cast<const float*>(m.data) + row * m.cols + col, v);
}

GPTOSS_DEV float load1(const DenseView& m, int64_t row, int64_t col) {
  return m.dt == Dt::bf16 ? load1(static_cast<const uint16_t*>(m.data) + row * m.cols + col)
                          : load1(static_cast<const float*>(m.data) + row * m.cols + col);
}
#endif

}  // namespace gptoss::cuda
