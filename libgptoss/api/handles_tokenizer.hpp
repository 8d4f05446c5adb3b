#pragma once
// The gptoss_tokenizer handle: a reference-counted holder of a shared, immutable Tokenizer.
// The model code creates one for gptoss_model_get_tokenizer from the model's own Tokenizer.
#include <memory>
#include <utility>

#include "libgptoss/api/api_util.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

struct gptoss_tokenizer : gptoss::api::RefCounted {
  explicit gptoss_tokenizer(std::shared_ptr<const gptoss::Tokenizer> t) : tok(std::move(t)) {}
  std::shared_ptr<const gptoss::Tokenizer> tok;
};
