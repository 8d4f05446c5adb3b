#pragma once
// Safetensors reader: one file (8-byte little-endian header length, JSON header, data) or a
// sharded set described by model.safetensors.index.json. Every tensor's offsets are checked
// against the file and against dtype x shape before it can be looked up.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libgptoss/model/mapped_file.hpp"

namespace gptoss::safetensors {

struct TensorInfo {
  std::string name;
  std::string dtype;           // as written in the header: "BF16", "F32", "U8", ...
  std::vector<int64_t> shape;  // outermost first
  const uint8_t* data = nullptr;
  size_t size = 0;             // bytes, == product(shape) * element size
  const MappedFile* file = nullptr;
};

// Bytes per element of a safetensors dtype; 0 if the dtype is unknown to this reader.
size_t dtype_size(const std::string& dtype);

class File {
 public:
  // Throws gptoss::Error(io) naming the file for any malformed or out-of-bounds header.
  File(const std::string& path, bool use_mmap);
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const MappedFile& mapped() const { return *file_; }

 private:
  std::unique_ptr<MappedFile> file_;
  std::map<std::string, TensorInfo> tensors_;
};

// All safetensors files of an HF checkpoint directory: the shards named by
// model.safetensors.index.json, else model.safetensors, else every *.safetensors file.
class Checkpoint {
 public:
  Checkpoint(const std::string& directory, bool use_mmap);
  // nullptr if no shard holds `name`.
  const TensorInfo* find(const std::string& name) const;
  size_t num_tensors() const { return index_.size(); }
  const std::vector<std::string>& file_names() const { return file_names_; }

 private:
  std::vector<std::unique_ptr<File>> files_;
  std::vector<std::string> file_names_;
  std::map<std::string, const TensorInfo*> index_;
};

}  // namespace gptoss::safetensors
