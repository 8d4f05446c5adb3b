// GGUF files (header, metadata of every value type, tensor infos, tokenizer metadata, the
// MXFP4 expert conversion). Input: the bytes of one .gguf file.
//
// Properties: the checkpoint, opened without its tokenizer, either fails with io /
// invalid_argument / unsupported_argument (never internal), or hands out every tensor as the
// backend would receive it, experts converted to the canonical layout, each exactly as large as
// its dtype and shape say and its bytes readable (dequantize checks the sizes, reads every
// byte). An accepted checkpoint then goes through gptoss_model_create_with_options, which
// reads the tokenizer metadata and fails the same way (a loadable model needs 201,088
// vocabulary rows, far beyond a fuzz input), leaving *model_out untouched.
#include <string>

#include "libgptoss/common/error.hpp"
#include "libgptoss/model/weights.hpp"
#include "support/fuzz_support.hpp"

using namespace gptoss;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file;
  file.write(data, size);

  std::unique_ptr<WeightSource> source;
  try {
    OpenOptions o;
    o.load_tokenizer = false;
    source = open_checkpoint(file.path(), o);
  } catch (const Error& e) {
    GPTOSS_FUZZ_CHECK(e.status() == gptoss_status_io || e.status() == gptoss_status_invalid_argument ||
                          e.status() == gptoss_status_unsupported_argument,
                      e.what());
    return 0;
  }
  fuzz::check_tensors_as_uploaded(*source);
  fuzz::check_model_create_fails(file.path(), /*use_mmap=*/false);  // the read path too
  return 0;
}
