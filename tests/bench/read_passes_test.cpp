// The bench's read passes (examples/bench/read_passes.cpp) over a checkpoint's files or an
// anonymous buffer. Each pass reads the bytes asked for, on from where the last one stopped,
// through the files in name order and round again, so that passes do not re-read what an
// earlier one just left in cache; over files it reads only what the page cache holds (it must
// never read the disk).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "examples/bench/bench.hpp"

namespace {
namespace fs = std::filesystem;
using gptoss::bench::ReadPasses;
using gptoss::bench::TokenReplay;

// A file of `words` 64-bit words, word i = seed * 1000003 + i.
void write_words(const fs::path& p, uint64_t seed, size_t words, size_t extra_bytes = 0) {
  std::vector<uint64_t> w(words);
  for (size_t i = 0; i < words; ++i) w[i] = seed * 1000003 + i;
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(w.data()), std::streamsize(w.size() * 8));
  const std::vector<char> tail(extra_bytes, 1);  // a partial word at the end is not read
  f.write(tail.data(), std::streamsize(tail.size()));
}

// A stretch of a file's words that passes read: file `seed`, words [first, first + words).
struct File {
  uint64_t seed;
  size_t words;
  size_t first = 0;
};

// What a pass of `words` sums, starting at word `pos` of file `at`: the stretch of each file it
// crosses, each thread's part of a stretch rounded down to 4 streams of whole 64-byte lines.
uint64_t expected_sum(const std::vector<File>& files, size_t& at, size_t& pos, size_t words,
                      unsigned threads) {
  uint64_t sum = 0;
  while (words > 0) {
    const File& f = files[at];
    const size_t n = std::min(words, f.words - pos);
    for (unsigned t = 0; t < threads; ++t) {
      const size_t b = n * t / threads, e = n * (t + 1) / threads;
      const size_t read = (e - b) / 4 / 8 * 8 * 4;
      for (size_t i = 0; i < read; ++i) sum += f.seed * 1000003 + f.first + pos + b + i;
    }
    pos += n;
    words -= n;
    if (pos == f.words) pos = 0, at = (at + 1) % files.size();
  }
  return sum;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("gptoss-model-read-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};
}  // namespace

TEST_CASE("read passes over a model's files walk them in order and round again", "[bench]") {
  TempDir dir;
  // Name order, not creation order; other files are not the model's.
  write_words(dir.path / "model-00002-of-00002.safetensors", 2, 70000, 5);
  write_words(dir.path / "model-00001-of-00002.safetensors", 1, 131072);
  write_words(dir.path / "tokenizer.json", 9, 5000);
  const std::vector<File> files = {{1, 131072}, {2, 70000}};
  for (unsigned threads : {1u, 2u, 3u}) {
    ReadPasses test(dir.path.string(), threads);
    REQUIRE(test.ok());
    CHECK(test.bytes() == (131072 + 70000) * 8);
    size_t at = 0, pos = 0;
    // Within the first file, across into the second, round again several times, odd sizes.
    for (size_t bytes : {size_t(300000), size_t(900000), size_t(5) * 201072 * 8 + 4096,
                         size_t(777777)}) {
      INFO("threads " << threads << ", pass of " << bytes << " bytes from file " << at << ", word "
                      << pos);
      const uint64_t want = expected_sum(files, at, pos, bytes / 8, threads);
      CHECK(test.pass(bytes) > 0.0);
      CHECK(test.last_sum() == want);
    }
  }
  SECTION("rewound, a pass reads from the start again") {
    ReadPasses test(dir.path.string(), 2);
    size_t at = 0, pos = 0;
    const uint64_t want = expected_sum(files, at, pos, 150000, 2);
    for (int i = 0; i < 3; ++i) {
      test.rewind();
      test.pass(150000 * 8);
      CHECK(test.last_sum() == want);
    }
  }
  SECTION("one file given by its path") {
    ReadPasses test((dir.path / "model-00002-of-00002.safetensors").string(), 2);
    REQUIRE(test.ok());
    size_t at = 0, pos = 0;
    const uint64_t want = expected_sum({{2, 70000}}, at, pos, 100000, 2);
    test.pass(100000 * 8);
    CHECK(test.last_sum() == want);
  }
}

TEST_CASE("read passes over an anonymous buffer go round it", "[bench]") {
  const size_t words = size_t(1) << 17;  // 1 MiB
  ReadPasses ring(words * 8, 2);
  REQUIRE(ring.ok());
  CHECK(ring.bytes() == words * 8);
  // Its word i holds i * 0x9e3779b97f4a7c15: a file of that content, seen as one stretch.
  size_t pos = 0;
  uint64_t want = 0;
  for (size_t bytes : {size_t(700000), size_t(3) * words * 8 + 64}) {
    want = 0;
    for (size_t left = bytes / 8; left > 0;) {
      const size_t n = std::min(left, words - pos);
      for (unsigned t = 0; t < 2; ++t) {
        const size_t b = n * t / 2, e = n * (t + 1) / 2, read = (e - b) / 32 * 32;
        for (size_t i = 0; i < read; ++i) want += (pos + b + i) * 0x9e3779b97f4a7c15ull;
      }
      pos = (pos + n) % words;
      left -= n;
    }
    ring.pass(bytes);
    CHECK(ring.last_sum() == want);
  }
}

TEST_CASE("the read test measures again and again over the buffer it made once", "[bench]") {
  const gptoss::bench::ReadTest test(2, size_t(8) << 20);
  REQUIRE(test.ok());
  for (int i = 0; i < 3; ++i) {  // what the kernel bench does beside each of its rows
    const double gbs = test.gbs();
    CHECK(gbs > 0.0);
    CHECK(gbs < 1e5);  // 100 TB/s: a wrong byte count or clock, not a machine
  }
  // A buffer mmap refuses: no test, and a bandwidth of 0 rather than a crash.
  const gptoss::bench::ReadTest refused(2, size_t(1) << 62);
  CHECK_FALSE(refused.ok());
  CHECK(refused.gbs() == 0.0);
}

TEST_CASE("read passes: no model files, or files the page cache does not hold", "[bench]") {
  TempDir dir;
  CHECK_FALSE(ReadPasses((dir.path / "missing").string(), 2).ok());
  write_words(dir.path / "config.json", 1, 100);
  ReadPasses none(dir.path.string(), 2);
  CHECK_FALSE(none.ok());
  CHECK(none.error().find(dir.path.string()) != std::string::npos);
  CHECK(none.pass(4096) == 0.0);

  // Written, flushed, and dropped from the page cache: the test must not read it from disk.
  const fs::path f = dir.path / "model.gguf";
  const size_t MiB = size_t(1) << 20;
  write_words(f, 3, 6 * MiB / 8);
  std::FILE* fp = std::fopen(f.c_str(), "r");
  REQUIRE(fp != nullptr);
  fsync(fileno(fp));
  {  // (destroyed before the drops below: pages it maps could not be dropped)
    ReadPasses cached(f.string(), 2);
    CHECK(cached.ok());
    CHECK(cached.bytes() == 6 * MiB);
    CHECK(cached.skipped_bytes() == 0);
  }
  // Its middle 2 MiB only: the passes read the rest, skipping them.
  posix_fadvise(fileno(fp), off_t(2 * MiB), off_t(2 * MiB), POSIX_FADV_DONTNEED);
  ReadPasses part(f.string(), 2);
  if (part.bytes() == 6 * MiB) {
    WARN("the kernel kept the dropped pages; skipping uncached pieces is not exercised here");
  } else {
    REQUIRE(part.ok());
    CHECK(part.bytes() == 4 * MiB);
    CHECK(part.skipped_bytes() == 2 * MiB);
    const std::vector<File> pieces = {{3, 2 * MiB / 8, 0}, {3, 2 * MiB / 8, 4 * MiB / 8}};
    size_t at = 0, pos = 0;
    for (size_t bytes : {size_t(3) * MiB, size_t(3) * MiB + 8192}) {
      const uint64_t want = expected_sum(pieces, at, pos, bytes / 8, 2);
      part.pass(bytes);
      CHECK(part.last_sum() == want);
    }
    // Held page by page: all of the first 2 MiB and a few bytes either side of the drop, not
    // a byte of it, nothing outside the file.
    const uint8_t* base = part.files().at(0).data;
    CHECK(part.cached(base, 2 * MiB));
    CHECK(part.cached(base + 2 * MiB - 100, 100));
    CHECK(part.cached(base + 4 * MiB, 100));
    CHECK_FALSE(part.cached(base + 2 * MiB - 100, 101));
    CHECK_FALSE(part.cached(base + 3 * MiB, 1));
    CHECK_FALSE(part.cached(base + 6 * MiB - 10, 11));
    CHECK_FALSE(part.cached(base - 4096, 10));
  }
  posix_fadvise(fileno(fp), 0, 0, POSIX_FADV_DONTNEED);
  std::fclose(fp);
  ReadPasses dropped(f.string(), 2);
  if (dropped.ok()) {
    WARN("the kernel kept the dropped file's pages; the refusal is not exercised here");
  } else {
    CHECK(dropped.error().find("page cache") != std::string::npos);
    CHECK(dropped.pass(4096) == 0.0);
  }
}

namespace {
// A safetensors file: the 8-byte header length, the JSON header, then the tensors' bytes.
using Tensors = std::vector<std::pair<std::string, std::vector<uint64_t>>>;
void write_safetensors(const fs::path& p, const Tensors& tensors,
                       const std::vector<std::string>& shapes) {
  std::string header = "{";
  size_t off = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const size_t n = tensors[i].second.size() * 8;
    header += (i ? ", \"" : "\"") + tensors[i].first + "\": {\"dtype\": \"U8\", \"shape\": " +
              shapes[i] + ", \"data_offsets\": [" + std::to_string(off) + ", " +
              std::to_string(off + n) + "]}";
    off += n;
  }
  header += "}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::ofstream f(p, std::ios::binary);
  const uint64_t len = header.size();
  f.write(reinterpret_cast<const char*>(&len), 8);
  f.write(header.data(), std::streamsize(header.size()));
  for (const auto& t : tensors)
    f.write(reinterpret_cast<const char*>(t.second.data()), std::streamsize(t.second.size() * 8));
}

// A GGUF v3 file of F32 tensors (two per word), no metadata, data aligned to 32 bytes: each
// tensor a name, its ggml dimensions (fastest first) and words.
struct GgufTensor {
  std::string name;
  std::vector<uint64_t> ne;
  const std::vector<uint64_t>* data;
};
void write_gguf(const fs::path& p, const std::vector<GgufTensor>& tensors) {
  std::vector<uint8_t> b;
  auto put = [&b](const void* v, size_t n) {
    b.insert(b.end(), static_cast<const uint8_t*>(v), static_cast<const uint8_t*>(v) + n);
  };
  auto u32 = [&put](uint32_t v) { put(&v, 4); };
  auto u64 = [&put](uint64_t v) { put(&v, 8); };
  auto align = [](size_t n) { return (n + 31) / 32 * 32; };
  u32(0x46554747), u32(3), u64(tensors.size()), u64(0);
  size_t off = 0;
  for (const GgufTensor& t : tensors) {
    u64(t.name.size()), put(t.name.data(), t.name.size()), u32(uint32_t(t.ne.size()));
    for (uint64_t n : t.ne) u64(n);
    u32(0), u64(off);  // F32
    off = align(off + t.data->size() * 8);
  }
  for (const GgufTensor& t : tensors) {
    b.resize(align(b.size()), 0);
    put(t.data->data(), t.data->size() * 8);
  }
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::vector<uint64_t> words(uint64_t seed, size_t n) {
  std::vector<uint64_t> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = seed * 1000003 + i;
  return w;
}

// What a stretch's parts read on `threads` threads (4 streams of whole lines).
uint64_t stretch_sum(const std::vector<uint64_t>& w, size_t first, size_t n, unsigned threads) {
  uint64_t sum = 0;
  for (unsigned t = 0; t < threads; ++t) {
    const size_t b = n * t / threads, e = n * (t + 1) / threads, read = (e - b) / 32 * 32;
    for (size_t i = 0; i < read; ++i) sum += w[first + b + i];
  }
  return sum;
}
}  // namespace

namespace {
// The replay of a checkpoint holding the dense tensor q, E experts of `per` words each and the
// unembedding head (and an embedding table it must leave out): each pass the dense tensors and
// 2 distinct experts; over many passes every pair shows up.
void check_replay(const fs::path& model, const std::vector<uint64_t>& q,
                  const std::vector<uint64_t>& experts, const std::vector<uint64_t>& head, size_t E,
                  size_t per) {
  ReadPasses files(model.string(), 2);
  REQUIRE(files.ok());
  TokenReplay replay(files, 2, 2);
  REQUIRE(replay.ok());
  CHECK(replay.bytes_per_pass() == (q.size() + 2 * per + head.size()) * 8);
  const uint64_t dense = stretch_sum(q, 0, q.size(), 2) + stretch_sum(head, 0, head.size(), 2);
  std::set<std::pair<size_t, size_t>> seen;
  for (int i = 0; i < 60; ++i) {
    replay.pass();
    bool matched = false;
    for (size_t a = 0; a < E; ++a)
      for (size_t b = a + 1; b < E; ++b)
        if (replay.last_sum() == dense + stretch_sum(experts, a * per, per, 2) +
                                     stretch_sum(experts, b * per, per, 2)) {
          matched = true;
          seen.insert({a, b});
        }
    CHECK(matched);
  }
  CHECK(seen.size() == E * (E - 1) / 2);
}
}  // namespace

TEST_CASE("token replay reads every tensor but the embedding, and k of each layer's experts",
          "[bench]") {
  TempDir dir;
  const size_t E = 4, per = 4096;  // words per expert
  const auto q = words(1, 8192), experts = words(2, E * per);
  const auto embed = words(3, 8192), head = words(4, 6000);
  SECTION("safetensors") {
    write_safetensors(dir.path / "model.safetensors",
                      {{"model.embed_tokens.weight", embed},
                       {"model.layers.0.self_attn.q_proj.weight", q},
                       {"model.layers.0.mlp.experts.gate_up_proj_blocks", experts},
                       {"lm_head.weight", head}},
                      {"[8192, 8]", "[8192, 8]", "[4, 4096, 8]", "[6000, 8]"});
    check_replay(dir.path, q, experts, head, E, per);
  }
  SECTION("gguf, through the library's reader") {
    write_gguf(dir.path / "model.gguf", {{"output.weight", {2 * 6000}, &head},
                                         {"blk.0.attn_q.weight", {2 * 8192}, &q},
                                         {"blk.0.ffn_up_exps.weight", {2 * per, 1, E}, &experts},
                                         {"token_embd.weight", {2 * 8192}, &embed}});
    check_replay(dir.path / "model.gguf", q, experts, head, E, per);
  }
  SECTION("a file neither reader takes") {
    write_words(dir.path / "model.gguf", 1, 4096);
    ReadPasses gguf((dir.path / "model.gguf").string(), 2);
    REQUIRE(gguf.ok());
    TokenReplay no(gguf, 4, 2);
    CHECK_FALSE(no.ok());
    CHECK(no.error().find("model.gguf") != std::string::npos);
  }
}
