#pragma once
// The real gpt-oss tokenizer (tokenizer.json) through the public C++ wrapper, for the tests of
// code built on that wrapper (the server's).
#include <gptoss.hpp>

#include "support/paths.hpp"

namespace gptoss::test {

inline gptoss::tokenizer real_tokenizer() { return gptoss::tokenizer::from_file(tokenizer_json()); }

}  // namespace gptoss::test
