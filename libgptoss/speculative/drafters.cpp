#include "libgptoss/speculative/drafters.hpp"

#include <algorithm>

#include "libgptoss/common/error.hpp"
#include "libgptoss/runtime/kvcache.hpp"

namespace gptoss::speculative {

void PromptLookup::propose(std::span<const uint32_t> s, size_t max, std::vector<uint32_t>& out) {
  const size_t L = s.size();
  if (max == 0 || L < 2) return;
  const size_t lo = L > kSearchWindow ? L - kSearchWindow : 0;
  for (size_t n = std::min(kMaxNgram, L - 1); n >= kMinNgram; --n) {
    const std::span<const uint32_t> tail = s.last(n);
    // The latest match whose continuation is not the tail itself: start at L - n - 1.
    for (size_t i = L - n; i-- > lo;) {
      if (!std::equal(tail.begin(), tail.end(), s.begin() + std::ptrdiff_t(i))) continue;
      const size_t from = i + n, take = std::min(max, L - from);
      out.insert(out.end(), s.begin() + std::ptrdiff_t(from),
                 s.begin() + std::ptrdiff_t(from + take));
      return;
    }
    if (n == kMinNgram) break;
  }
}

namespace {
SamplerParams greedy_params() {
  SamplerParams p;
  p.temperature = 0.0f;
  return p;
}
}  // namespace

DraftModel::DraftModel(std::shared_ptr<const Model> model, size_t context_length)
    : greedy_(greedy_params()) {
  const size_t length = std::min(context_length, size_t(model->config().max_context_length));
  constexpr size_t kBatch = 512;
  auto pool = std::make_shared<KvPool>(model, length, 1, kBatch, gptoss_kv_dtype_f32);
  ctx_ = std::make_unique<Context>(std::move(model), std::move(pool), length, kBatch);
}

void DraftModel::propose(std::span<const uint32_t> s, size_t max, std::vector<uint32_t>& out) {
  if (max == 0 || s.empty() || s.size() + max > ctx_->max_tokens()) return;
  const std::vector<uint32_t>& have = ctx_->tokens();
  const size_t common =
      size_t(std::mismatch(have.begin(), have.end(), s.begin(), s.end()).first - have.begin());
  if (common < have.size()) ctx_->truncate(common);
  ctx_->append(s.subspan(common));
  for (size_t i = 0; i < max; ++i) {
    const uint32_t t = ctx_->sample(greedy_);
    out.push_back(t);
    if (i + 1 < max) ctx_->append(std::span(&t, 1));
  }
}

}  // namespace gptoss::speculative
