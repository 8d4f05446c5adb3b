// The attention projections' bf16 lanes layout (Weight::bf16_lanes, kernels/avx512/bf16_lanes.cpp):
// the repack keeps every weight, the scalar reference is the fp32 matmul summed in another order,
// every level that has the kernel gives the reference's bits for every token count and cut of
// the rows (so each token its one-token result), and the upload repacks exactly the tensors and
// levels it should. Random shapes from a fresh seed, printed on failure.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "cpu_memory.hpp"
#include "kernels.hpp"
#include "ops.hpp"

namespace gptoss::cpu::test {
namespace {

// w (bf16, rows a multiple of 16) repacked, owning its data.
Weight bf16_lanes_of(const Weight& w) {
  Weight l = w;
  l.owned_data.assign(w.owned_data.size(), 0);
  repack_bf16_lanes(reinterpret_cast<const uint16_t*>(w.data), w.cols, 0, w.rows / 16,
                    reinterpret_cast<uint16_t*>(l.owned_data.data()));
  l.data = l.owned_data.data();
  l.bf16_lanes = true;
  return l;
}

std::vector<Isa> lanes_isas() { return isas_with(&Kernels::matmul_bf16_lanes); }

// The resident KiB of the mapping that starts at `start` (/proc/self/smaps), or -1.
long resident_kib(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  char head[32];
  std::snprintf(head, sizeof head, "%lx-",
                static_cast<unsigned long>(reinterpret_cast<uintptr_t>(start)));
  bool in = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.rfind(head, 0) == 0) in = true;
    else if (in && line.rfind("Rss:", 0) == 0) return std::atol(line.c_str() + 4);
  }
  return -1;
}

// A line of /proc/self/status in KiB ("VmRSS:", "VmHWM:"), or -1.
long status_kib(const char* key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
  return -1;
}

}  // namespace

TEST_CASE("bf16 lanes: the repack keeps every weight of every row", "[cpu-bf16-lanes]") {
  const Weight w = random_weight(gptoss_dtype_bf16, 48, 70, 91);
  const Weight l = bf16_lanes_of(w);
  std::vector<float> a(w.cols), b(w.cols), part(9);
  for (size_t r = 0; r < w.rows; ++r) {
    decode_row(w, r, a.data());
    decode_row(l, r, b.data());
    REQUIRE(a == b);
    decode_row_range(l, r, 31, part.size(), part.data());
    CHECK(std::equal(part.begin(), part.end(), a.begin() + 31));
  }
}

TEST_CASE("bf16 lanes: each level's repack writes the scalar repack's bytes", "[cpu-bf16-lanes]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (Isa isa : supported_isas()) {
    const Kernels& k = kernels_for(isa);
    INFO("level " << isa_name(isa));
    CHECK((k.repack_bf16_lanes == nullptr) == (k.matmul_bf16_lanes == nullptr));
    if (k.repack_bf16_lanes == nullptr) continue;
    // Widths around the 32 columns a vector step takes (2 to 2880, even), 1 to 6 tiles; some
    // repacks of a part of the tiles, as the pool's workers do.
    for (int trial = 0; trial < 12; ++trial) {
      const size_t cols = trial == 0 ? 2880 : 2 * (1 + rng() % 80), tiles = 1 + rng() % 6;
      INFO("cols " << cols << ", tiles " << tiles);
      const Weight w = random_weight(gptoss_dtype_bf16, 16 * tiles, cols, uint32_t(rng()));
      const auto* src = reinterpret_cast<const uint16_t*>(w.data);
      std::vector<uint16_t> want(16 * tiles * cols, 0), got(want.size(), 0xdead);
      repack_bf16_lanes(src, cols, 0, tiles, want.data());
      const size_t cut = rng() % (tiles + 1);
      k.repack_bf16_lanes(src, cols, 0, cut, got.data());
      k.repack_bf16_lanes(src, cols, cut, tiles, got.data());
      CHECK(got == want);
    }
  }
}

TEST_CASE("bf16 lanes: the reference is the fp32 matmul, summed in k order", "[cpu-bf16-lanes]") {
  const Weight w = random_weight(gptoss_dtype_bf16, 32, 2880, 92);
  const Weight l = bf16_lanes_of(w);
  const size_t T = 3;
  const std::vector<float> x = random_floats(T * w.cols, 93, -3.0f, 3.0f);
  std::vector<float> y(T * w.rows), row(w.cols);
  matmul_bf16_lanes_reference(l, 0, w.rows, x.data(), w.cols, T, y.data(), w.rows);
  size_t bad = 0;
  for (size_t r = 0; r < w.rows; ++r) {
    decode_row(w, r, row.data());
    for (size_t t = 0; t < T; ++t) {
      double want = 0, mag = 0;
      for (size_t k = 0; k < w.cols; ++k) {
        want += double(row[k]) * x[t * w.cols + k];
        mag += std::fabs(double(row[k]) * x[t * w.cols + k]);
      }
      if (!(std::fabs(y[t * w.rows + r] - want) <= 1e-5 * mag) && bad++ < 5)
        UNSCOPED_INFO("row " << r << " token " << t << ": " << y[t * w.rows + r] << " against "
                             << want);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("bf16 lanes: each level's kernel gives the reference's bits, each token as if alone",
          "[cpu-bf16-lanes]") {
  const auto isas = lanes_isas();
  if (isas.empty()) {
    WARN("this CPU has no level with the bf16 lanes kernel (AVX-512): it is not tested");
    return;
  }
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  // Token counts of every pass the kernel takes: one, a tile's 2-5, the two passes of 6-8, the
  // prefill passes of 5 with every remainder.
  for (size_t n_tok : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 16, 17, 40, 64}) {
    const size_t rows = 16 * (1 + rng() % 13);  // 1 to 13 tiles: every remainder of 4 tiles
    const size_t cols = 2 * (1 + rng() % 1500);
    const Weight w = bf16_lanes_of(random_weight(gptoss_dtype_bf16, rows, cols, uint32_t(rng())));
    const std::vector<float> x = random_floats(n_tok * cols, uint32_t(rng()), -2.0f, 2.0f);
    std::vector<float> want(n_tok * rows);
    matmul_bf16_lanes_reference(w, 0, rows, x.data(), cols, n_tok, want.data(), rows);
    for (Isa isa : isas) {
      INFO(isa_name(isa) << " " << rows << "x" << cols << ", " << n_tok << " tokens");
      const Kernels& k = kernels_for(isa);
      std::vector<float> got(n_tok * rows), alone(n_tok * rows), cut(n_tok * rows);
      k.matmul_bf16_lanes(w, 0, rows, x.data(), cols, n_tok, got.data(), rows);
      CHECK(same_bits(got, want));
      for (size_t t = 0; t < n_tok; ++t)
        k.matmul_bf16_lanes(w, 0, rows, x.data() + t * cols, cols, 1, alone.data() + t * rows,
                            rows);
      CHECK(same_bits(alone, want));
      const size_t a = 16 * (rows / 16 / 3);  // two calls cut at a tile, as the ops' pieces are
      k.matmul_bf16_lanes(w, 0, a, x.data(), cols, n_tok, cut.data(), rows);
      k.matmul_bf16_lanes(w, a, rows - a, x.data(), cols, n_tok, cut.data() + a, rows);
      CHECK(same_bits(cut, want));
    }
  }
}

TEST_CASE("bf16 lanes: the upload repacks the attention projections for levels that read them",
          "[cpu-bf16-lanes]") {
  const Weight src = random_weight(gptoss_dtype_bf16, 64, 96, 94);
  gptoss_tensor_desc d = persistent_desc(src, "layers.0.attn.q", gptoss_tensor_attn_q);
  ThreadPool pool(2);
  auto upload = [&](gptoss_tensor_role role, bool lanes) {
    d.role = role;
    auto w = uploaded(pool, d, lanes ? UploadRepacks{repack_bf16_lanes} : UploadRepacks{});
    REQUIRE(w);
    return w;
  };
  for (gptoss_tensor_role role :
       {gptoss_tensor_attn_q, gptoss_tensor_attn_k, gptoss_tensor_attn_v, gptoss_tensor_attn_out}) {
    const auto w = upload(role, true);
    CHECK(w->bf16_lanes);
    CHECK(w->data != src.data);  // a copy: the mapped file's bytes stay as they are
    CHECK(!upload(role, false)->bf16_lanes);
  }
  CHECK(!upload(gptoss_tensor_unembedding, true)->bf16_lanes);
  CHECK(!upload(gptoss_tensor_embedding, true)->bf16_lanes);
  CHECK(!upload(gptoss_tensor_router, true)->bf16_lanes);
  // The host's own memory (not a file's mapping) is left as it was.
  const Weight again = random_weight(gptoss_dtype_bf16, 64, 96, 94);
  CHECK(src.owned_data == again.owned_data);
  d.shape[0] = 40;  // not whole tiles of 16 rows: kept as rows
  d.data_size = 40 * 96 * 2;
  CHECK(!upload(gptoss_tensor_attn_q, true)->bf16_lanes);
}

TEST_CASE("lanes: a repacked tensor of a mapped file leaves the resident set, readable still",
          "[cpu-bf16-lanes]") {
  const size_t rows = 512, cols = 2048;
  // bf16 (2 MiB) and Q8_0 (1.06 MiB; repacked in the fast precision's upload).
  for (gptoss_dtype dtype : {gptoss_dtype_bf16, gptoss_dtype_q8_0}) {
    const bool bf16 = dtype == gptoss_dtype_bf16;
    INFO((bf16 ? "bf16" : "Q8_0"));
    const Weight src = random_weight(dtype, rows, cols, 98);
    const size_t bytes = src.owned_data.size();
    char path[] = "/tmp/gptoss-lanes-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, src.data, bytes) == ssize_t(bytes));
    void* map = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    unlink(path);
    REQUIRE(map != MAP_FAILED);
    REQUIRE(std::memcmp(map, src.data, bytes) == 0);  // every page resident now
    const long before = resident_kib(map);
    const gptoss_tensor_desc d =
        persistent_desc(src, "layers.0.attn.out", gptoss_tensor_attn_out, map);
    ThreadPool pool(2);
    const auto w = uploaded(
        pool, d,
        bf16 ? UploadRepacks{repack_bf16_lanes} : UploadRepacks{nullptr, repack_q8_0_lanes});
    REQUIRE(w);
    REQUIRE((bf16 ? w->bf16_lanes : w->q8_0_lanes));
    INFO("resident KiB of the file's mapping before " << before << ", after " << resident_kib(map));
    CHECK(before >= long(bytes / 1024));
    CHECK(resident_kib(map) == 0);
    CHECK(std::memcmp(map, src.data, bytes) == 0);  // read back from the file
    CHECK(rows_decoded_differently(src, *w, 37) == 0);
    munmap(map, bytes);
  }
}

// MXFP4 experts as a checkpoint's mapped file holds them (codes, then their scales, as two
// tensors of one file): both leave the resident set when the fast precision's upload repacks
// them (Weight::mxfp4_lanes), and the file still reads back.
TEST_CASE("lanes: MXFP4 experts of a mapped file leave the resident set, codes and scales",
          "[cpu-bf16-lanes]") {
  const size_t experts = 4, per = 256, cols = 2880, rows = experts * per;
  const Weight src = random_weight(gptoss_dtype_mxfp4, rows, cols, 99, experts);
  const size_t code_bytes = src.owned_data.size(), scale_bytes = src.owned_scales.size();
  const size_t scales_at = (code_bytes + 4095) / 4096 * 4096, bytes = scales_at + scale_bytes;
  char path[] = "/tmp/gptoss-lanes-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, src.data, code_bytes, 0) == ssize_t(code_bytes));
  REQUIRE(pwrite(fd, src.scales, scale_bytes, off_t(scales_at)) == ssize_t(scale_bytes));
  void* map = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  unlink(path);
  REQUIRE(map != MAP_FAILED);
  const auto* file = static_cast<const uint8_t*>(map);
  REQUIRE(std::memcmp(file, src.data, code_bytes) == 0);  // every page resident now
  REQUIRE(std::memcmp(file + scales_at, src.scales, scale_bytes) == 0);
  const long before = resident_kib(map);
  gptoss_tensor_desc d = persistent_desc(src, "layers.0.mlp.mlp1", gptoss_tensor_mlp1, file);
  d.ndim = 3;
  d.shape[0] = int64_t(experts);
  d.shape[1] = int64_t(per);
  d.shape[2] = int64_t(cols);
  d.scales = file + scales_at;
  d.scales_size = scale_bytes;
  ThreadPool pool(2);
  const auto w = uploaded(pool, d, UploadRepacks{nullptr, nullptr, repack_mxfp4_lanes});
  REQUIRE(w);
  REQUIRE(w->mxfp4_lanes);
  INFO("resident KiB of the file's mapping before " << before << ", after " << resident_kib(map));
  CHECK(before >= long(bytes / 1024));
  CHECK(resident_kib(map) <= 4);  // the last page of the scales, partly past them, may stay
  CHECK(std::memcmp(file, src.data, code_bytes) == 0);  // read back from the file
  CHECK(std::memcmp(file + scales_at, src.scales, scale_bytes) == 0);
  CHECK(rows_decoded_differently(src, *w, 37) == 0);
  munmap(map, bytes);
}

// A repacked tensor several times the repack's chunk (a Q8_0 unembedding is 615 MB): its source
// pages leave as the repack passes them, so the peak resident set grows by about a chunk, not
// by the whole copy beside the whole source.
TEST_CASE("lanes: a large repack drops its source as it goes (the peak grows by a chunk)",
          "[cpu-bf16-lanes]") {
  const size_t rows = 16 * 2100, cols = 2880, row_bytes = cols / 32 * 34;
  const size_t bytes = rows * row_bytes;  // 103 MB, three 32 MiB chunks and a part
  char path[] = "/tmp/gptoss-lanes-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  {
    std::vector<uint8_t> row(row_bytes);
    for (size_t b = 0; b < cols / 32; ++b) {  // Q8_0 blocks: an f16 step of 2^-7, then 32 int8
      row[34 * b] = 0x00;
      row[34 * b + 1] = 0x20;
      for (size_t j = 0; j < 32; ++j) row[34 * b + 2 + j] = uint8_t(7 * (b + j));
    }
    for (size_t r = 0; r < rows; ++r) {
      row[2] = uint8_t(r);  // rows differ
      REQUIRE(write(fd, row.data(), row_bytes) == ssize_t(row_bytes));
    }
  }
  void* map = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  unlink(path);
  REQUIRE(map != MAP_FAILED);
  uint64_t sum = 0;  // every page of the source resident, as the loader's reads leave it
  for (size_t i = 0; i < bytes; i += 4096) sum += static_cast<const uint8_t*>(map)[i];
  CHECK(sum > 0);
  Weight src;
  src.dtype = gptoss_dtype_q8_0;
  src.rows = rows;
  src.cols = cols;
  src.row_bytes = row_bytes;
  src.data = static_cast<const uint8_t*>(map);
  const gptoss_tensor_desc d = persistent_desc(src, "layers.0.attn.out", gptoss_tensor_attn_out);
  ThreadPool pool(2);
  const long before = status_kib("VmRSS:");
  if (!(std::ofstream("/proc/self/clear_refs") << "5").flush() || before < 0) {
    WARN("cannot reset the peak resident set (/proc/self/clear_refs): not measured");
    munmap(map, bytes);
    return;
  }
  const auto w = uploaded(pool, d, UploadRepacks{nullptr, repack_q8_0_lanes});
  const long peak = status_kib("VmHWM:");
  REQUIRE(w);
  INFO("resident KiB before " << before << ", peak during the upload " << peak << ", copy "
                              << bytes / 1024);
  REQUIRE(w->q8_0_lanes);
  CHECK(peak - before < long(bytes / 1024 / 2));  // whole copy beside whole source: + bytes
  INFO("resident KiB of the source after " << resident_kib(map));
  CHECK(resident_kib(map) <= 4);  // its last page, partly past the tensor, stays
  CHECK(rows_decoded_differently(src, *w, 997) == 0);  // read back from the file
  munmap(map, bytes);
}

TEST_CASE("bf16 lanes: the linear op over a repacked weight gives the reference's bits",
          "[cpu-bf16-lanes]") {
  const auto isas = lanes_isas();
  if (isas.empty()) {
    WARN("this CPU has no level with the bf16 lanes kernel (AVX-512): it is not tested");
    return;
  }
  const Weight w = bf16_lanes_of(random_weight(gptoss_dtype_bf16, 160, 2880, 95));
  const Weight bias = random_weight(gptoss_dtype_bf16, 1, 160, 96);
  for (size_t n_tok : {1, 8, 100}) {
    const std::vector<float> x = random_floats(n_tok * w.cols, 97);
    std::vector<float> want(n_tok * w.rows), b(w.rows);
    matmul_bf16_lanes_reference(w, 0, w.rows, x.data(), w.cols, n_tok, want.data(), w.rows);
    decode_row(bias, 0, b.data());
    for (size_t t = 0; t < n_tok; ++t)
      for (size_t r = 0; r < w.rows; ++r) want[t * w.rows + r] += b[r];
    for (Isa isa : isas)
      for (bool fast : {false, true}) {
        INFO(isa_name(isa) << (fast ? " fast" : " exact") << ", " << n_tok << " tokens");
        Device dev(2, isa);
        dev.quantize_activations = fast;
        Stream st{&dev};
        std::vector<float> got(n_tok * w.rows);
        REQUIRE(op_linear(&st, x.data(), &w, &bias, n_tok, w.cols, w.rows, got.data()) ==
                gptoss_status_success);
        CHECK(same_bits(got, want));
      }
  }
}

}  // namespace gptoss::cpu::test
