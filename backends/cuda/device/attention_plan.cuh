#pragma once
// How attention splits its keys, shared by the kernels, the merge and the host (scratch
// sizes), and host-testable.
//
// Keys are visited in tiles of kAttnTile positions aligned to absolute positions (tile i is
// [32 i, 32 i + 32)), whatever the query rows of a block: a row's running softmax then sees
// the same tiles in the same order in every call, so a token's result does not depend on
// which other tokens share the call (batched decode equals one at a time, bit for bit).
// A tile with no visible key for a row changes nothing for that row.
//
// Decode splits one token's tiles over up to kAttnMaxSplits blocks (flash-decoding), by its
// own span only (never by how many tokens the call has): at least kAttnMinTilesPerSplit tiles
// per split, so short spans stay in one block and need no merge.
#include "compat.cuh"

namespace gptoss::cuda {

constexpr int kAttnTile = 32;
constexpr int kAttnMaxSplits = 16;
constexpr int kAttnMinTilesPerSplit = 4;

// Tiles covering key positions [lo, hi) (hi > lo), absolute-aligned.
GPTOSS_HD int32_t attn_first_tile(int32_t lo) { return lo / kAttnTile; }
GPTOSS_HD int32_t attn_tile_count(int32_t lo, int32_t hi) {
  return hi > lo ? (hi - 1) / kAttnTile - lo / kAttnTile + 1 : 0;
}

GPTOSS_HD int32_t attn_tiles_per_split(int32_t n_tiles) {
  const int32_t even = (n_tiles + kAttnMaxSplits - 1) / kAttnMaxSplits;
  return even > kAttnMinTilesPerSplit ? even : kAttnMinTilesPerSplit;
}

// Rows of a call per launch of the split kernel: their partials (n_heads x kAttnMaxSplits x
// (head_dim + 2) floats a row: 264 KiB for 64 heads of 64) stay within kAttnPartialBudget,
// whatever the call's size (at least one row).
constexpr int64_t kAttnPartialBudget = int64_t(64) << 20;
GPTOSS_HD int64_t attn_partial_bytes_per_row(int64_t n_heads, int64_t head_dim) {
  return n_heads * kAttnMaxSplits * (head_dim + 2) * int64_t(sizeof(float));
}
GPTOSS_HD int64_t attn_split_rows_per_launch(int64_t n_tokens, int64_t n_heads, int64_t head_dim) {
  const int64_t fit = kAttnPartialBudget / attn_partial_bytes_per_row(n_heads, head_dim);
  const int64_t rows = fit > 1 ? fit : 1;
  return rows < n_tokens ? rows : n_tokens;
}

// Splits of a decode token whose keys are [kv_start, pos] (1 when there are no keys).
GPTOSS_HD int32_t attn_splits(int32_t kv_start, int32_t pos) {
  const int32_t n = attn_tile_count(kv_start, pos + 1);
  if (n <= 0) return 1;
  const int32_t per = attn_tiles_per_split(n);
  return (n + per - 1) / per;
}

}  // namespace gptoss::cuda
