#include "libgptoss/model/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/log.hpp"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1; older headers lack the name
#endif

namespace gptoss {
namespace {

// Closes the descriptor on every path out of the constructor; the mapping outlives it.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

constexpr size_t kHugePage = size_t(2) << 20;

uintptr_t align_up(uintptr_t a) { return (a + kHugePage - 1) & ~uintptr_t(kHugePage - 1); }
size_t page_size() { return size_t(::sysconf(_SC_PAGESIZE)); }
size_t page_round(size_t n) { return (n + page_size() - 1) / page_size() * page_size(); }
uintptr_t align_down(uintptr_t a) { return a & ~uintptr_t(kHugePage - 1); }

// Transparent huge pages are not switched off ("never") system-wide.
bool thp_possible() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return f.good() && s.find("[never]") == std::string::npos;
}

// Maps the whole file read-only at a 2 MiB-aligned address (so that 2 MiB-aligned file
// offsets can map with one PMD entry each), asking for huge pages. nullptr on failure.
uint8_t* map_aligned(int fd, size_t size) {
  void* area = ::mmap(nullptr, size + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return nullptr;
  const uintptr_t a = reinterpret_cast<uintptr_t>(area), at = align_up(a);
  void* p = ::mmap(reinterpret_cast<void*>(at), size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    ::munmap(area, size + kHugePage);
    return nullptr;
  }
  if (at > a) ::munmap(area, at - a);  // the reserve's slack before and after the file
  const uintptr_t end = at + page_round(size), area_end = a + page_round(size) + kHugePage;
  if (area_end > end) ::munmap(reinterpret_cast<void*>(end), area_end - end);
  (void)::madvise(p, size, MADV_HUGEPAGE);
  return static_cast<uint8_t*>(p);
}

// Faults in one byte of every 2 MiB page in [lo, hi) whose first 4 KiB is in the page cache
// (a PMD mapping where the cache holds that range as a 2 MiB folio, small pages around the
// byte otherwise); returns how many. Pages not cached yet are left alone: they will be read
// into 2 MiB folios when first used (the mapping asks for huge pages).
size_t touch_cached_huge_pages(uintptr_t lo, uintptr_t hi) {
  const size_t n = (hi - lo) / kHugePage, pages_per = kHugePage / page_size();
  std::vector<unsigned char> resident(n * pages_per);
  if (::mincore(reinterpret_cast<void*>(lo), hi - lo, resident.data()) != 0) return 0;
  size_t touched = 0;
  uint8_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if ((resident[i * pages_per] & 1) == 0) continue;
    sum ^= *reinterpret_cast<const volatile uint8_t*>(lo + i * kHugePage);
    ++touched;
  }
  asm volatile("" ::"r"(sum));
  return touched;
}

}  // namespace

size_t huge_page_mapped_bytes(const void* begin, size_t size) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(begin), hi = lo + size;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  size_t total = 0;
  while (std::getline(smaps, line)) {
    unsigned long long a = 0, b = 0;
    int used = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %n", &a, &b, &used) == 2 && used > 0) {
      inside = a >= lo && a < hi;  // a mapping header: is it one of ours?
      (void)b;
      continue;
    }
    unsigned long long kb = 0;
    if (inside && (std::sscanf(line.c_str(), "FilePmdMapped: %llu kB", &kb) == 1 ||
                   std::sscanf(line.c_str(), "AnonHugePages: %llu kB", &kb) == 1))
      total += size_t(kb) * 1024;
  }
  return total;
}

namespace {

// Weights are mapped with 2 MiB pages: they stream through the kernels on every token, and in
// 4 KiB pages each stream needs a TLB entry per 4 KiB (a two-dimensional page walk in a VM) and
// the prefetchers stop at every page (decode cost: docs/performance.md, "Huge pages").
//
// The page cache maps a range with one 2 MiB entry only where it holds the range as a 2 MiB
// folio. It makes those when it reads the file for a MADV_HUGEPAGE mapping, but a file that was
// written recently (a download, a copy, the model generator) stays cached in the folios of its
// writes: `cp` or 1 MiB writes leave no 2 MiB ones. So: fault in one byte per 2 MiB and count
// the PMD mappings. If too few, ask the kernel to collapse the range in memory (MADV_COLLAPSE,
// where the kernel supports it for files); failing that, drop the file's cached pages once
// (POSIX_FADV_DONTNEED; it leaves pages that other processes map) so that they are read again
// into 2 MiB folios: one re-read from disk, after which loads find huge folios in the cache.
// No MADV_WILLNEED: its readahead fills the cache with small folios, so pages not cached yet
// are read by the faults of their first use.
// Returns the mapping to keep (the same one, or a fresh one after the re-read).
uint8_t* map_with_huge_pages(int fd, size_t size, const std::string& path) {
  uint8_t* p = map_aligned(fd, size);
  if (p == nullptr) return nullptr;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = align_down(lo + size);
  const size_t want = hi > lo ? hi - lo : 0;
  if (want < 4 * kHugePage || !thp_possible()) return p;
  const size_t cached = touch_cached_huge_pages(lo, hi) * kHugePage;
  const size_t before = huge_page_mapped_bytes(p, size);
  const double pct = cached > 0 ? 100.0 * double(before) / double(cached) : 100.0;
  if (before >= cached / 10 * 9) {
    log().debug("{}: {} MiB cached, {:.0f} % of it in 2 MiB pages", path, cached >> 20, pct);
    return p;
  }
  if (::madvise(p, want, MADV_COLLAPSE) == 0) {
    log().info("{}: {:.0f} % of the cached file was in 2 MiB pages; collapsed to {:.0f} %", path,
               pct, 100.0 * double(huge_page_mapped_bytes(p, size)) / double(want));
    return p;
  }
  // Does a re-read give 2 MiB folios here? If some of the file maps in 2 MiB pages it does;
  // if none does, re-read the first 2 MiB and see.
  bool rereads_huge = before > 0;
  if (!rereads_huge) {
    // The first 2 MiB's file pages leave the mapping for an anonymous reservation, replaced in
    // one call and never unmapped: between a munmap and a MAP_FIXED remap another thread's
    // mmap (a new thread's stack) can take the hole, and MAP_FIXED would then map the file over
    // it (tests/model/mapped_file_concurrency_test.cpp).
    if (::mmap(p, kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
        MAP_FAILED) {
      return p;  // the file's pages stay mapped as they are
    }
    (void)::posix_fadvise(fd, 0, off_t(kHugePage), POSIX_FADV_DONTNEED);
    void* q = ::mmap(p, kHugePage, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    if (q == MAP_FAILED) {  // the reservation cannot be refilled: start over with a plain mapping
      ::munmap(p, size);
      return map_aligned(fd, size);
    }
    (void)::madvise(q, kHugePage, MADV_HUGEPAGE);
    const volatile uint8_t first = *p;  // reads the first 2 MiB back in
    (void)first;
    rereads_huge = huge_page_mapped_bytes(p, size) > 0;
  }
  if (!rereads_huge) {
    log().debug("{}: {:.0f} % in 2 MiB pages; the kernel does not map this file's cache with "
                "2 MiB pages", path, pct);
    return p;
  }
  ::munmap(p, size);
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  p = map_aligned(fd, size);
  if (p == nullptr) return nullptr;
  log().info("{}: only {:.0f} % of the cached file was in 2 MiB pages (it was written "
             "recently); its cached pages were dropped to be read again as 2 MiB pages (once; "
             "decode streams the weights faster from them)", path, pct);
  return p;
}

}  // namespace

MappedFile::MappedFile(const std::string& path, bool use_mmap) : path_(path) {
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) fail(gptoss_status_io, "cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) fail(gptoss_status_io, "cannot stat {}: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(gptoss_status_io, "{} is not a regular file", path);
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;  // nothing to map; data() stays null and size() 0

  if (use_mmap) {
    uint8_t* p = map_with_huge_pages(fd.fd, size_, path);
    if (p == nullptr) fail(gptoss_status_io, "cannot map {}: {}", path, std::strerror(errno));
    data_ = p;
    mapped_ = true;
    return;
  }

  // Anonymous memory asking for transparent huge pages: weights stream through the kernels
  // on every token, and 2 MiB pages spare the TLB misses and page-boundary prefetch stops of
  // 4 KiB ones. The page cache keeps the file's own pages, which are not ours (not in RSS).
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    fail(gptoss_status_insufficient_memory, "cannot allocate {} bytes to read {}", size_, path);
  (void)::madvise(p, size_, MADV_HUGEPAGE);
  owned_ = static_cast<uint8_t*>(p);
  size_t done = 0;
  while (done < size_) {
    ssize_t n = ::pread(fd.fd, owned_ + done, size_ - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::munmap(owned_, size_);  // the destructor does not run when the constructor throws
      owned_ = nullptr;
      errno = err;
    }
    if (n <= 0)
      fail(gptoss_status_io, "cannot read {} (at byte {} of {}): {}", path, done, size_,
           n < 0 ? std::strerror(errno) : "unexpected end of file");
    done += static_cast<size_t>(n);
  }
  (void)::mprotect(p, size_, PROT_READ);  // weights are read-only from here on
  data_ = owned_;
}

void MappedFile::release(const uint8_t* p, size_t n) const {
  if (!mapped_ || p < data_ || p + n > data_ + size_) return;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page_size() - 1) / page_size() * page_size();
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n) / page_size() * page_size();
  if (hi > lo) (void)::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (owned_ != nullptr) ::munmap(owned_, size_);
}

}  // namespace gptoss
