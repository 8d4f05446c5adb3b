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
#include "libgptoss/model/dtypes.hpp"
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
  source->for_each_tensor(source->config().num_layers, [](const gptoss_tensor_desc& d) {
    try {
      dequantize(d);
    } catch (const Error& e) {
      fuzz::violated(std::string("accepted tensor is inconsistent: ") + e.what());
    }
  });

  gptoss_model_options options;
  gptoss_model_options_init(&options);
  options.backend = "cpu";
  options.use_mmap = 0;  // the read path here, the mapped one above
  gptoss_model_t sentinel = reinterpret_cast<gptoss_model_t>(uintptr_t{0x5eed});
  gptoss_model_t model = sentinel;
  const gptoss_status st = gptoss_model_create_with_options(file.path().c_str(), &options, &model);
  GPTOSS_FUZZ_CHECK(st != gptoss_status_success, "a fuzz-sized GGUF loaded as a whole model");
  fuzz::check_status(st, {gptoss_status_io, gptoss_status_invalid_argument,
                          gptoss_status_unsupported_argument},
                     "gptoss_model_create_with_options");
  GPTOSS_FUZZ_CHECK(model == sentinel, "a failed create wrote *model_out");
  return 0;
}
