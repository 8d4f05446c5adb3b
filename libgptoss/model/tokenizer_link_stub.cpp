// TEMPORARY link stubs so that the loaders build before the tokenizer (branch `tok`, issue 3)
// is merged. They are weak: the real definitions in libgptoss/tokenizer/ override them.
// Delete this file once libgptoss/tokenizer/*.cpp defines Tokenizer::from_json_file and
// Tokenizer::from_vocab.
#include "libgptoss/common/error.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss {

__attribute__((weak)) std::shared_ptr<const Tokenizer> Tokenizer::from_json_file(
    const std::string& path) {
  fail(gptoss_status_unsupported_argument, "tokenizer not built into this library (loading {})",
       path);
}

__attribute__((weak)) std::shared_ptr<const Tokenizer> Tokenizer::from_vocab(
    const std::vector<std::string>&, const std::vector<int32_t>&) {
  fail(gptoss_status_unsupported_argument, "tokenizer not built into this library");
}

}  // namespace gptoss
