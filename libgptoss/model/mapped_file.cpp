#include "libgptoss/model/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "libgptoss/common/error.hpp"

namespace gptoss {
namespace {

// Closes the descriptor on every path out of the constructor; the mapping outlives it.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

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
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.fd, 0);
    if (p == MAP_FAILED) fail(gptoss_status_io, "cannot map {}: {}", path, std::strerror(errno));
    // Weights are read once, front to back, at load: start the readahead now. Advice only.
    (void)::madvise(p, size_, MADV_HUGEPAGE);
    (void)::madvise(p, size_, MADV_WILLNEED);
    data_ = static_cast<const uint8_t*>(p);
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

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (owned_ != nullptr) ::munmap(owned_, size_);
}

}  // namespace gptoss
