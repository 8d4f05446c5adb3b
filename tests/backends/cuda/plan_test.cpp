// Index arithmetic of the GPU kernels that can be checked on the host (no GPU in CI): the
// tensor-core (CUDA) and MFMA (HIP) fragment maps, the MoE tile routing and the attention key
// splits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "backends/cuda/device/attention_plan.cuh"
#include "backends/cuda/device/mma.cuh"
#include "backends/cuda/device/moe_routing.cuh"

namespace cu = gptoss::cuda;

TEST_CASE("cuda: m16n8k16 fragment maps are the PTX ones and cover each tile once", "[cuda][plan]") {
  // PTX ISA, mma.m16n8k16 .bf16: lane 5 (group 1, thread 1) as a worked example.
  CHECK(cu::mma::a_coord(5, 0).row == 1);
  CHECK(cu::mma::a_coord(5, 0).col == 2);
  CHECK(cu::mma::a_coord(5, 1).row == 9);
  CHECK(cu::mma::a_coord(5, 2).col == 10);
  CHECK(cu::mma::a_coord(5, 3).row == 9);
  CHECK(cu::mma::a_coord(5, 3).col == 10);
  CHECK(cu::mma::b_coord(5, 1).row == 10);
  CHECK(cu::mma::b_coord(5, 1).col == 1);
  CHECK(cu::mma::c_coord(5, 3).row == 9);
  CHECK(cu::mma::c_coord(5, 3).col == 3);
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r) {  // each register: a pair of consecutive K columns
      const auto p = cu::mma::a_coord(lane, r);
      CHECK(p.col % 2 == 0);
      a.insert({p.row, p.col});
      a.insert({p.row, p.col + 1});
    }
    for (int r = 0; r < 2; ++r) {
      const auto p = cu::mma::b_coord(lane, r);
      b.insert({p.row, p.col});
      b.insert({p.row + 1, p.col});
    }
    for (int i = 0; i < 4; ++i) {
      const auto p = cu::mma::c_coord(lane, i);
      c.insert({p.row, p.col});
      if (i % 2 == 0) CHECK(p.col % 2 == 0);  // the GEMM epilogue's glu/linear pairs
    }
  }
  CHECK(a.size() == 16 * 16);
  CHECK(b.size() == 16 * 8);
  CHECK(c.size() == 16 * 8);
  for (const auto& [row, col] : a) CHECK((row < 16 && col < 16));
  for (const auto& [row, col] : b) CHECK((row < 16 && col < 8));
  for (const auto& [row, col] : c) CHECK((row < 16 && col < 8));
}

TEST_CASE("hip: 16x16x16 MFMA fragment maps cover each tile once, as the epilogue reads them", "[cuda][plan]") {
  // CDNA2 v_mfma_f32_16x16x16bf16_1k: lane 37 (r = 5, q = 2) as a worked example.
  CHECK(cu::mfma::a_coord(37, 0).row == 5);
  CHECK(cu::mfma::a_coord(37, 3).col == 11);
  CHECK(cu::mfma::b_coord(37, 1).row == 9);
  CHECK(cu::mfma::b_coord(37, 1).col == 5);
  CHECK(cu::mfma::c_coord(37, 2).row == 10);
  CHECK(cu::mfma::c_coord(37, 2).col == 5);
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 64; ++lane)
    for (int v = 0; v < 4; ++v) {
      const auto pa = cu::mfma::a_coord(lane, v), pb = cu::mfma::b_coord(lane, v);
      const auto pc = cu::mfma::c_coord(lane, v);
      a.insert({pa.row, pa.col});
      b.insert({pb.row, pb.col});
      c.insert({pc.row, pc.col});
      // load_a / load_b read a lane's four values as one 8-byte word: consecutive K.
      CHECK(pa.col == cu::mfma::a_coord(lane, 0).col + v);
      CHECK(pa.row == cu::mfma::a_coord(lane, 0).row);
      CHECK(pb.row == cu::mfma::b_coord(lane, 0).row + v);
      CHECK(pb.col == cu::mfma::b_coord(lane, 0).col);
      // The GEMM epilogue's SwiGLU pairs: column c ^ 1 of the same row is on lane ^ 1.
      const auto pn = cu::mfma::c_coord(lane ^ 1, v);
      CHECK(pn.row == pc.row);
      CHECK(pn.col == (pc.col ^ 1));
    }
  CHECK(a.size() == 16 * 16);
  CHECK(b.size() == 16 * 16);
  CHECK(c.size() == 16 * 16);
  for (const auto& [row, col] : c) CHECK((row < 16 && col < 16));
}

// The routing moe_group.cu builds (offsets, tiles, stable order), built here on the host.
struct HostRouting {
  std::vector<int32_t> offsets, tile_offsets, order;
  cu::MoeRouting view(int32_t experts, int32_t tile_m) const {
    return {offsets.data(), tile_offsets.data(), order.data(), experts, tile_m};
  }
};

static HostRouting route(const std::vector<int32_t>& ids, int32_t experts, int32_t tile_m) {
  HostRouting r;
  r.offsets.assign(size_t(experts) + 1, 0);
  r.tile_offsets.assign(size_t(experts) + 1, 0);
  std::vector<int32_t> count(size_t(experts), 0);
  for (int32_t e : ids) ++count[size_t(e)];
  for (int32_t e = 0; e < experts; ++e) {
    r.offsets[size_t(e) + 1] = r.offsets[size_t(e)] + count[size_t(e)];
    r.tile_offsets[size_t(e) + 1] = r.tile_offsets[size_t(e)] + (count[size_t(e)] + tile_m - 1) / tile_m;
  }
  r.order.resize(ids.size());
  std::vector<int32_t> next(r.offsets.begin(), r.offsets.end() - 1);
  for (size_t a = 0; a < ids.size(); ++a) r.order[size_t(next[size_t(ids[a])]++)] = int32_t(a);
  return r;
}

TEST_CASE("cuda: MoE tiles cover every assignment once, within the launched bound", "[cuda][plan]") {
  std::mt19937 rng(11);
  for (int32_t experts : {1, 4, 32, 128}) {
    for (int32_t tile_m : {1, 4, 64}) {
      for (int32_t n_tokens : {1, 2, 3, 8, 17, 100, 513}) {
        const int32_t top_k = std::min(4, experts);
        std::vector<int32_t> ids;
        for (int32_t t = 0; t < n_tokens; ++t) {
          std::vector<int32_t> all(static_cast<size_t>(experts));
          for (int32_t e = 0; e < experts; ++e) all[size_t(e)] = e;
          std::shuffle(all.begin(), all.end(), rng);
          // Skewed: half of the tokens pick from the first experts (crowded tiles).
          if (t % 2 == 0) std::sort(all.begin(), all.begin() + std::min(experts, 8));
          ids.insert(ids.end(), all.begin(), all.begin() + top_k);
        }
        const HostRouting r = route(ids, experts, tile_m);
        const cu::MoeRouting v = r.view(experts, tile_m);
        const int64_t bound = cu::moe_max_tiles(int64_t(ids.size()), experts, tile_m);
        INFO("experts " << experts << " tile " << tile_m << " tokens " << n_tokens);
        REQUIRE(r.tile_offsets.back() <= bound);
        std::vector<int> seen(ids.size(), 0);
        for (int32_t j = 0; j < bound; ++j) {
          cu::MoeTile tile;
          if (!cu::moe_find_tile(v, j, tile)) {
            CHECK(j >= r.tile_offsets.back());
            continue;
          }
          REQUIRE((tile.count >= 1 && tile.count <= tile_m));
          for (int32_t i = 0; i < tile.count; ++i) {
            const int32_t a = r.order[size_t(tile.begin + i)];
            CHECK(ids[size_t(a)] == tile.expert);
            ++seen[size_t(a)];
          }
        }
        CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
      }
    }
  }
}

TEST_CASE("cuda: attention splits cover a token's tiles in order, at most 16", "[cuda][plan]") {
  for (int32_t pos : {0, 1, 31, 32, 33, 127, 128, 129, 255, 1000, 4095, 4096, 131071}) {
    for (int32_t window : {128, 1 << 30}) {
      const int32_t start = pos + 1 > window ? pos + 1 - window : 0;
      const int32_t n = cu::attn_tile_count(start, pos + 1);
      const int32_t first = cu::attn_first_tile(start);
      INFO("pos " << pos << " start " << start);
      CHECK(first * cu::kAttnTile <= start);
      CHECK((first + n) * cu::kAttnTile > pos);
      CHECK((first + n - 1) * cu::kAttnTile <= pos);
      const int32_t splits = cu::attn_splits(start, pos);
      CHECK((splits >= 1 && splits <= cu::kAttnMaxSplits));
      // The kernel's split z covers tiles [first + z * per, min(first + n, first + (z + 1) * per)).
      const int32_t per = cu::attn_tiles_per_split(n);
      int32_t covered = 0;
      for (int32_t z = 0; z < splits; ++z) {
        const int32_t lo = first + z * per, hi = std::min(first + n, lo + per);
        CHECK(hi > lo);  // no empty split: the merge reads every one
        covered += hi - lo;
      }
      CHECK(covered == n);
      if (n <= cu::kAttnMinTilesPerSplit) CHECK(splits == 1);  // short spans: no merge
    }
  }
  CHECK(cu::attn_tile_count(5, 5) == 0);
  CHECK(cu::attn_splits(10, 9) == 1);  // no keys
}

// The split attention serves calls of any size in launches of this many rows: each launch's
// partials within the budget (unless one row alone exceeds it), and as many rows as fit.
TEST_CASE("cuda: split attention launches keep their partials within the budget", "[cuda][plan]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t n_tokens = 1 + int64_t(rng() % 70000), n_heads = 1 + int64_t(rng() % 256);
    const int64_t head_dim = trial % 2 == 0 ? 64 : 1 + int64_t(rng() % 256);
    INFO("tokens " << n_tokens << " heads " << n_heads << " head_dim " << head_dim);
    const int64_t rows = cu::attn_split_rows_per_launch(n_tokens, n_heads, head_dim);
    const int64_t per_row = cu::attn_partial_bytes_per_row(n_heads, head_dim);
    REQUIRE(rows >= 1);
    REQUIRE(rows <= n_tokens);
    if (rows > 1) CHECK(rows * per_row <= cu::kAttnPartialBudget);
    if (rows < n_tokens) CHECK((rows + 1) * per_row > cu::kAttnPartialBudget);
  }
  // gpt-oss (64 heads of 64): 248 rows a launch, so one launch for up to 248 decode sequences.
  CHECK(cu::attn_split_rows_per_launch(100000, 64, 64) == 248);
  CHECK(cu::attn_split_rows_per_launch(64, 64, 64) == 64);
}
