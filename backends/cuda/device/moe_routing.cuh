#pragma once
// Tokens grouped by expert on the device (moe_group.cu writes it, the MoE kernels read it):
//   offsets[e] .. offsets[e + 1]: positions in `order` of expert e's assignments, where an
//                                 assignment a = t * top_k + j is token t's j-th expert;
//   order[...]:                   assignment ids, by expert, ascending within an expert;
//   tile_offsets[e]:              tiles of tile_m assignments before expert e's first.
// A kernel launches an upper bound of tiles (max_tiles) and block y takes tile y: the host
// never needs to know how many tokens each expert got.
#include "compat.cuh"

namespace gptoss::cuda {

struct MoeRouting {
  const int32_t* offsets;       // [experts + 1]
  const int32_t* tile_offsets;  // [experts + 1]
  const int32_t* order;         // [n_assign]
  int32_t experts;
  int32_t tile_m;
};

// Tiles any routing of n_assign assignments over `experts` experts can need: every non-empty
// expert adds at most one partial tile, and there are never more tiles than assignments.
GPTOSS_HD int64_t moe_max_tiles(int64_t n_assign, int64_t experts, int64_t tile_m) {
  const int64_t bound = (n_assign + tile_m - 1) / tile_m + experts;
  return n_assign < bound ? n_assign : bound;
}

struct MoeTile {
  int32_t expert;
  int32_t begin;  // first position in order[]
  int32_t count;  // assignments in this tile, 1..tile_m
};

// The expert and assignments of tile j; false when j is beyond the last tile.
GPTOSS_HD bool moe_find_tile(const MoeRouting& r, int32_t j, MoeTile& tile) {
  if (j >= r.tile_offsets[r.experts]) return false;
  int32_t lo = 0, hi = r.experts;  // the last e with tile_offsets[e] <= j lies in [lo, hi)
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) / 2;
    if (r.tile_offsets[mid] <= j)
      lo = mid;
    else
      hi = mid;
  }
  const int32_t e = lo;
  tile.expert = e;
  tile.begin = r.offsets[e] + (j - r.tile_offsets[e]) * r.tile_m;
  const int32_t left = r.offsets[e + 1] - tile.begin;
  tile.count = left < r.tile_m ? left : r.tile_m;
  return true;
}

}  // namespace gptoss::cuda
