// The chooser: the rows below, first match wins. A new weight format or kernel adds its row;
// a level takes part by the pointers its table sets (a null field skips the row).
#include "choose.hpp"

#include "attention_kernels.hpp"
#include "cpu_backend.hpp"
#include "dense_bf16_kernels.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

enum class Format {
  any,
  mxfp4,
  q8_0_logits,  // Q8_0 unembedding (a GGUF's output tensor)
  q8_0_proj,    // any other Q8_0 matrix (a GGUF's attention projections)
  bf16_logits,  // bf16 unembedding (its outputs feed the sampler only), even columns
  bf16_lanes,   // bf16 rows repacked at upload (Weight::bf16_lanes)
  q8_0_lanes,   // Q8_0 rows repacked at upload (Weight::q8_0_lanes)
  mxfp4_lanes,  // MXFP4 experts repacked at upload (Weight::mxfp4_lanes)
};
enum class Tokens {
  any,
  one,      // this call multiplies one token
  step,     // the op's step has at most kGemvStepTokens tokens (sequences decoding together)
  batch,    // the op's step has more (prefill)
  few,      // this call multiplies 2 to kGemvTokens tokens
  several,  // this call multiplies 2 to kGemvStepTokens tokens
};
enum class Precision { any, fast };

bool has_fp32(const Kernels& k, const Weight&) { return k.fp32 != nullptr; }
bool has_fp32_pairs(const Kernels& k, const Weight& w) {
  return k.fp32 != nullptr && k.fp32->has_pairs(w.dtype);
}
// The int8 kernels of w's format at level k (null where the level has none).
Kernels::Int8Matmul int8_matmul(const Kernels& k, const Weight& w) {
  return w.dtype == gptoss_dtype_q8_0 ? k.matmul_q8_0_q8 : k.matmul_mxfp4_q8;
}
Kernels::Int8Matmul int8_gemv(const Kernels& k, const Weight& w) {
  return w.dtype == gptoss_dtype_q8_0 ? k.gemv_q8_0_q8 : k.gemv_mxfp4_q8;
}
bool has_q8(const Kernels& k, const Weight& w) { return int8_matmul(k, w) != nullptr; }
bool has_q8_step(const Kernels& k, const Weight& w) {
  return int8_gemv(k, w) != nullptr && int8_matmul(k, w) != nullptr;
}
bool has_q16(const Kernels& k, const Weight&) {
  return k.quantize_q16 != nullptr && k.matmul_q8_0_q16 != nullptr;
}
bool has_bf16_lanes(const Kernels& k, const Weight&) { return k.matmul_bf16_lanes != nullptr; }
bool has_q16_lanes(const Kernels& k, const Weight&) {
  return k.quantize_q16 != nullptr && k.matmul_q8_0_lanes_q16 != nullptr;
}
bool has_q8_lanes(const Kernels& k, const Weight&) {
  return k.quantize_q8 != nullptr && k.matmul_mxfp4_lanes_q8 != nullptr;
}
bool has_bf16_pairs(const Kernels& k, const Weight&) {
  return k.dense_bf16 != nullptr && k.attention_bf16 != nullptr;
}

struct Row {
  Format format;
  Tokens tokens;
  Precision precision;
  bool (*level_has)(const Kernels&, const Weight&);
  MatmulKernel kernel;
};

// Why each row: the weights that the upload repacked (the attention projections in bf16 lanes;
// Q8_0 lanes, which it makes of the projections and the unembedding, and MXFP4 lanes, which it
// makes of the experts, in the fast precision only) take their one kernel at every token count; the
// fast mode multiplies MXFP4 weights by int8 activations where a level has the kernels (GEMV for
// one token, the several-token GEMV for a decode step's few, or else the one-token GEMV per token
// over L2-sized row blocks; panels for prefill); so does a Q8_0 unembedding left in rows (not whole
// tiles of 16 rows), with panels from 5 tokens on (every token of a step shares it: at 8 the panels
// are 1.6x the several-token GEMV), and the bf16 unembedding takes bf16 pairs in every step: their
// logits feed no later layer. Int8 activations into the Q8_0 attention projections would be faster
// still, but they about double the fast precision's error on the logits set
// (docs/performance.md, "Q8_0 times int8 and int16"), so those take int16 activations where a
// level has the kernels (the GEMV for one token, per token over L2-sized row blocks for 2 to 4,
// panels beyond; repacked, the lanes kernel at every count). Everything else takes fp32
// activations: the GEMV for one token, two tokens per row read for the 16-bit and Q8_0 rows of a
// decode step, the GEMV per token over row blocks for a few, the panels beyond.
//
// Which kernel serves a call changes no result (choose.hpp); the rows are the fastest measured
// (docs/performance.md). The rows are a table, aligned by column.
// clang-format off
constexpr Row kRows[] = {
    // format            tokens           precision        level has       kernel
    {Format::bf16_lanes,  Tokens::any,     Precision::any,  has_bf16_lanes, MatmulKernel::bf16_lanes},
    {Format::q8_0_lanes,  Tokens::any,     Precision::any,  has_q16_lanes,  MatmulKernel::q16_lanes},
    {Format::mxfp4_lanes, Tokens::any,     Precision::any,  has_q8_lanes,   MatmulKernel::q8_lanes},
    {Format::bf16_logits, Tokens::any,     Precision::fast, has_bf16_pairs, MatmulKernel::bf16_pairs},
    {Format::mxfp4,       Tokens::one,     Precision::fast, has_q8,         MatmulKernel::q8},
    {Format::mxfp4,       Tokens::batch,   Precision::fast, has_q8,         MatmulKernel::q8},
    {Format::mxfp4,       Tokens::step,    Precision::fast, has_q8_step,    MatmulKernel::q8_step},
    {Format::mxfp4,       Tokens::step,    Precision::fast, has_q8,         MatmulKernel::q8_each_token},
    {Format::q8_0_logits, Tokens::one,     Precision::fast, has_q8,         MatmulKernel::q8},
    {Format::q8_0_logits, Tokens::few,     Precision::fast, has_q8_step,    MatmulKernel::q8_step},
    {Format::q8_0_logits, Tokens::any,     Precision::fast, has_q8,         MatmulKernel::q8},
    {Format::q8_0_proj,   Tokens::one,     Precision::fast, has_q16,        MatmulKernel::q16},
    {Format::q8_0_proj,   Tokens::few,     Precision::fast, has_q16,        MatmulKernel::q16_each_token},
    {Format::q8_0_proj,   Tokens::any,     Precision::fast, has_q16,        MatmulKernel::q16},
    {Format::any,         Tokens::one,     Precision::any,  has_fp32,       MatmulKernel::fp32_gemv},
    {Format::any,         Tokens::several, Precision::any,  has_fp32_pairs, MatmulKernel::fp32_pairs},
    {Format::any,         Tokens::few,     Precision::any,  has_fp32,       MatmulKernel::fp32_row_blocks},
    {Format::any,         Tokens::any,     Precision::any,  has_fp32,       MatmulKernel::fp32_panels},
};
// clang-format on

bool matches(Format f, const Weight& w) {
  switch (f) {
    case Format::any: return true;
    case Format::mxfp4: return w.dtype == gptoss_dtype_mxfp4;
    case Format::q8_0_logits: return w.dtype == gptoss_dtype_q8_0 && w.logits_only;
    case Format::q8_0_proj: return w.dtype == gptoss_dtype_q8_0 && !w.logits_only;
    case Format::bf16_lanes: return w.bf16_lanes;
    case Format::q8_0_lanes: return w.q8_0_lanes;
    case Format::mxfp4_lanes: return w.mxfp4_lanes;
    case Format::bf16_logits:
      return w.dtype == gptoss_dtype_bf16 && w.logits_only && w.cols % 2 == 0;
  }
  return false;
}

bool matches(Tokens t, size_t step_tokens, size_t n_tok) {
  switch (t) {
    case Tokens::any: return true;
    case Tokens::one: return n_tok == 1;
    case Tokens::step: return step_tokens <= kGemvStepTokens;
    case Tokens::batch: return step_tokens > kGemvStepTokens;
    case Tokens::few: return n_tok >= 2 && n_tok <= kGemvTokens;
    case Tokens::several: return n_tok >= 2 && n_tok <= kGemvStepTokens;
  }
  return false;
}

}  // namespace

MatmulActs acts_of(MatmulKernel k) {
  switch (k) {
    case MatmulKernel::fp32_gemv:
    case MatmulKernel::fp32_row_blocks:
    case MatmulKernel::fp32_pairs:
    case MatmulKernel::fp32_panels:
    case MatmulKernel::bf16_lanes: return MatmulActs::fp32;
    case MatmulKernel::bf16_pairs: return MatmulActs::bf16_pairs;
    case MatmulKernel::q8:
    case MatmulKernel::q8_step:
    case MatmulKernel::q8_each_token:
    case MatmulKernel::q8_lanes: return MatmulActs::q8;
    case MatmulKernel::q16:
    case MatmulKernel::q16_each_token:
    case MatmulKernel::q16_lanes: return MatmulActs::q16;
  }
  return MatmulActs::fp32;
}

MatmulKernel choose_matmul(const Kernels& k, const Weight& w, size_t step_tokens, size_t n_tok,
                           bool fast) {
  for (const Row& r : kRows)
    if (matches(r.format, w) && matches(r.tokens, step_tokens, n_tok) &&
        (r.precision == Precision::any || fast) && r.level_has(k, w))
      return r.kernel;
  return MatmulKernel::fp32_panels;
}

void run_matmul(MatmulKernel kernel, const Kernels& k, const Weight& w, size_t r0, size_t n_rows,
                const ActsView& x, size_t t0, size_t n_tok, float* y, size_t ldy) {
  switch (kernel) {
    case MatmulKernel::fp32_gemv:
      return k.fp32->gemv(w, r0, n_rows, x.x + t0 * x.ld, x.ld, n_tok, y, ldy);
    case MatmulKernel::fp32_row_blocks:
      return k.fp32->row_blocks(w, r0, n_rows, x.x + t0 * x.ld, x.ld, n_tok, y, ldy);
    case MatmulKernel::fp32_pairs:
      return k.fp32->pairs(w, r0, n_rows, x.x + t0 * x.ld, x.ld, n_tok, y, ldy);
    case MatmulKernel::fp32_panels:
      return k.fp32->panels(w, r0, n_rows, x.x + t0 * x.ld, x.ld, n_tok, y, ldy);
    case MatmulKernel::bf16_pairs:
      return k.dense_bf16->matmul(w, r0, n_rows, x.x + t0 * x.ld, x.ld, n_tok, y, ldy);
    case MatmulKernel::bf16_lanes:
      return k.matmul_bf16_lanes(w, r0, n_rows, x.x + t0 * x.ld, x.ld, n_tok, y, ldy);
    case MatmulKernel::q8: return int8_matmul(k, w)(w, r0, n_rows, *x.q8, t0, n_tok, y, ldy);
    case MatmulKernel::q8_step: return int8_gemv(k, w)(w, r0, n_rows, *x.q8, t0, n_tok, y, ldy);
    case MatmulKernel::q8_each_token: {
      const Kernels::Int8Matmul matmul = int8_matmul(k, w);
      const size_t scale_bytes = w.scales != nullptr ? w.cols / 32 : 0;
      return for_each_token_block(n_rows, w.row_bytes + scale_bytes, n_tok,
                                  [&](size_t b, size_t n, size_t t) {
                                    matmul(w, r0 + b, n, *x.q8, t0 + t, 1, y + t * ldy + b, ldy);
                                  });
    }
    case MatmulKernel::q8_lanes:
      return k.matmul_mxfp4_lanes_q8(w, r0, n_rows, *x.q8, t0, n_tok, y, ldy);
    case MatmulKernel::q16: return k.matmul_q8_0_q16(w, r0, n_rows, *x.q16, t0, n_tok, y, ldy);
    case MatmulKernel::q16_each_token:
      return for_each_token_block(n_rows, w.row_bytes, n_tok, [&](size_t b, size_t n, size_t t) {
        k.matmul_q8_0_q16(w, r0 + b, n, *x.q16, t0 + t, 1, y + t * ldy + b, ldy);
      });
    case MatmulKernel::q16_lanes:
      return k.matmul_q8_0_lanes_q16(w, r0, n_rows, *x.q16, t0, n_tok, y, ldy);
  }
}

}  // namespace gptoss::cpu
