#include "tools/make_model/vocab.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "libgptoss/common/error.hpp"

namespace gptoss::make_model {

GgufVocab read_vocab(const std::string& path, uint32_t vocab_size) {
  std::ifstream in(path);
  if (!in) fail(gptoss_status_io, "cannot open {}", path);
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("model") || !j["model"].contains("vocab") ||
      !j["model"]["vocab"].is_object())
    fail(gptoss_status_io, "{}: not a tokenizer.json with model.vocab", path);

  GgufVocab v;
  v.tokens.resize(vocab_size);
  v.token_types.assign(vocab_size, 0);
  auto set = [&](uint64_t id, const std::string& text, int32_t type) {
    if (id >= vocab_size)
      fail(gptoss_status_invalid_argument, "{}: token id {} is beyond the vocabulary of {}", path,
           id, vocab_size);
    v.tokens[id] = text;
    v.token_types[id] = type;
  };
  for (const auto& [text, id] : j["model"]["vocab"].items()) set(id.get<uint64_t>(), text, 1);
  if (j.contains("added_tokens"))
    for (const auto& t : j["added_tokens"])
      set(t["id"].get<uint64_t>(), t["content"].get<std::string>(), t.value("special", false) ? 3 : 4);
  for (uint32_t id = 0; id < vocab_size; ++id)
    if (v.token_types[id] == 0) set(id, "[PAD" + std::to_string(id) + "]", 5);

  if (const auto& merges = j["model"].value("merges", nlohmann::json::array()); merges.is_array()) {
    v.merges.reserve(merges.size());
    for (const auto& m : merges) {  // "a b" (older files) or ["a", "b"]
      if (m.is_string()) v.merges.push_back(m.get<std::string>());
      else if (m.is_array() && m.size() == 2)
        v.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
  }
  return v;
}

}  // namespace gptoss::make_model
