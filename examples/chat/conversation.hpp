#pragma once
// The chat history as Harmony conversation JSON: system (+ developer) message, then turns.
#include <string>

#include <nlohmann/json.hpp>

#include "cli_options.hpp"

namespace gptoss_cli {

// ordered_json: a --json-schema shown to the model keeps its properties in the order the
// grammar generates them.
class Conversation {
 public:
  explicit Conversation(const Options& options);

  // Back to the system (and developer) message only.
  void reset();
  void add_user(const std::string& text);
  // Assistant messages as the Harmony parser returned them (a JSON array).
  void add_parsed(const std::string& messages_json);
  void pop_last();
  size_t size() const { return messages_.size(); }

  // {"messages": [...]}, what gptoss_harmony_render reads and /save writes.
  std::string to_json() const;
  // Writes/reads {"messages": [...]} (reading also accepts a bare array). Throws UsageError
  // for an unreadable file or a document that is not a conversation.
  void save(const std::string& path) const;
  void load(const std::string& path);

 private:
  nlohmann::ordered_json initial_messages() const;
  std::string model_identity_;
  std::string reasoning_effort_;
  std::string developer_;
  std::string json_schema_;  // shown to the model as the response format
  nlohmann::ordered_json messages_;
};

}  // namespace gptoss_cli
