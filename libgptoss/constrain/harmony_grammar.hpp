#pragma once
// The grammars of an assistant turn in Harmony (gptoss_grammar_create_harmony): one grammar per
// kind of message header (the first one, whose "<|start|>assistant" is in the prompt, or a
// later one; before or after the reasoning budget is spent) and one per kind of message
// content (free text, the final format, each tool's JSON arguments), each ending with the
// special tokens allowed to end it. harmony_constraint.hpp walks through them.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libgptoss/constrain/grammar.hpp"
#include "libgptoss/harmony/header_parser.hpp"
#include "libgptoss/harmony/message.hpp"

namespace gptoss::constrain {

enum class ToolChoice { automatic, none, required, named };

struct HarmonySpec {
  std::vector<std::string> channels = {"analysis", "commentary", "final"};
  harmony::ToolNamespaces tools;
  ToolChoice tool_choice = ToolChoice::automatic;
  std::string named_recipient;              // "functions.NAME" for ToolChoice::named
  std::optional<harmony::Json> final_schema;  // the final channel's JSON Schema; nullopt: text
  bool start_in_header = true;
  bool parallel_tool_calls = true;  // false: a call ends with <|call|> only, so the turn has one

  // The spec_json of gptoss_grammar_create_harmony; errors name `path` ("spec_json.tools...").
  static HarmonySpec from_json(const harmony::Json& j, const std::string& path);
};

class HarmonyGrammar {
 public:
  HarmonyGrammar(std::shared_ptr<const Vocabulary> vocab, const HarmonySpec& spec, const std::string& context);

  const Vocabulary& vocab() const { return *vocab_; }
  bool start_in_header() const { return start_in_header_; }
  // `with_role`: the header follows <|start|> and begins with "assistant". `budget_spent`: no
  // analysis message any more; the answer (final, or a call if one is required) comes next.
  const std::shared_ptr<const Grammar>& header(bool with_role, bool budget_spent) const {
    return headers_[(with_role ? 2 : 0) + (budget_spent ? 1 : 0)];
  }
  // The content grammar of a message whose header parsed as `h` (one the header grammars allow).
  const std::shared_ptr<const Grammar>& content(const harmony::ParsedHeader& h) const;

  // Cheapest completions of the turn, in Grammar::min_cost's measure (bytes plus special
  // tokens), for closing a turn within a token budget.
  // From between two messages (before <|start|>); kNoCompletion when no answer can be opened.
  uint64_t between_cost(bool budget_spent) const { return between_cost_[budget_spent ? 1 : 0]; }
  // From a header whose bytes and special tokens so far are `units` (as HeaderForm spells them).
  uint64_t header_cost(bool with_role, bool budget_spent, const std::vector<uint32_t>& units) const;
  // The most header_cost can be anywhere in such a header: a budget at least this large
  // needs no pricing of header tokens.
  uint64_t header_most_cost(bool with_role, bool budget_spent) const {
    return header_most_cost_[(with_role ? 2 : 0) + (budget_spent ? 1 : 0)];
  }
  // A header unit: a byte, or kSpecialUnit + the id of a special token.
  static constexpr uint32_t kSpecialUnit = 256;

  uint32_t start_id() const { return start_; }
  uint32_t end_id() const { return end_; }
  uint32_t message_id() const { return message_; }
  uint32_t call_id() const { return call_; }
  uint32_t return_id() const { return return_; }

 private:
  // One way to write a header: parts in a row, each a special token or one of some words.
  struct HeaderPart {
    uint32_t special = 0;  // when `words` is empty
    std::vector<std::string> words;
  };
  using HeaderAlternative = std::vector<HeaderPart>;
  // Every header a header grammar admits, spelled out, with the cost of the turn after it.
  struct HeaderForm {
    std::vector<uint32_t> units;  // up to and including <|message|>
    uint64_t then;
  };

  std::vector<HeaderAlternative> header_alternatives(const HarmonySpec& spec, bool with_role, bool budget_spent) const;
  std::shared_ptr<const Grammar> build_header(const std::vector<HeaderAlternative>& alternatives) const;
  void add_header_forms(const std::vector<HeaderAlternative>& alternatives, bool with_role, bool budget_spent);
  std::shared_ptr<const Grammar> build_content(const harmony::Json* schema, std::vector<uint32_t> ends,
                                               const std::string& context) const;

  std::shared_ptr<const Vocabulary> vocab_;
  bool start_in_header_;
  uint32_t start_, end_, message_, call_, return_, channel_, constrain_;
  std::vector<std::string> json_recipients_, text_recipients_;
  std::shared_ptr<const Grammar> headers_[4];
  std::vector<HeaderForm> header_forms_[4];
  uint64_t between_cost_[2] = {Grammar::kNoCompletion, Grammar::kNoCompletion};
  uint64_t header_most_cost_[4] = {};
  std::shared_ptr<const Grammar> plain_text_, final_, text_tool_;
  std::map<std::string, std::shared_ptr<const Grammar>> tool_arguments_;
};

}  // namespace gptoss::constrain
