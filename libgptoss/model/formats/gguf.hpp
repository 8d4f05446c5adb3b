#pragma once
// GGUF (v2, v3) reader: metadata of every value type, tensor infos, aligned data section.
// Every count, length and offset is checked against the file before it is used, so a corrupt
// file gives gptoss::Error(io) instead of a crash or a huge allocation.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "libgptoss/model/mapped_file.hpp"

namespace gptoss::gguf {

enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12
};

// ggml tensor types this reader accepts (others are refused with unsupported_argument).
enum class GgmlType : uint32_t { f32 = 0, f16 = 1, q8_0 = 8, bf16 = 30, mxfp4 = 39 };
const char* ggml_type_name(uint32_t type);  // "Q4_K", ...; "unknown" past ggml's list

// An array value stays in the file; elements are decoded on request.
struct Array {
  ValueType element_type;
  uint64_t count;
  std::span<const uint8_t> bytes;  // the encoded elements
};

struct Value {
  ValueType type;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> v;
};

struct TensorInfo {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;  // ggml order: fastest dimension first
  uint64_t offset;          // from the start of the data section
  const uint8_t* data;
  size_t size;              // bytes
};

class File {
 public:
  // Throws gptoss::Error(io) for a malformed file, unsupported_argument for a version or
  // tensor type this reader does not handle; messages name the file.
  File(const std::string& path, bool use_mmap);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  // Where the data section starts in the file: a tensor's bytes lie at data_offset() + offset.
  uint64_t data_offset() const { return data_offset_; }
  const std::string& path() const { return file_->path(); }
  const std::map<std::string, Value>& metadata() const { return metadata_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(const std::string& name) const;
  // The tensor's bytes have been converted and will not be read soon (MappedFile::release).
  void release(const TensorInfo& t) const { file_->release(t.data, t.size); }

  // Typed metadata access: nullopt if the key is absent; gptoss::Error(io) naming the key if
  // it holds the wrong type (integers of any width convert when the value fits).
  std::optional<uint64_t> get_uint(const std::string& key) const;
  std::optional<double> get_float(const std::string& key) const;
  std::optional<std::string> get_string(const std::string& key) const;
  std::optional<std::vector<std::string>> get_string_array(const std::string& key) const;
  std::optional<std::vector<int64_t>> get_int_array(const std::string& key) const;

 private:
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::map<std::string, Value> metadata_;
  std::map<std::string, TensorInfo> tensors_;
};

}  // namespace gptoss::gguf
