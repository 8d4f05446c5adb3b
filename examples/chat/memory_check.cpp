// Numbers for the refusal come from the files and the library's own KV sizing
// (gptoss_model_get_kv_bytes_per_token), so they match what a load would allocate.
#include "memory_check.hpp"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace gptoss_cli {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

std::string read_first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A decimal number, or kNoLimit for "max" (cgroup v2), an absurd v1 limit or anything else.
uint64_t parse_limit(const std::string& text) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || v >= (uint64_t(1) << 60)) return kNoLimit;
  return v;
}

// The value of `key` in a "key value" file (/proc/meminfo in kB, memory.stat in bytes).
uint64_t read_key(const fs::path& path, const std::string& key, uint64_t scale) {
  std::ifstream in(path);
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) {
    if (name == key || name == key + ":") return value * scale;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

// Headroom left by the memory cgroup: limit - (usage - reclaimable file cache); kNoLimit when
// unlimited or unknown. The process's own cgroup, else the mount's root (a container sees its
// cgroup as the root).
uint64_t cgroup_headroom(uint64_t* limit_out) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v2_path, v1_path;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
    const size_t at = line.find(":memory:");
    if (at != std::string::npos) v1_path = line.substr(at + 8);
  }
  struct Layout {
    fs::path dir;
    const char* limit;
    const char* usage;
    const char* cache_key;
  };
  std::vector<Layout> candidates;
  if (!v1_path.empty()) {
    for (const fs::path& dir :
         {fs::path("/sys/fs/cgroup/memory") / fs::path(v1_path).relative_path(),
          fs::path("/sys/fs/cgroup/memory")})
      candidates.push_back({dir, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_cache"});
  } else {
    for (const fs::path& dir : {fs::path("/sys/fs/cgroup") / fs::path(v2_path).relative_path(),
                                fs::path("/sys/fs/cgroup")})
      candidates.push_back({dir, "memory.max", "memory.current", "file"});
  }
  for (const Layout& c : candidates) {
    std::error_code ec;
    if (!fs::exists(c.dir / c.limit, ec)) continue;
    const uint64_t limit = parse_limit(read_first_line(c.dir / c.limit));
    if (limit == kNoLimit) return kNoLimit;
    const uint64_t usage = parse_limit(read_first_line(c.dir / c.usage));
    const uint64_t cache = read_key(c.dir / "memory.stat", c.cache_key, 1);
    const uint64_t held = usage == kNoLimit ? 0 : (usage > cache ? usage - cache : 0);
    *limit_out = limit;
    return limit > held ? limit - held : 0;
  }
  return kNoLimit;
}

std::string human(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t(1) << 30))
    std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(1 << 30));
  else if (bytes >= (uint64_t(1) << 20))
    std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(1 << 20));
  else std::snprintf(text, sizeof text, "%.1f KiB", double(bytes) / 1024.0);
  return text;
}

}  // namespace

AvailableMemory available_memory() {
  if (const char* forced = std::getenv("GPTOSS_MEMORY_AVAILABLE"); forced && *forced) {
    const std::string text = forced;
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size())
      throw UsageError("GPTOSS_MEMORY_AVAILABLE must be a number of bytes, got '" + text + "'");
    return {v, "GPTOSS_MEMORY_AVAILABLE"};
  }
  AvailableMemory out{read_key("/proc/meminfo", "MemAvailable", 1024), "MemAvailable"};
  uint64_t limit = 0;
  const uint64_t headroom = cgroup_headroom(&limit);
  if (headroom < out.bytes) out = {headroom, "the memory cgroup's limit of " + human(limit)};
  if (out.bytes == 0) out = {kNoLimit, "unknown"};  // no /proc/meminfo: nothing to compare with
  return out;
}

uint64_t weight_file_bytes(const std::string& model_path) {
  std::error_code ec;
  fs::path path(model_path);
  if (fs::is_regular_file(path, ec) && path.extension() != ".json") return fs::file_size(path, ec);
  if (fs::is_regular_file(path, ec)) path = path.parent_path();  // .../config.json
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.path().extension() == ".safetensors" && entry.is_regular_file(ec))
      total += entry.file_size(ec);
  }
  return total;
}

void check_weights_fit(const std::string& model_path, const AvailableMemory& available) {
  const uint64_t weights = weight_file_bytes(model_path);
  if (weights <= available.bytes) return;
  throw std::runtime_error("not enough memory for " + model_path + ": its weights alone take " +
                           human(weights) + ", and " + human(available.bytes) + " is available (" +
                           available.source +
                           "); nothing was loaded (--no-memory-check loads it anyway)");
}

void check_model_fits(gptoss_model_t model, const std::string& model_path, const Options& options,
                      const AvailableMemory& available) {
  const gptoss_kv_dtype dtype = options.kv_bf16 ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32;
  size_t per_token = 0, max_context = 0;
  gptoss::check(gptoss_model_get_kv_bytes_per_token(model, dtype, &per_token),
                "gptoss_model_get_kv_bytes_per_token");
  gptoss::check(gptoss_model_get_max_context_length(model, &max_context),
                "gptoss_model_get_max_context_length");
  const uint64_t context =
      options.context_length == 0 ? max_context : std::min(options.context_length, max_context);
  const uint64_t contexts = options.mode == Mode::getp ? options.batch : 1;
  const uint64_t tokens = options.max_kv != 0
                              ? std::min<uint64_t>(options.max_kv, context * contexts)
                              : context * contexts;
  const uint64_t weights = weight_file_bytes(model_path);
  const uint64_t kv = tokens * per_token;
  if (weights + kv <= available.bytes) return;
  std::ostringstream why;
  why << "not enough memory for " << model_path << ": it needs " << human(weights + kv)
      << " (weights " << human(weights) << " + KV cache " << human(kv) << " for " << tokens
      << " tokens in " << (options.kv_bf16 ? "bf16" : "f32") << "), and " << human(available.bytes)
      << " is available (" << available.source << "); a smaller --context"
      << (options.kv_bf16 ? "" : " or --kv bf16")
      << " shrinks the KV cache (--no-memory-check loads it anyway)";
  throw std::runtime_error(why.str());
}

}  // namespace gptoss_cli
