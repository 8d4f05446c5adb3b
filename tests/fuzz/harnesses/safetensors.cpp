// Hugging Face checkpoint directories (safetensors header JSON and offsets, config.json, the
// shard index) through the public gptoss_model_create_with_options, on a directory written per
// input.
//
// Input: the directory's files joined by kFileSeparator, in this order:
//   model.safetensors (or model-00001-of-00002.safetensors when a 4th part is present),
//   config.json, model.safetensors.index.json, model-00002-of-00002.safetensors.
// Parts missing at the end are files missing from the directory. There is no tokenizer.json:
// a loadable model needs 201,088 vocabulary rows (12 MB at the least), far beyond a fuzz input,
// so the public call always fails, at the latest when it looks for the tokenizer.
//
// Properties: the call never crashes and returns io / invalid_argument /
// unsupported_argument with a message, never internal, and leaves *model_out untouched.
// When the checkpoint itself was accepted (the call got as far as looking for tokenizer.json),
// every tensor is handed out as the backend would receive it and must be exactly as large as
// its dtype and shape say, its bytes readable (dequantize checks the sizes, reads every byte).
#include <string>

#include "libgptoss/common/error.hpp"
#include "libgptoss/model/weights.hpp"
#include "support/fuzz_support.hpp"

using namespace gptoss;

namespace {
constexpr std::string_view kFileSeparator = "\n--next-file--\n";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir;
  const auto parts = fuzz::split({reinterpret_cast<const char*>(data), size}, kFileSeparator);
  const bool sharded = parts.size() >= 4;
  const char* names[] = {sharded ? "model-00001-of-00002.safetensors" : "model.safetensors",
                         "config.json", "model.safetensors.index.json",
                         "model-00002-of-00002.safetensors"};
  dir.clear();
  for (size_t i = 0; i < parts.size() && i < 4; ++i) dir.write(names[i], parts[i]);

  fuzz::check_model_create_fails(dir.path(), /*use_mmap=*/true);

  // Only the tokenizer lookup's message starts so (file contents can quote the path, but the
  // messages about them start with a file name).
  const std::string tokenizer_missing = "tokenizer " + dir.path() + "/tokenizer.json not found";
  if (!std::string_view(gptoss_get_last_error_message()).starts_with(tokenizer_missing)) return 0;
  std::unique_ptr<WeightSource> source;
  try {
    OpenOptions o;
    o.use_mmap = false;  // the public call mapped the files; this reads them
    o.load_tokenizer = false;
    source = open_checkpoint(dir.path(), o);
  } catch (const Error& e) {
    fuzz::violated(std::string("accepted, then refused without the tokenizer: ") + e.what());
  }
  fuzz::check_tensors_as_uploaded(*source);
  return 0;
}
