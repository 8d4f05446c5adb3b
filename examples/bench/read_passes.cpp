// Passes of pure loads over a model's files or an anonymous buffer (bench.hpp, ReadPasses).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "libgptoss/common/error.hpp"
#include "libgptoss/model/formats/gguf.hpp"

namespace gptoss::bench {
namespace {
constexpr size_t kHugePage = size_t(2) << 20;

// Seconds for `threads` threads to read the stretches, each thread its part of every stretch in
// turn without waiting for the others (4 streams, 8 KiB ahead); *sum = the words' sum.
double timed_read(const std::vector<std::pair<const uint64_t*, size_t>>& stretches,
                  unsigned threads, uint64_t* sum) {
  std::vector<uint64_t> sums(threads);
  std::vector<std::thread> pool;
  // Timed from when every thread is running: thread creation is not the pass's.
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (const auto& [first, n] : stretches) {
        const size_t b = n * t / threads, e = n * (t + 1) / threads;
        sums[t] += read_words(first + b, e - b, 4, 1024);
      }
    });
  while (ready.load() != threads) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *sum = 0;
  for (uint64_t x : sums) *sum += x;
  return s;
}

bool is_model_file(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".safetensors" || ext == ".gguf";
}
}  // namespace

ReadPasses::ReadPasses(const std::string& model, unsigned threads)
    : threads_(threads_or_all(threads)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_directory(model, ec)) {
    for (const auto& e : fs::directory_iterator(model, ec))
      if (e.is_regular_file(ec) && is_model_file(e.path())) files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else if (fs::is_regular_file(model, ec)) {
    files.push_back(model);
  }
  if (files.empty()) {
    error_ = "no .safetensors or .gguf file at " + model;
    return;
  }
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t resident = 0, total = 0;
  for (const fs::path& f : files) {
    const int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) {
      if (fd >= 0) close(fd);
      error_ = "cannot open " + f.string();
      return;
    }
    const size_t len = size_t(st.st_size);
    if (len == 0) {
      close(fd);
      continue;
    }
    // At a 2 MiB-aligned address, as the loader maps, so the page cache's huge folios map huge.
    void* reserve = mmap(nullptr, len + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void* p = MAP_FAILED;
    if (reserve != MAP_FAILED) {
      const uintptr_t at = (uintptr_t(reserve) + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
      p = mmap(reinterpret_cast<void*>(at), len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
      if (p == MAP_FAILED) {
        munmap(reserve, len + kHugePage);
      } else {  // the reservation's ends around the file
        const uintptr_t end = uintptr_t(reserve) + len + kHugePage;
        const uintptr_t tail = at + (len + page - 1) / page * page;
        if (at > uintptr_t(reserve)) munmap(reserve, at - uintptr_t(reserve));
        if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
      }
    }
    close(fd);
    if (p == MAP_FAILED) {
      error_ = "cannot map " + f.string();
      return;
    }
    (void)madvise(p, len, MADV_HUGEPAGE);
    files_.push_back({f.string(), static_cast<const uint8_t*>(p), len});
    // Only what the page cache holds (mincore reports a file mapping's cached pages without
    // faulting them in), in whole 2 MiB pieces: the test must not read the disk. What the
    // cache lacks the model has not read either (embedding rows of tokens never seen).
    std::vector<unsigned char> in((len + page - 1) / page);
    if (mincore(p, len, in.data()) != 0) continue;
    total += len;
    const size_t per = kHugePage / page;
    for (size_t c = 0; c * kHugePage < len; ++c) {
      const size_t first = c * per, last = std::min(in.size(), first + per);
      if (!std::all_of(in.begin() + std::ptrdiff_t(first), in.begin() + std::ptrdiff_t(last),
                       [](unsigned char v) { return (v & 1) != 0; }))
        continue;
      const size_t begin = c * kHugePage, end = std::min(len, begin + kHugePage);
      const auto* w = reinterpret_cast<const uint64_t*>(static_cast<const uint8_t*>(p) + begin);
      if (!regions_.empty() && regions_.back().words + regions_.back().n_words == w)
        regions_.back().n_words = (end - begin) / sizeof(uint64_t) + regions_.back().n_words;
      else
        regions_.push_back({w, (end - begin) / sizeof(uint64_t)});
      resident += end - begin;
    }
  }
  // Regions too short for one line per stream read nothing.
  regions_.erase(std::remove_if(regions_.begin(), regions_.end(),
                                [](const Region& r) { return r.n_words < 4 * 8; }),
                 regions_.end());
  if (regions_.empty()) {
    error_ = total == 0 ? "the model files at " + model + " are empty"
                        : "none of the model files at " + model + " is in the page cache";
    return;
  }
  skipped_ = total - resident;
  // Page tables now, and one untimed round over everything: the first round over a 20b
  // model's files read at a third to a half of the rate of the rounds after it here.
  for (const Region& r : regions_) {
    uint8_t* b = reinterpret_cast<uint8_t*>(const_cast<uint64_t*>(r.words));
    if (madvise(b, r.n_words * sizeof(uint64_t), MADV_POPULATE_READ) != 0) {
      volatile uint64_t sink = 0;  // older kernels: touch each page
      for (size_t w = 0; w < r.n_words; w += page / sizeof(uint64_t)) sink = sink + r.words[w];
    }
  }
  pass(bytes());
}

ReadPasses::ReadPasses(size_t anonymous_bytes, unsigned threads)
    : threads_(threads_or_all(threads)) {
  const size_t words = anonymous_bytes / sizeof(uint64_t);
  uint64_t* w = words >= 4 * 8 ? touched_buffer(words * sizeof(uint64_t)) : nullptr;
  if (w == nullptr) {
    error_ = "no memory for a " + std::to_string(anonymous_bytes >> 20) + " MiB buffer";
    return;
  }
  anonymous_ = true;
  regions_.push_back({w, words});
}

ReadPasses::~ReadPasses() {
  for (const File& f : files_) munmap(const_cast<uint8_t*>(f.data), f.size);
  if (anonymous_) munmap(const_cast<uint64_t*>(regions_[0].words), regions_[0].n_words * 8);
}

bool ReadPasses::cached(const uint8_t* p, size_t n) const {
  // Page by page (mincore does not fault them in): a tensor that shares a 2 MiB piece with one
  // the model never read whole (the embedding table) is still held.
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (const File& f : files_) {
    if (p < f.data || n > f.size || p - f.data > std::ptrdiff_t(f.size - n)) continue;
    const uintptr_t lo = uintptr_t(p) / page * page, hi = uintptr_t(p) + n;
    std::vector<unsigned char> in((hi - lo + page - 1) / page);
    if (in.empty()) return true;
    if (mincore(reinterpret_cast<void*>(lo), hi - lo, in.data()) != 0) return false;
    return std::all_of(in.begin(), in.end(), [](unsigned char v) { return (v & 1) != 0; });
  }
  return false;
}

size_t ReadPasses::bytes() const {
  size_t b = 0;
  for (const Region& r : regions_) b += r.n_words * sizeof(uint64_t);
  return b;
}

double ReadPasses::pass(size_t bytes) {
  if (!ok()) return 0.0;
  std::vector<std::pair<const uint64_t*, size_t>> stretches;  // (first word, words)
  for (size_t left = bytes / sizeof(uint64_t); left > 0;) {
    const Region& r = regions_[region_];
    const size_t n = std::min(left, r.n_words - pos_);
    stretches.emplace_back(r.words + pos_, n);
    pos_ += n;
    left -= n;
    if (pos_ == r.n_words) {
      pos_ = 0;
      region_ = (region_ + 1) % regions_.size();
    }
  }
  return timed_read(stretches, threads_, &last_sum_);
}

namespace {
// A GGUF file's tensors for the replay, through the library's reader: each (name, bytes in
// `f`'s mapping, experts (the outermost dimension of an expert tensor), layer) to `take`; the
// embedding table is left out. False where the file is not a GGUF the reader takes (error set
// here) or `take` refused a tensor (which sets error).
template <typename Take>
bool gguf_tensors(const ReadPasses::File& f, Take&& take, std::string& error) {
  try {
    const gguf::File g(f.path, true);
    for (const auto& [name, t] : g.tensors()) {
      if (name == "token_embd.weight") continue;
      size_t layer = SIZE_MAX;
      if (name.rfind("blk.", 0) == 0) layer = std::strtoull(name.c_str() + 4, nullptr, 10);
      const size_t experts =
          name.find("_exps.") != std::string::npos && !t.ne.empty() ? size_t(t.ne.back()) : 0;
      const uint64_t at = g.data_offset() + t.offset;
      if (at > f.size || t.size > f.size - at) {
        error = f.path + ": changed since it was mapped";
        return false;
      }
      if (!take(name, f.data + at, t.size, experts, layer)) return false;
    }
  } catch (const gptoss::Error& e) {
    error = e.what();
    return false;
  }
  return true;
}
}  // namespace

TokenReplay::TokenReplay(const ReadPasses& files, unsigned experts_per_token, unsigned threads)
    : k_(experts_per_token),
      threads_(threads_or_all(threads)) {
  if (!files.ok()) {
    error_ = files.error();
    return;
  }
  // Every tensor a decode token reads, the embedding table aside (one row of it).
  auto take = [&](const std::string& name, const uint8_t* data, size_t size, size_t experts,
                  size_t layer) {
    if (!files.cached(data, size)) {
      error_ = "the page cache does not hold all of " + name;
      return false;
    }
    bytes_ += experts ? size / experts * std::min<size_t>(k_, experts) : size;
    tensors_.push_back({data, size, experts, layer});
    return true;
  };
  for (const ReadPasses::File& f : files.files()) {
    if (std::filesystem::path(f.path).extension() == ".gguf") {
      if (!gguf_tensors(f, take, error_)) return;
      continue;
    }
    uint64_t header = 0;
    if (f.size >= 8) std::memcpy(&header, f.data, 8);
    if (header == 0 || header > f.size - 8) {
      error_ = f.path + ": not a safetensors header";
      return;
    }
    const nlohmann::json h = nlohmann::json::parse(f.data + 8, f.data + 8 + header, nullptr, false);
    if (!h.is_object()) {
      error_ = f.path + ": not a safetensors header";
      return;
    }
    const uint8_t* base = f.data + 8 + header;
    for (const auto& [name, t] : h.items()) {
      if (name == "__metadata__" || name == "model.embed_tokens.weight") continue;
      const auto& off = t.value("data_offsets", nlohmann::json::array());
      const auto& shape = t.value("shape", nlohmann::json::array());
      if (off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) continue;
      const size_t b = off[0], e = off[1];
      if (e <= b || e > f.size - 8 - header) continue;
      size_t layer = SIZE_MAX, experts = 0;
      if (name.rfind("model.layers.", 0) == 0)
        layer = std::strtoull(name.c_str() + 13, nullptr, 10);
      if (name.find(".mlp.experts.") != std::string::npos && !shape.empty() &&
          shape[0].is_number_unsigned() && shape[0] > 0)
        experts = shape[0];
      if (!take(name, base + b, e - b, experts, layer)) return;
    }
  }
  if (tensors_.empty()) error_ = "no tensors in the checkpoint";
  std::sort(tensors_.begin(), tensors_.end(),
            [](const Tensor& a, const Tensor& b) { return a.data < b.data; });
}

double TokenReplay::pass() {
  if (!ok()) return 0.0;
  // k distinct experts per layer, drawn afresh (xorshift64).
  std::vector<std::vector<size_t>> chosen;
  auto experts_of = [&](size_t layer, size_t n) -> const std::vector<size_t>& {
    if (chosen.size() <= layer) chosen.resize(layer + 1);
    std::vector<size_t>& c = chosen[layer];
    while (c.size() < std::min<size_t>(k_, n)) {
      rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;
      const size_t e = rng_ % n;
      if (std::find(c.begin(), c.end(), e) == c.end()) c.push_back(e);
    }
    return c;
  };
  std::vector<std::pair<const uint64_t*, size_t>> stretches;
  auto add = [&](const uint8_t* p, size_t n) {  // whole words only
    const uintptr_t b = (uintptr_t(p) + 7) & ~uintptr_t(7), e = (uintptr_t(p) + n) & ~uintptr_t(7);
    if (e > b) stretches.emplace_back(reinterpret_cast<const uint64_t*>(b), (e - b) / 8);
  };
  for (const Tensor& t : tensors_) {
    if (t.experts == 0) {
      add(t.data, t.size);
      continue;
    }
    const size_t slice = t.size / t.experts;
    std::vector<size_t> es = experts_of(t.layer == SIZE_MAX ? 0 : t.layer, t.experts);
    std::sort(es.begin(), es.end());
    for (size_t e : es) add(t.data + e * slice, slice);
  }
  return timed_read(stretches, threads_, &last_sum_);
}

}  // namespace gptoss::bench
