#include "libgptoss/model/weights.hpp"

#include <filesystem>
#include <fstream>

#include "libgptoss/common/error.hpp"
#include "libgptoss/model/loaders.hpp"

namespace gptoss {

std::shared_ptr<const Tokenizer> load_tokenizer_json(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail(gptoss_status_io,
         "tokenizer {} not found (put tokenizer.json beside config.json or pass a tokenizer path)",
         path);
  return Tokenizer::from_json_file(path);
}

std::unique_ptr<WeightSource> open_checkpoint(const std::string& path, const OpenOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) fail(gptoss_status_invalid_argument, "no model path given");
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) fail(gptoss_status_io, "model path {} does not exist", path);
  if (fs::is_directory(st)) return open_hf_checkpoint(path, options);

  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(magic, 4))
    fail(gptoss_status_io, "{} is neither a checkpoint directory nor a GGUF file", path);
  if (std::string_view(magic, 4) == "GGUF") return open_gguf_checkpoint(path, options);
  if (fs::path(path).filename() == "config.json")  // a common slip: the file, not its directory
    return open_hf_checkpoint(fs::absolute(path).parent_path().string(), options);
  fail(gptoss_status_io, "{} is neither a checkpoint directory nor a GGUF file (bad magic)", path);
}

}  // namespace gptoss
