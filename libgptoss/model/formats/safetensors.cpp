#include "libgptoss/model/formats/safetensors.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/json.hpp"

namespace gptoss::safetensors {
namespace {

namespace fs = std::filesystem;

// The format's own limit on the JSON header (safetensors refuses larger ones too).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Non-negative integer from JSON, or fail naming what it is.
uint64_t json_uint(const nlohmann::json& v, const std::string& path, const std::string& what) {
  if (!v.is_number_unsigned())
    fail(gptoss_status_io, "{}: {} must be a non-negative integer, got {}", path, what,
         json_excerpt(v));
  return v.get<uint64_t>();
}

TensorInfo parse_entry(const std::string& path, const std::string& name, const nlohmann::json& e,
                       const uint8_t* data, uint64_t data_size) {
  if (!e.is_object()) fail(gptoss_status_io, "{}: header entry \"{}\" is not an object", path, name);
  auto dt = e.find("dtype");
  auto sh = e.find("shape");
  auto off = e.find("data_offsets");
  if (dt == e.end() || !dt->is_string() || sh == e.end() || !sh->is_array() || off == e.end() ||
      !off->is_array() || off->size() != 2)
    fail(gptoss_status_io, "{}: tensor \"{}\" lacks a valid dtype, shape or data_offsets", path,
         name);

  TensorInfo t;
  t.name = name;
  t.dtype = dt->get<std::string>();
  size_t esize = dtype_size(t.dtype);
  if (esize == 0)
    fail(gptoss_status_unsupported_argument, "{}: tensor \"{}\" has unknown dtype \"{}\"", path,
         name, t.dtype);
  if (sh->size() > 8) fail(gptoss_status_io, "{}: tensor \"{}\" has {} dimensions", path, name, sh->size());
  // The product saturates instead of wrapping, so a huge shape cannot pass the size check.
  uint64_t bytes = esize;
  for (const auto& d : *sh) {
    uint64_t n = json_uint(d, path, fmt::format("a dimension of \"{}\"", name));
    if (n > uint64_t{INT64_MAX}) fail(gptoss_status_io, "{}: tensor \"{}\" has dimension {}", path, name, n);
    t.shape.push_back(static_cast<int64_t>(n));
    if (__builtin_mul_overflow(bytes, n, &bytes)) bytes = UINT64_MAX;
  }
  uint64_t begin = json_uint((*off)[0], path, fmt::format("data_offsets of \"{}\"", name));
  uint64_t end = json_uint((*off)[1], path, fmt::format("data_offsets of \"{}\"", name));
  if (begin > end || end > data_size)
    fail(gptoss_status_io, "{}: tensor \"{}\" data_offsets [{}, {}] outside the {} data bytes",
         path, name, begin, end, data_size);
  if (end - begin != bytes)
    fail(gptoss_status_io, "{}: tensor \"{}\" has {} bytes but dtype {} x shape needs {}", path,
         name, end - begin, t.dtype, bytes > data_size ? std::string("more than the file")
                                                        : std::to_string(bytes));
  t.data = data + begin;
  t.size = end - begin;
  return t;
}

}  // namespace

size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2},
      {"I16", 2},  {"F16", 2}, {"BF16", 2}, {"U32", 4},    {"I32", 4},     {"F32", 4},
      {"U64", 8},  {"I64", 8}, {"F64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

File::File(const std::string& path, bool use_mmap)
    : file_(std::make_unique<MappedFile>(path, use_mmap)) {
  const uint64_t size = file_->size();
  if (size < 8) fail(gptoss_status_io, "{}: {} bytes is too short for a safetensors file", path, size);
  const uint64_t header_len = read_le64(file_->data());
  if (header_len > size - 8 || header_len > kMaxHeaderBytes)
    fail(gptoss_status_io, "{}: header length {} exceeds the file ({} bytes) or the 100 MB limit",
         path, header_len, size);
  const char* hp = reinterpret_cast<const char*>(file_->data() + 8);
  const auto header = parse_json<nlohmann::json>(std::string_view(hp, header_len), gptoss_status_io,
                                                 path + ": the header");
  if (!header.is_object()) fail(gptoss_status_io, "{}: the header is not a JSON object", path);

  const uint8_t* data = file_->data() + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    tensors_.emplace(name, parse_entry(path, name, entry, data, data_size)).first->second.file =
        file_.get();
  }
}

Checkpoint::Checkpoint(const std::string& directory, bool use_mmap) {
  const fs::path dir(directory);
  const fs::path index_path = dir / "model.safetensors.index.json";
  std::error_code ec;
  std::map<std::string, std::string> weight_map;  // tensor -> shard, from the index
  if (fs::exists(index_path, ec)) {
    auto index = parse_json_file<nlohmann::json>(index_path.string(), gptoss_status_io);
    if (!index.is_object() || !index.contains("weight_map") ||
        !index["weight_map"].is_object())
      fail(gptoss_status_io, "{}: not a JSON object with a \"weight_map\" object",
           index_path.string());
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string())
        fail(gptoss_status_io, "{}: the shard of \"{}\" is not a string", index_path.string(), tensor);
      std::string s = shard.get<std::string>();
      // Shards live in the directory itself: refuse anything that could point elsewhere.
      if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..")
        fail(gptoss_status_io, "{}: shard name \"{}\" is not a file name in the directory",
             index_path.string(), s);
      weight_map[tensor] = s;
      shards.insert(s);
    }
    file_names_.assign(shards.begin(), shards.end());
  } else if (fs::exists(dir / "model.safetensors", ec)) {
    file_names_.push_back("model.safetensors");
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".safetensors") file_names_.push_back(e.path().filename().string());
    std::sort(file_names_.begin(), file_names_.end());
  }
  if (file_names_.empty())
    fail(gptoss_status_io, "{}: no model.safetensors, index or *.safetensors file", directory);

  for (const auto& name : file_names_) {
    files_.push_back(std::make_unique<File>((dir / name).string(), use_mmap));
    for (const auto& [tensor, info] : files_.back()->tensors()) {
      if (!index_.emplace(tensor, &info).second)
        fail(gptoss_status_io, "{}: tensor \"{}\" appears in more than one shard", directory, tensor);
    }
  }
  for (const auto& [tensor, shard] : weight_map) {
    const TensorInfo* t = find(tensor);
    if (!t || fs::path(t->file->path()).filename() != shard)
      fail(gptoss_status_io, "{}: the index puts \"{}\" in {}, which does not hold it", directory,
           tensor, shard);
  }
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

}  // namespace gptoss::safetensors
