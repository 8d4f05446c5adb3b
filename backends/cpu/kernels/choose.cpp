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
  bf16_logits,  // bf16 unembedding (its outputs feed the sampler only), even columns
};
enum class Tokens {
  any,
  one,    // this call multiplies one token
  step,   // the op's step has at most kGemvStepTokens tokens (sequences decoding together)
  batch,  // the op's step has more (prefill)
};
enum class Precision { any, fast };

bool has_matmul(const Kernels& k) { return k.matmul != nullptr; }
bool has_q8(const Kernels& k) { return k.matmul_mxfp4_q8 != nullptr; }
bool has_q8_step(const Kernels& k) {
  return k.gemv_mxfp4_q8 != nullptr && k.matmul_mxfp4_q8 != nullptr;
}
bool has_bf16_pairs(const Kernels& k) {
  return k.dense_bf16 != nullptr && k.attention_bf16 != nullptr;
}

struct Row {
  Format format;
  Tokens tokens;
  Precision precision;
  bool (*level_has)(const Kernels&);
  MatmulKernel kernel;
};

// Why each row: the fast mode multiplies MXFP4 weights by int8 activations where a level has the
// kernels; a step of several sequences keeps each token's one-token arithmetic (so a sequence's
// tokens do not depend on what decodes beside it) with the several-token GEMV, or else the
// one-token GEMV per token over blocks of rows that stay in L2; prefill keeps the panel kernels
// for every group of tokens, so chunking a prompt changes no result. Only the unembedding takes
// bf16 activations (its logits feed no later layer), and only in decode steps.
// The rows are a table, aligned by column.
// clang-format off
constexpr Row kRows[] = {
    // format            tokens         precision        level has       kernel
    {Format::bf16_logits, Tokens::step,  Precision::fast, has_bf16_pairs, MatmulKernel::bf16_pairs},
    {Format::mxfp4,       Tokens::one,   Precision::fast, has_q8,         MatmulKernel::q8},
    {Format::mxfp4,       Tokens::batch, Precision::fast, has_q8,         MatmulKernel::q8},
    {Format::mxfp4,       Tokens::step,  Precision::fast, has_q8_step,    MatmulKernel::q8_step},
    {Format::mxfp4,       Tokens::step,  Precision::fast, has_q8,         MatmulKernel::q8_each_token},
    {Format::any,         Tokens::any,   Precision::any,  has_matmul,     MatmulKernel::fp32},
};
// clang-format on

bool matches(Format f, const Weight& w) {
  switch (f) {
    case Format::any: return true;
    case Format::mxfp4: return w.dtype == gptoss_dtype_mxfp4;
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
  }
  return false;
}

}  // namespace

MatmulActs acts_of(MatmulKernel k) {
  switch (k) {
    case MatmulKernel::fp32: return MatmulActs::fp32;
    case MatmulKernel::bf16_pairs: return MatmulActs::bf16_pairs;
    case MatmulKernel::q8:
    case MatmulKernel::q8_step:
    case MatmulKernel::q8_each_token: return MatmulActs::q8;
  }
  return MatmulActs::fp32;
}

MatmulKernel choose_matmul(const Kernels& k, const Weight& w, size_t step_tokens, size_t n_tok,
                           bool fast) {
  for (const Row& r : kRows)
    if (matches(r.format, w) && matches(r.tokens, step_tokens, n_tok) &&
        (r.precision == Precision::any || fast) && r.level_has(k))
      return r.kernel;
  return MatmulKernel::fp32;
}

void run_matmul(MatmulKernel kernel, const Kernels& k, const Weight& w, size_t r0, size_t n_rows,
                const ActsView& x, size_t t0, size_t n_tok, float* y, size_t ldy) {
  switch (kernel) {
    case MatmulKernel::fp32: return k.matmul(w, r0, n_rows, x.x + t0 * x.ld, x.ld, n_tok, y, ldy);
    case MatmulKernel::bf16_pairs:
      return k.dense_bf16->matmul(w, r0, n_rows, x.x + t0 * x.ld, x.ld, n_tok, y, ldy);
    case MatmulKernel::q8: return k.matmul_mxfp4_q8(w, r0, n_rows, *x.q8, t0, n_tok, y, ldy);
    case MatmulKernel::q8_step: return k.gemv_mxfp4_q8(w, r0, n_rows, *x.q8, t0, n_tok, y, ldy);
    case MatmulKernel::q8_each_token:
      return for_each_token_block(
          n_rows, w.row_bytes + w.cols / 32, n_tok, [&](size_t b, size_t n, size_t t) {
            k.matmul_mxfp4_q8(w, r0 + b, n, *x.q8, t0 + t, 1, y + t * ldy + b, ldy);
          });
  }
}

}  // namespace gptoss::cpu
