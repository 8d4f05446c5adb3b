#pragma once
// Compiled constraint grammars by spec, shared by every request of the same shape (the same
// tools, tool_choice and response format): compiling a JSON Schema costs more than a step,
// agents send the same tools every turn. Least recently used out past `max_entries`. Any
// thread.
#include <list>
#include <map>
#include <mutex>
#include <string>

#include <gptoss.hpp>
#include "engine/generation.hpp"

namespace gptoss_server {

class GrammarCache {
 public:
  GrammarCache(gptoss_tokenizer_t tokenizer, size_t max_entries) : tokenizer_(tokenizer), max_entries_(max_entries) {}
  // The grammar of a gptoss_grammar_create_harmony spec. Throws gptoss::error (invalid_argument
  // or unsupported_argument: the library's message names what is wrong).
  Grammar harmony(const std::string& spec_json);

 private:
  gptoss_tokenizer_t tokenizer_;
  size_t max_entries_;
  std::mutex mutex_;
  std::list<std::pair<std::string, Grammar>> entries_;  // most recent first
};

}  // namespace gptoss_server
