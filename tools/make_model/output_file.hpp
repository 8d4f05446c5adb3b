#pragma once
// A file written front to back through a large buffer; any failure throws gptoss::Error(io).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "libgptoss/common/error.hpp"

namespace gptoss::make_model {

class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) fail(gptoss_status_io, "cannot create {}", path);
    std::setvbuf(f_, nullptr, _IOFBF, 8u << 20);
  }
  ~OutputFile() {
    if (f_) std::fclose(f_);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail(gptoss_status_io, "cannot write {}", path_);
    written_ += n;
  }
  template <typename T>
  void put(T v) { write(&v, sizeof v); }
  void pad_to(uint64_t alignment) {
    static const char zeros[64] = {};
    while (written_ % alignment) write(zeros, std::min<uint64_t>(64, alignment - written_ % alignment));
  }
  uint64_t written() const { return written_; }
  void close() {
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail(gptoss_status_io, "cannot finish writing {}", path_);
  }

 private:
  std::string path_;
  std::FILE* f_;
  uint64_t written_ = 0;
};

}  // namespace gptoss::make_model
