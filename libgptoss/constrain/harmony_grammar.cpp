#include "libgptoss/constrain/harmony_grammar.hpp"

#include <algorithm>

#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/grammar_builder.hpp"
#include "libgptoss/constrain/json_schema.hpp"

namespace gptoss::constrain {
namespace {

Regex words(const std::vector<std::string>& list) {
  std::vector<Regex> parts;
  for (const auto& w : list) parts.push_back(re_literal(w));
  return re_alt(std::move(parts));
}

std::vector<std::string> without(std::vector<std::string> list, const std::string& word) {
  list.erase(std::remove(list.begin(), list.end(), word), list.end());
  return list;
}

bool contains(const std::vector<std::string>& list, const std::string& word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

}  // namespace

HarmonyGrammar::HarmonyGrammar(std::shared_ptr<const Vocabulary> vocab, const HarmonySpec& spec,
                               const std::string& context)
    : vocab_(std::move(vocab)), start_in_header_(spec.start_in_header) {
  start_ = vocab_->require_special("<|start|>");
  end_ = vocab_->require_special("<|end|>");
  message_ = vocab_->require_special("<|message|>");
  call_ = vocab_->require_special("<|call|>");
  return_ = vocab_->require_special("<|return|>");
  channel_ = vocab_->require_special("<|channel|>");
  constrain_ = vocab_->require_special("<|constrain|>");

  // A call ends with <|call|>, which ends the turn, or with <|end|> and more messages: further
  // calls in the same turn (parallel calls), which parallel_tool_calls: false rules out.
  const std::vector<uint32_t> call_ends =
      spec.parallel_tool_calls ? std::vector<uint32_t>{end_, call_} : std::vector<uint32_t>{call_};
  // Every tool's arguments are compiled, so a bad schema is reported whatever tool_choice says.
  const harmony::Json no_arguments = {{"type", "object"}, {"properties", harmony::Json::object()},
                                      {"additionalProperties", false}};
  for (const auto& [key, ns] : spec.tools) {
    if (ns.tools.empty()) {
      if (!contains(text_recipients_, ns.name)) text_recipients_.push_back(ns.name);
      continue;
    }
    for (size_t i = 0; i < ns.tools.size(); ++i) {
      const std::string recipient = ns.name + "." + ns.tools[i].name;
      const harmony::Json& schema = ns.tools[i].parameters ? *ns.tools[i].parameters : no_arguments;
      tool_arguments_[recipient] =
          build_content(&schema, call_ends,
                        context + ".tools." + key + ".tools[" + std::to_string(i) + "].parameters");
      if (!contains(json_recipients_, recipient)) json_recipients_.push_back(recipient);
    }
  }
  if (spec.tool_choice == ToolChoice::none) {
    json_recipients_.clear();
    text_recipients_.clear();
  } else if (spec.tool_choice == ToolChoice::named) {
    json_recipients_ = {spec.named_recipient};
    text_recipients_.clear();
  }
  plain_text_ = build_content(nullptr, {end_}, context);
  text_tool_ = build_content(nullptr, call_ends, context);
  // The answer ends the turn: one final message, closed by <|return|> (a second one after an
  // <|end|> would make two answers, two JSON documents).
  final_ = spec.final_schema ? build_content(&*spec.final_schema, {return_}, context + ".response_format.schema")
                             : build_content(nullptr, {return_}, context);
  for (bool with_role : {false, true})
    for (bool spent : {false, true}) headers_[(with_role ? 2 : 0) + (spent ? 1 : 0)] = build_header(spec, with_role, spent);
}

std::shared_ptr<const Grammar> HarmonyGrammar::build_content(const harmony::Json* schema, std::vector<uint32_t> ends,
                                                             const std::string& context) const {
  GrammarBuilder b(vocab_);
  const Symbol body = schema ? b.rule_symbol(add_json_schema(b, *schema, context)) : b.shared_lexeme(re_any_bytes());
  const uint32_t root = b.add_rule(context);
  for (uint32_t e : ends) b.add_alternative(root, {body, b.special(e)});
  return b.build(root);
}

// Header forms (docs/constrained-decoding.md): "<|channel|>C<|message|>" for a message without
// recipient; " to=R<|channel|>C" or "<|channel|>C to=R" then a content type for a call.
std::shared_ptr<const Grammar> HarmonyGrammar::build_header(const HarmonySpec& spec, bool with_role,
                                                            bool budget_spent) const {
  const bool needs_call = spec.tool_choice == ToolChoice::required || spec.tool_choice == ToolChoice::named;
  std::vector<std::string> plain = needs_call ? without(spec.channels, "final") : spec.channels;
  if (budget_spent) {
    if (needs_call) plain.clear();
    else if (contains(spec.channels, "final")) plain = {"final"};
    else plain = without(plain, "analysis");
  }
  // Once the budget is spent the answer comes next: the final message, or the required call.
  const std::vector<std::string> call_channels =
      budget_spent && !needs_call ? std::vector<std::string>{} : without(spec.channels, "final");
  if (budget_spent && plain.empty() && (call_channels.empty() || (json_recipients_.empty() && text_recipients_.empty())))
    return build_header(spec, with_role, false);  // nothing else to open: the budget cannot apply

  GrammarBuilder b(vocab_);
  const Symbol channel = b.special(channel_), message = b.special(message_), constrain = b.special(constrain_);
  auto lex = [&](Regex r) { return b.lexeme(std::move(r)); };
  const uint32_t root = b.add_rule("message header");
  auto add = [&](std::vector<Symbol> symbols) {
    if (with_role) symbols.insert(symbols.begin(), lex(re_literal("assistant")));
    symbols.push_back(message);
    b.add_alternative(root, std::move(symbols));
  };
  if (!plain.empty()) add({channel, lex(words(plain))});
  if (!call_channels.empty())
    for (bool json : {true, false}) {
      const auto& recipients = json ? json_recipients_ : text_recipients_;
      if (recipients.empty()) continue;
      std::vector<std::vector<Symbol>> types = {{}};
      if (json) {
        types.push_back({lex(re_literal(" ")), constrain, lex(re_literal("json"))});
        types.push_back({constrain, lex(re_literal("json"))});
        types.push_back({lex(re_literal(" json"))});
      } else {
        types.push_back({lex(re_literal(" code"))});
      }
      const Regex to = re_concat({re_literal(" to="), words(recipients)});
      for (const auto& type : types) {
        std::vector<Symbol> before = {lex(to), channel, lex(words(call_channels))};
        std::vector<Symbol> after = {channel, lex(re_concat({words(call_channels), to}))};
        before.insert(before.end(), type.begin(), type.end());
        after.insert(after.end(), type.begin(), type.end());
        add(std::move(before));
        add(std::move(after));
      }
    }
  return b.build(root);
}

const std::shared_ptr<const Grammar>& HarmonyGrammar::content(const harmony::ParsedHeader& h) const {
  if (h.recipient) {
    if (auto it = tool_arguments_.find(*h.recipient); it != tool_arguments_.end()) return it->second;
    if (contains(text_recipients_, *h.recipient)) return text_tool_;
    fail(gptoss_status_internal, "the header grammar allowed an unknown recipient \"{}\"", *h.recipient);
  }
  return h.channel == "final" ? final_ : plain_text_;
}

}  // namespace gptoss::constrain
