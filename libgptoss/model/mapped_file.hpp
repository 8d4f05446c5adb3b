#pragma once
// A whole file, read-only, either memory-mapped (MAP_PRIVATE) or read into memory. The bytes
// stay valid and unchanged for the object's lifetime, so tensors can point into them.
// Both ways ask for 2 MiB pages; a mapped file whose cached pages cannot map that way (it was
// written recently) has them re-read once (see map_with_huge_pages in mapped_file.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace gptoss {

// Bytes of the mappings inside [begin, begin + size) that the kernel maps with 2 MiB pages
// (FilePmdMapped and AnonHugePages in /proc/self/smaps; 0 where that cannot be read).
size_t huge_page_mapped_bytes(const void* begin, size_t size);

class MappedFile {
 public:
  // Throws gptoss::Error(io) naming the path if it cannot be opened, sized or mapped/read.
  MappedFile(const std::string& path, bool use_mmap);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  bool is_mapped() const { return mapped_; }
  // Bytes [p, p + n) of a mapped file will not be read soon: their whole pages leave this
  // process's memory (the page cache keeps them; reading them again faults them back in).
  // For a read copy (use_mmap false) nothing happens: its pages are the only copy.
  void release(const uint8_t* p, size_t n) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  uint8_t* owned_ = nullptr;  // when read instead of mapped: an anonymous mapping of size_
};

}  // namespace gptoss
