#pragma once
// The real gpt-oss tokenizer (tokenizer.json) through the public C++ wrapper, for the tests of
// code built on that wrapper (the server's).
#include <gptoss.hpp>

#include "support/paths.hpp"

namespace gptoss::test {

inline gptoss::tokenizer real_tokenizer() {
  gptoss_tokenizer_t t = nullptr;
  gptoss::check(gptoss_tokenizer_create_from_file(tokenizer_json().c_str(), &t), "tokenizer");
  return gptoss::tokenizer(t);
}

}  // namespace gptoss::test
