#include "libgptoss/model/formats/gguf.hpp"

#include <bit>
#include <cstring>
#include <string_view>

#include "libgptoss/common/error.hpp"

namespace gptoss::gguf {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is read as little-endian");

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxArrayDepth = 4;
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr uint64_t kMaxAlignment = 1u << 20;

// Bounds-checked cursor over the file. Nothing is read or skipped without need().
class Reader {
 public:
  Reader(const std::string& path, std::span<const uint8_t> bytes) : path_(path), bytes_(bytes) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }
  const uint8_t* here() const { return bytes_.data() + pos_; }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining())
      fail(gptoss_status_io, "{}: {} at byte {} needs {} bytes but the file ends at {}", path_,
           what, pos_, n, bytes_.size());
  }
  void skip(uint64_t n, std::string_view what) {
    need(n, what);
    pos_ += n;
  }
  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, here(), sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view read_string(std::string_view what) {
    const uint64_t n = read<uint64_t>(what);
    need(n, what);
    std::string_view s(reinterpret_cast<const char*>(here()), n);
    pos_ += n;
    return s;
  }
  // Fails unless `count` items of at least `min_size` bytes each can still fit.
  void need_items(uint64_t count, uint64_t min_size, std::string_view what) const {
    if (count > remaining() / min_size)
      fail(gptoss_status_io, "{}: {} count {} at byte {} cannot fit in the rest of the file",
           path_, what, count, pos_);
  }
  const std::string& path() const { return path_; }

 private:
  const std::string& path_;
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

// Encoded size of a fixed-size value type; 0 for string/array; -1 if unknown.
int scalar_size(uint32_t t) {
  switch (static_cast<ValueType>(t)) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    case ValueType::string: case ValueType::array: return 0;
  }
  return -1;
}

Value read_scalar(Reader& r, ValueType t, std::string_view what) {
  switch (t) {
    case ValueType::u8: return {t, uint64_t{r.read<uint8_t>(what)}};
    case ValueType::u16: return {t, uint64_t{r.read<uint16_t>(what)}};
    case ValueType::u32: return {t, uint64_t{r.read<uint32_t>(what)}};
    case ValueType::u64: return {t, r.read<uint64_t>(what)};
    case ValueType::i8: return {t, int64_t{r.read<int8_t>(what)}};
    case ValueType::i16: return {t, int64_t{r.read<int16_t>(what)}};
    case ValueType::i32: return {t, int64_t{r.read<int32_t>(what)}};
    case ValueType::i64: return {t, r.read<int64_t>(what)};
    case ValueType::f32: return {t, double{r.read<float>(what)}};
    case ValueType::f64: return {t, r.read<double>(what)};
    case ValueType::boolean: return {t, r.read<uint8_t>(what) != 0};
    case ValueType::string: return {t, std::string(r.read_string(what))};
    case ValueType::array: break;
  }
  fail(gptoss_status_internal, "read_scalar on an array");
}

// Walks the elements of an array (validating every length) and returns where they lie.
Array read_array(Reader& r, const std::string& key, int depth) {
  if (depth > kMaxArrayDepth)
    fail(gptoss_status_io, "{}: metadata \"{}\" nests arrays deeper than {}", r.path(), key,
         kMaxArrayDepth);
  const uint32_t et = r.read<uint32_t>("array element type");
  const int esize = scalar_size(et);
  if (esize < 0)
    fail(gptoss_status_io, "{}: metadata \"{}\" has unknown array element type {}", r.path(), key, et);
  const uint64_t count = r.read<uint64_t>("array length");
  const size_t start = r.pos();
  const uint8_t* begin = r.here();
  const auto type = static_cast<ValueType>(et);
  if (esize > 0) {
    r.need_items(count, static_cast<uint64_t>(esize), "array");
    r.skip(count * static_cast<uint64_t>(esize), "array");
  } else if (type == ValueType::string) {
    r.need_items(count, 8, "string array");
    for (uint64_t i = 0; i < count; ++i) r.read_string("array string");
  } else {
    r.need_items(count, 12, "nested array");
    for (uint64_t i = 0; i < count; ++i) read_array(r, key, depth + 1);
  }
  return Array{type, count, {begin, r.pos() - start}};
}

struct TypeTraits {
  uint32_t block;  // elements per block
  uint32_t bytes;  // bytes per block
};

std::optional<TypeTraits> traits(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::f32: return TypeTraits{1, 4};
    case GgmlType::f16: return TypeTraits{1, 2};
    case GgmlType::bf16: return TypeTraits{1, 2};
    case GgmlType::q8_0: return TypeTraits{32, 34};
    case GgmlType::mxfp4: return TypeTraits{32, 17};
  }
  return std::nullopt;
}

}  // namespace

const char* ggml_type_name(uint32_t type) {
  static const char* const kNames[] = {
      "F32",     "F16",     "Q4_0",    "Q4_1",    "Q4_2",    "Q4_3",    "Q5_0",    "Q5_1",
      "Q8_0",    "Q8_1",    "Q2_K",    "Q3_K",    "Q4_K",    "Q5_K",    "Q6_K",    "Q8_K",
      "IQ2_XXS", "IQ2_XS",  "IQ3_XXS", "IQ1_S",   "IQ4_NL",  "IQ3_S",   "IQ2_S",   "IQ4_XS",
      "I8",      "I16",     "I32",     "I64",     "F64",     "IQ1_M",   "BF16",    "Q4_0_4_4",
      "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0",   "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8",
      "MXFP4"};
  return type < std::size(kNames) ? kNames[type] : "unknown";
}

File::File(const std::string& path, bool use_mmap)
    : file_(std::make_unique<MappedFile>(path, use_mmap)) {
  Reader r(file_->path(), file_->bytes());
  if (file_->size() < 4 || r.read<uint32_t>("magic") != kMagic)
    fail(gptoss_status_io, "{}: not a GGUF file (bad magic)", path);
  version_ = r.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3)
    fail(gptoss_status_unsupported_argument, "{}: GGUF version {} is not supported (only 2 and 3)",
         path, version_);
  const uint64_t n_tensors = r.read<uint64_t>("tensor count");
  const uint64_t n_kv = r.read<uint64_t>("metadata count");
  r.need_items(n_kv, 13, "metadata");         // key length + type + 1-byte value at least
  r.need_items(n_tensors, 32, "tensor info");  // name length + 1 dim + type + offset at least

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key(r.read_string("metadata key"));
    const uint32_t t = r.read<uint32_t>("metadata value type");
    if (scalar_size(t) < 0)
      fail(gptoss_status_io, "{}: metadata \"{}\" has unknown value type {}", path, key, t);
    Value v = static_cast<ValueType>(t) == ValueType::array
                  ? Value{ValueType::array, read_array(r, key, 1)}
                  : read_scalar(r, static_cast<ValueType>(t), key);
    if (!metadata_.emplace(key, std::move(v)).second)
      fail(gptoss_status_io, "{}: metadata key \"{}\" appears twice", path, key);
  }
  if (auto a = get_uint("general.alignment")) {
    if (*a == 0 || !std::has_single_bit(*a) || *a > kMaxAlignment)
      fail(gptoss_status_io, "{}: general.alignment {} is not a power of two <= {}", path, *a,
           kMaxAlignment);
    alignment_ = *a;
  }

  std::vector<TensorInfo> infos;
  infos.reserve(n_tensors);  // bounded by the file size above
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t{};
    t.name = std::string(r.read_string("tensor name"));
    const uint32_t n_dims = r.read<uint32_t>("tensor dimension count");
    if (n_dims < 1 || n_dims > kMaxDims)
      fail(gptoss_status_io, "{}: tensor \"{}\" has {} dimensions", path, t.name, n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = r.read<uint64_t>("tensor dimension");
      if (n == 0 || n > uint64_t{INT64_MAX})
        fail(gptoss_status_io, "{}: tensor \"{}\" has dimension {}", path, t.name, n);
      t.ne.push_back(static_cast<int64_t>(n));
    }
    const uint32_t type = r.read<uint32_t>("tensor type");
    if (!traits(type))
      fail(type < 40 ? gptoss_status_unsupported_argument : gptoss_status_io,
           "{}: tensor \"{}\" has ggml type {} ({}), which is not supported (F32, F16, BF16, "
           "Q8_0, MXFP4)",
           path, t.name, type, ggml_type_name(type));
    t.type = static_cast<GgmlType>(type);
    t.offset = r.read<uint64_t>("tensor offset");
    infos.push_back(std::move(t));
  }

  const uint64_t data_start = (r.pos() + alignment_ - 1) / alignment_ * alignment_;
  data_offset_ = data_start;
  const uint64_t data_size = data_start <= file_->size() ? file_->size() - data_start : 0;
  for (auto& t : infos) {
    const TypeTraits tt = *traits(static_cast<uint32_t>(t.type));
    if (t.ne[0] % tt.block != 0)
      fail(gptoss_status_io, "{}: tensor \"{}\" has {} columns, not a multiple of the {} block {}",
           path, t.name, t.ne[0], ggml_type_name(static_cast<uint32_t>(t.type)), tt.block);
    uint64_t elements = 1;
    bool overflow = false;
    for (int64_t n : t.ne) overflow |= __builtin_mul_overflow(elements, uint64_t(n), &elements);
    uint64_t bytes = 0;
    overflow |= __builtin_mul_overflow(elements / tt.block, uint64_t{tt.bytes}, &bytes);
    if (overflow || t.offset > data_size || bytes > data_size - t.offset)
      fail(gptoss_status_io, "{}: tensor \"{}\" (offset {}, {} bytes) lies beyond the end of the "
           "file's {} data bytes", path, t.name, t.offset,
           overflow ? std::string("too many") : std::to_string(bytes), data_size);
    if (t.offset % alignment_ != 0)
      fail(gptoss_status_io, "{}: tensor \"{}\" offset {} is not aligned to {}", path, t.name,
           t.offset, alignment_);
    t.data = file_->data() + data_start + t.offset;
    t.size = bytes;
    std::string name = t.name;
    if (!tensors_.emplace(name, std::move(t)).second)
      fail(gptoss_status_io, "{}: tensor \"{}\" appears twice", path, name);
  }
}

const TensorInfo* File::find_tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> File::get_uint(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) return std::nullopt;
  if (auto* u = std::get_if<uint64_t>(&it->second.v)) return *u;
  if (auto* i = std::get_if<int64_t>(&it->second.v); i && *i >= 0) return uint64_t(*i);
  fail(gptoss_status_io, "{}: metadata \"{}\" is not a non-negative integer", path(), key);
}

std::optional<double> File::get_float(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) return std::nullopt;
  if (auto* f = std::get_if<double>(&it->second.v)) return *f;
  if (auto* u = std::get_if<uint64_t>(&it->second.v)) return double(*u);
  if (auto* i = std::get_if<int64_t>(&it->second.v)) return double(*i);
  fail(gptoss_status_io, "{}: metadata \"{}\" is not a number", path(), key);
}

std::optional<std::string> File::get_string(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) return std::nullopt;
  if (auto* s = std::get_if<std::string>(&it->second.v)) return *s;
  fail(gptoss_status_io, "{}: metadata \"{}\" is not a string", path(), key);
}

std::optional<std::vector<std::string>> File::get_string_array(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) return std::nullopt;
  auto* a = std::get_if<Array>(&it->second.v);
  if (!a || a->element_type != ValueType::string)
    fail(gptoss_status_io, "{}: metadata \"{}\" is not an array of strings", path(), key);
  Reader r(path(), a->bytes);  // already validated when the file was opened
  std::vector<std::string> out;
  out.reserve(a->count);
  for (uint64_t i = 0; i < a->count; ++i) out.emplace_back(r.read_string(key));
  return out;
}

std::optional<std::vector<int64_t>> File::get_int_array(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) return std::nullopt;
  auto* a = std::get_if<Array>(&it->second.v);
  const int esize = a ? scalar_size(static_cast<uint32_t>(a->element_type)) : 0;
  if (!a || esize <= 0 || a->element_type == ValueType::f32 || a->element_type == ValueType::f64 ||
      a->element_type == ValueType::boolean)
    fail(gptoss_status_io, "{}: metadata \"{}\" is not an array of integers", path(), key);
  Reader r(path(), a->bytes);
  std::vector<int64_t> out;
  out.reserve(a->count);
  for (uint64_t i = 0; i < a->count; ++i) {
    Value v = read_scalar(r, a->element_type, key);
    if (auto* u = std::get_if<uint64_t>(&v.v)) {
      if (*u > uint64_t{INT64_MAX})
        fail(gptoss_status_io, "{}: metadata \"{}\" element {} is too large", path(), key, i);
      out.push_back(int64_t(*u));
    } else {
      out.push_back(std::get<int64_t>(v.v));
    }
  }
  return out;
}

}  // namespace gptoss::gguf
