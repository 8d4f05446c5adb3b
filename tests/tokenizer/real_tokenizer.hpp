#pragma once
// The real gpt-oss tokenizer.json, loaded once for all tokenizer tests (it takes a few hundred
// milliseconds).
#include <memory>

#include "libgptoss/tokenizer/tokenizer.hpp"
#include "support/paths.hpp"

namespace gptoss::test {
inline const Tokenizer& real_tokenizer() {
  static const std::shared_ptr<const Tokenizer> tokenizer =
      Tokenizer::from_json_file(tokenizer_json());
  return *tokenizer;
}
}  // namespace gptoss::test
