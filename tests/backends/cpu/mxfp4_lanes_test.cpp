// MXFP4 experts repacked at upload into tiles of 16 rows (Weight::mxfp4_lanes, formats.hpp):
//   - the repack keeps every code and scale (decode_row reads both layouts);
//   - matmul_mxfp4_lanes_q8 gives the bits the same level's row kernels give (matmul_mxfp4_q8
//     and gemv_mxfp4_q8, themselves held to the scalar reference in kernels_q8_test.cpp) at
//     every token count, for every cut of the rows at a tile, each token alone or in a step;
//   - the chooser sends such weights to it, and the upload makes them of the experts only, in
//     whole tiles per expert, when the device's level reads them.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "choose.hpp"
#include "cpu_memory.hpp"
#include "formats.hpp"
#include "kernels.hpp"
#include "q8_storage.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu::test {
namespace {

std::vector<Isa> mxfp4_lanes_isas() { return isas_with(&Kernels::matmul_mxfp4_lanes_q8); }

// w (MXFP4, rows % 16 == 0) repacked as the upload does.
Weight mxfp4_lanes_of(const Weight& w) {
  Weight l = w;
  l.owned_data.assign(w.owned_data.size(), 0);
  l.owned_scales.assign(w.owned_scales.size(), 0);
  repack_mxfp4_lanes(w.data, w.scales, w.cols, 0, w.rows / 16, l.owned_data.data(),
                     l.owned_scales.data());
  l.data = l.owned_data.data();
  l.scales = l.owned_scales.data();
  l.mxfp4_lanes = true;
  return l;
}

}  // namespace

TEST_CASE("mxfp4 lanes: the repack keeps every code and scale (decode_row reads both layouts)",
          "[cpu-kernels][q8]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  // Block counts below, at and past 16 (the chains), and the 20b's 90.
  std::vector<size_t> cols = {32, 96, 512, 544, 2880};
  for (int i = 0; i < 4; ++i) cols.push_back(32 * (1 + rng() % 100));
  for (size_t c : cols) {
    const size_t rows = 16 * (1 + rng() % 6);
    const Weight w = random_weight(gptoss_dtype_mxfp4, rows, c, uint32_t(rng()));
    INFO(rows << "x" << c);
    CHECK(rows_decoded_differently(w, mxfp4_lanes_of(w), 1, true) == 0);
  }
}

TEST_CASE("mxfp4 lanes: each level's repack writes the scalar repack's bytes",
          "[cpu-kernels][q8]") {
  if (mxfp4_lanes_isas().empty()) WARN("no level of this CPU reads MXFP4 lanes: not tested");
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int shape = 0; shape < 8; ++shape) {
    const size_t tiles = 1 + rng() % 6, cols = shape == 0 ? 2880 : 32 * (1 + rng() % 100);
    const Weight w = random_weight(gptoss_dtype_mxfp4, 16 * tiles, cols, uint32_t(rng()));
    const Weight want = mxfp4_lanes_of(w);
    for (Isa isa : mxfp4_lanes_isas()) {
      INFO(isa_name(isa) << " " << 16 * tiles << "x" << cols);
      // Tiles in two calls, as the upload's chunks take them; the bytes around left alone.
      std::vector<uint8_t> codes(w.owned_data.size(), 0xa5), scales(w.owned_scales.size(), 0x5a);
      const size_t cut = rng() % (tiles + 1);
      const auto repack = kernels_for(isa).repack_mxfp4_lanes;
      repack(w.data, w.scales, cols, 0, cut, codes.data(), scales.data());
      repack(w.data, w.scales, cols, cut, tiles, codes.data(), scales.data());
      CHECK(codes == want.owned_data);
      CHECK(scales == want.owned_scales);
    }
  }
}

TEST_CASE("mxfp4 lanes: the repacked layout gives the rows' bits at every token count",
          "[cpu-kernels][q8]") {
  if (mxfp4_lanes_isas().empty()) WARN("no level of this CPU reads MXFP4 lanes: not tested");
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  struct Shape {
    size_t rows, cols, n_tok;
  };
  // One token (decode), a step's few (up to 16: straight from the tiles, 8 a pass), more
  // (panels); the 20b's mlp1 and mlp2 rows of one expert.
  std::vector<Shape> shapes = {{16, 32, 1},     {48, 96, 8},     {32, 512, 3},   {80, 2880, 1},
                               {80, 2880, 9},   {64, 544, 24},   {16, 2880, 16}, {96, 4096, 5},
                               {5760, 2880, 1}, {2880, 2880, 4}, {64, 2880, 17}, {32, 2880, 64}};
  for (int i = 0; i < 8; ++i)
    shapes.push_back({16 * (1 + rng() % 20), 32 * (1 + rng() % 100), 1 + rng() % 40});
  for (const Shape& sh : shapes) {
    // Scales over the whole E8M0 range a checkpoint uses (2^-20 .. 2^-9 and 2^-1 .. 2^10).
    const int min_exp = rng() % 2 ? -20 : -1;
    const Weight w =
        random_weight(gptoss_dtype_mxfp4, sh.rows, sh.cols, uint32_t(rng()), 0, min_exp);
    const Weight l = mxfp4_lanes_of(w);
    const auto x = outlier_activations(sh.n_tok + 1, sh.cols, uint32_t(rng()));
    for (Isa isa : mxfp4_lanes_isas()) {
      const Kernels& k = kernels_for(isa);
      INFO(isa_name(isa) << " " << sh.rows << "x" << sh.cols << ", " << sh.n_tok << " tokens");
      Q8Storage mem;
      Q8Acts& q = mem.prepare(sh.n_tok + 1, sh.cols);
      k.quantize_q8(x.data(), sh.cols, sh.n_tok + 1, q);
      const size_t rows = sh.rows, n = sh.n_tok;
      std::vector<float> want(n * rows), got(n * rows, -1.0f), alone(n * rows, -1.0f),
          step(n * rows, -1.0f), cut(n * rows, -1.0f);
      // Token 0 is left out: the kernels must start at t0.
      for (size_t t = 0; t < n; ++t)
        k.matmul_mxfp4_q8(w, 0, rows, q, 1 + t, 1, want.data() + t * rows, rows);
      k.matmul_mxfp4_lanes_q8(l, 0, rows, q, 1, n, got.data(), rows);
      CHECK(same_bits(got, want));
      for (size_t t = 0; t < n; ++t)
        k.matmul_mxfp4_lanes_q8(l, 0, rows, q, 1 + t, 1, alone.data() + t * rows, rows);
      CHECK(same_bits(alone, want));
      if (n <= kGemvStepTokens && k.gemv_mxfp4_q8 != nullptr) {
        k.gemv_mxfp4_q8(w, 0, rows, q, 1, n, step.data(), rows);
        CHECK(same_bits(step, want));
      }
      const size_t a = 16 * (rows / 16 / 3);  // cut at a tile, as the MoE's pieces are
      k.matmul_mxfp4_lanes_q8(l, 0, a, q, 1, n, cut.data(), rows);
      k.matmul_mxfp4_lanes_q8(l, a, rows - a, q, 1, n, cut.data() + a, rows);
      CHECK(same_bits(cut, want));
      // Fewer rows than the tiles hold: those rows' bits, and nothing written past them.
      const size_t part = rows - 1 - rng() % 15;
      std::vector<float> fewer(n * rows, -1.0f), fewer_want = want;
      k.matmul_mxfp4_lanes_q8(l, 0, part, q, 1, n, fewer.data(), rows);
      for (size_t t = 0; t < n; ++t)
        std::fill(fewer_want.begin() + long(t * rows + part),
                  fewer_want.begin() + long((t + 1) * rows), -1.0f);
      CHECK(same_bits(fewer, fewer_want));
    }
  }
}

TEST_CASE("mxfp4 lanes: the chooser and the upload", "[cpu-kernels][q8]") {
  const size_t experts = 4, rows = 4 * 32, cols = 96;
  const Weight src = random_weight(gptoss_dtype_mxfp4, rows, cols, 7, experts);
  for (Isa isa : mxfp4_lanes_isas()) {
    const Kernels& k = kernels_for(isa);
    const Weight l = mxfp4_lanes_of(src);
    for (size_t n : {1, 2, 5, 8, 17, 64}) {
      INFO(isa_name(isa) << " " << n << " tokens");
      CHECK(choose_matmul(k, l, n, n, true) == MatmulKernel::q8_lanes);
      CHECK(acts_for(k, l, n, true) == MatmulActs::q8);
    }
  }
  // An expert tensor [4, 32, 96] as the loader describes a mapped checkpoint's.
  gptoss_tensor_desc d = persistent_desc(src, "layers.0.mlp.mlp1", gptoss_tensor_mlp1);
  d.ndim = 3;
  d.shape[0] = int64_t(experts);
  d.shape[1] = int64_t(rows / experts);
  d.shape[2] = int64_t(cols);
  d.scales = src.scales;
  d.scales_size = rows * cols / 32;
  ThreadPool pool(2);
  auto upload = [&](gptoss_tensor_role role, bool lanes) {
    d.role = role;
    auto w =
        uploaded(pool, d, UploadRepacks{nullptr, nullptr, lanes ? repack_mxfp4_lanes : nullptr});
    REQUIRE(w);
    return w;
  };
  for (gptoss_tensor_role role : {gptoss_tensor_mlp1, gptoss_tensor_mlp2}) {
    INFO("role " << int(role));
    const auto w = upload(role, true);
    CHECK(w->mxfp4_lanes);
    CHECK(w->data != src.data);
    CHECK(w->scales != src.scales);
    CHECK(rows_decoded_differently(src, *w, 5) == 0);
    CHECK(!upload(role, false)->mxfp4_lanes);  // the exact precision reads the rows
  }
  CHECK(!upload(gptoss_tensor_router, true)->mxfp4_lanes);  // not an expert matrix
  const Weight again = random_weight(gptoss_dtype_mxfp4, rows, cols, 7, experts);
  CHECK(src.owned_data == again.owned_data);  // the host's memory is left as it was
  CHECK(src.owned_scales == again.owned_scales);
  d.shape[0] = 8;  // 16 rows per expert would make tiles; 8 do not: kept as rows
  d.shape[1] = 16;
  CHECK(upload(gptoss_tensor_mlp1, true)->mxfp4_lanes);
  d.shape[0] = 16;
  d.shape[1] = 8;
  CHECK(!upload(gptoss_tensor_mlp1, true)->mxfp4_lanes);
}

}  // namespace gptoss::cpu::test
