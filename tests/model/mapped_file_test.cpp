// MappedFile: the bytes it gives are the file's, mapped or read; and a mapped file whose
// page cache was left in small folios by its writer (a download, a copy) ends up mapped with
// 2 MiB pages, where the kernel can map a file's cache that way at all.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

#include "libgptoss/model/mapped_file.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

using gptoss::test::kMiB;
using gptoss::test::TempDir;


std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Writes `bytes` in write() calls of `chunk` bytes and waits until they are on disk (dirty
// pages cannot be dropped from the cache, clean ones can).
void write_in_chunks(const std::string& path, const std::vector<uint8_t>& bytes, size_t chunk) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, std::min(chunk, bytes.size() - done));
    REQUIRE(n > 0);
    done += size_t(n);
  }
  REQUIRE(::fsync(fd) == 0);
  ::close(fd);
}

// Faults in every page of [p, p + n) and returns how much of it maps with 2 MiB pages.
size_t touch_and_count_huge(const uint8_t* p, size_t n) {
  uint8_t sum = 0;
  for (size_t o = 0; o < n; o += 4096) sum ^= reinterpret_cast<const volatile uint8_t*>(p)[o];
  asm volatile("" ::"r"(sum));
  return gptoss::huge_page_mapped_bytes(p, n);
}

// Whether this kernel and file system map a file's page cache with 2 MiB pages when the file
// was written in one piece (the case most likely to give 2 MiB folios).
bool file_huge_pages_work(const std::string& path) {
  write_in_chunks(path, random_bytes(16 * kMiB, 7), 16 * kMiB);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // read back by the faults below
  void* area = ::mmap(nullptr, 18 * kMiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(area != MAP_FAILED);
  uint8_t* at = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(area) + 2 * kMiB - 1) &
                                           ~uintptr_t(2 * kMiB - 1));
  void* p = ::mmap(at, 16 * kMiB, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  REQUIRE(p != MAP_FAILED);
  (void)::madvise(p, 16 * kMiB, MADV_HUGEPAGE);
  const size_t huge = touch_and_count_huge(static_cast<uint8_t*>(p), 16 * kMiB);
  ::munmap(area, 18 * kMiB);
  ::close(fd);
  return huge > 0;
}

}  // namespace

TEST_CASE("MappedFile gives the file's bytes, mapped or read", "[model][mapped_file]") {
  TempDir dir;
  const std::string path = dir / "weights.bin";
  const auto bytes = random_bytes(9 * kMiB + 123, 1);  // not a multiple of any page size
  write_in_chunks(path, bytes, kMiB);
  for (bool use_mmap : {true, false}) {
    gptoss::MappedFile f(path, use_mmap);
    CHECK(f.is_mapped() == use_mmap);
    REQUIRE(f.size() == bytes.size());
    CHECK(std::memcmp(f.data(), bytes.data(), bytes.size()) == 0);
  }
}

TEST_CASE("MappedFile maps a file written in small pieces with 2 MiB pages",
          "[model][mapped_file]") {
  TempDir dir;
  if (!file_huge_pages_work(dir / "probe.bin")) {
    WARN("skipped: this kernel or file system does not map a file's page cache with 2 MiB pages");
    return;
  }
  const std::string path = dir / "weights.bin";
  const auto bytes = random_bytes(24 * kMiB + 4097, 2);
  // Written in 1 MiB pieces, the file sits in the page cache in folios of at most 1 MiB:
  // mapped as it is, none of it could use a 2 MiB page.
  write_in_chunks(path, bytes, kMiB);
  gptoss::MappedFile f(path, true);
  REQUIRE(f.size() == bytes.size());
  REQUIRE(reinterpret_cast<uintptr_t>(f.data()) % (2 * kMiB) == 0);
  const size_t whole_huge_pages = f.size() / (2 * kMiB) * (2 * kMiB);
  const size_t huge = touch_and_count_huge(f.data(), f.size());
  INFO("2 MiB-mapped bytes " << huge << " of " << whole_huge_pages);
  CHECK(huge >= whole_huge_pages / 10 * 9);
  CHECK(std::memcmp(f.data(), bytes.data(), bytes.size()) == 0);

  // A second load finds the cache in 2 MiB folios and keeps them.
  gptoss::MappedFile again(path, true);
  CHECK(touch_and_count_huge(again.data(), again.size()) >= whole_huge_pages / 10 * 9);
  CHECK(std::memcmp(again.data(), bytes.data(), bytes.size()) == 0);
}

namespace {
size_t resident_bytes() {  // of the whole process, from /proc/self/statm
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  REQUIRE(f != nullptr);
  unsigned long size = 0, resident = 0;
  REQUIRE(std::fscanf(f, "%lu %lu", &size, &resident) == 2);
  std::fclose(f);
  return size_t(resident) * size_t(::sysconf(_SC_PAGESIZE));
}
}  // namespace

// The GGUF loader releases the file's pages of each tensor it has converted: they leave the
// process (RSS), yet the bytes read back intact; a read copy is never released (its pages
// are the only copy).
TEST_CASE("MappedFile::release drops pages from the process, never the bytes", "[model][mapped_file]") {
  TempDir dir;
  const std::string path = dir / "weights.bin";
  const auto bytes = random_bytes(64 * kMiB + 321, 2);
  write_in_chunks(path, bytes, 8 * kMiB);
  for (bool use_mmap : {true, false}) {
    INFO("use_mmap " << use_mmap);
    gptoss::MappedFile f(path, use_mmap);
    REQUIRE(std::memcmp(f.data(), bytes.data(), bytes.size()) == 0);  // all resident now
    const size_t before = resident_bytes();
    f.release(f.data() + 1001, 60 * kMiB);  // not page-aligned: only whole pages inside go
    const size_t after = resident_bytes();
    if (use_mmap)
      CHECK(before - std::min(before, after) >= 56 * kMiB);
    else
      CHECK(after + 4 * kMiB >= before);
    f.release(f.data() + bytes.size() - 10, 100);  // past the end: ignored
    CHECK(std::memcmp(f.data(), bytes.data(), bytes.size()) == 0);
  }
}
