#pragma once
#include <memory>

#include "libgptoss/api/api_util.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

struct gptoss_tokenizer : gptoss::api::RefCounted {
  std::shared_ptr<const gptoss::Tokenizer> tok;
};
