#pragma once
// The avx512bf16 level's kernels (vdpbf16ps), as its table names them.
namespace gptoss::cpu {
struct AttnBf16Kernels;
struct DenseBf16Kernels;
}  // namespace gptoss::cpu

namespace gptoss::cpu::avx512bf16 {

extern const AttnBf16Kernels kAttentionBf16;  // attention.cpp
extern const DenseBf16Kernels kDenseBf16;     // dense.cpp

}  // namespace gptoss::cpu::avx512bf16
