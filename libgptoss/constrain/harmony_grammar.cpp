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
    for (bool spent : {false, true}) {
      const auto alternatives = header_alternatives(spec, with_role, spent);
      headers_[(with_role ? 2 : 0) + (spent ? 1 : 0)] = build_header(alternatives);
      add_header_forms(alternatives, with_role, spent);
    }
  for (bool with_role : {false, true})
    for (bool spent : {false, true}) {
      const size_t i = (with_role ? 2 : 0) + (spent ? 1 : 0);
      // header_cost anywhere is the cheapest of the forms that still fit, so at most the
      // dearest whole form.
      for (const HeaderForm& f : header_forms_[i]) {
        const uint64_t then = f.then != Grammar::kNoCompletion
                                  ? f.then
                                  : Grammar::add_costs(plain_text_->min_cost(), between_cost(spent));
        header_most_cost_[i] = std::max(header_most_cost_[i], Grammar::add_costs(f.units.size(), then));
      }
    }
}

// Spells out every header of `alternatives` and prices the turn after each: the answer (the
// final message, a call) ends it with its content; any other message is followed by <|end|>
// and the cheapest way on from between messages, which is an answer.
void HarmonyGrammar::add_header_forms(const std::vector<HeaderAlternative>& alternatives, bool with_role,
                                      bool budget_spent) {
  struct Spelled {
    std::vector<uint32_t> units;
    std::string text;  // as the reference parser reads it, without the closing <|message|>
  };
  std::vector<HeaderForm>& forms = header_forms_[(with_role ? 2 : 0) + (budget_spent ? 1 : 0)];
  std::vector<bool> reasoning;
  for (const HeaderAlternative& alt : alternatives) {
    std::vector<Spelled> spelled(1);
    for (const HeaderPart& part : alt) {
      std::vector<Spelled> next;
      for (const Spelled& s : spelled) {
        if (part.words.empty()) {
          Spelled n = s;
          n.units.push_back(kSpecialUnit + part.special);
          if (part.special != message_) n.text += vocab_->special_name(part.special);
          next.push_back(std::move(n));
          continue;
        }
        for (const std::string& w : part.words) {
          Spelled n = s;
          for (unsigned char c : w) n.units.push_back(c);  // bytes as the constraint counts them, never sign-extended
          n.text += w;
          next.push_back(std::move(n));
        }
      }
      spelled = std::move(next);
    }
    for (Spelled& s : spelled) {
      const std::optional<harmony::Role> role =
          with_role ? std::nullopt : std::optional(harmony::Role::assistant);
      const harmony::ParsedHeader h = harmony::parse_header(s.text, role, true).header;
      reasoning.push_back(!h.recipient && h.channel != "final");
      forms.push_back({std::move(s.units), content(h)->min_cost()});
    }
  }
  // Headers after <|start|> price the way on from between messages: the cheapest answer.
  if (with_role) {
    uint64_t best = Grammar::kNoCompletion;
    for (size_t i = 0; i < forms.size(); ++i)
      if (!reasoning[i]) best = std::min(best, Grammar::add_costs(forms[i].units.size(), forms[i].then));
    between_cost_[budget_spent ? 1 : 0] = Grammar::add_costs(1, best);
  }
  for (size_t i = 0; i < forms.size(); ++i)
    if (reasoning[i]) forms[i].then = Grammar::kNoCompletion;  // priced by header_cost once between_cost_ is known
}

uint64_t HarmonyGrammar::header_cost(bool with_role, bool budget_spent, const std::vector<uint32_t>& units) const {
  uint64_t best = Grammar::kNoCompletion;
  for (const HeaderForm& f : header_forms_[(with_role ? 2 : 0) + (budget_spent ? 1 : 0)]) {
    if (f.units.size() < units.size() || !std::equal(units.begin(), units.end(), f.units.begin())) continue;
    // A reasoning message: its <|end|>, then on from between messages.
    const uint64_t then = f.then != Grammar::kNoCompletion
                              ? f.then
                              : Grammar::add_costs(plain_text_->min_cost(), between_cost(budget_spent));
    best = std::min(best, Grammar::add_costs(f.units.size() - units.size(), then));
  }
  return best;
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
std::vector<HarmonyGrammar::HeaderAlternative> HarmonyGrammar::header_alternatives(const HarmonySpec& spec,
                                                                                 bool with_role,
                                                                                 bool budget_spent) const {
  const bool needs_call = spec.tool_choice == ToolChoice::required || spec.tool_choice == ToolChoice::named;
  const bool offers_tools = !json_recipients_.empty() || !text_recipients_.empty();
  std::vector<std::string> plain = needs_call ? without(spec.channels, "final") : spec.channels;
  // A commentary message without recipient is a preamble to tool calls (Harmony's system
  // message names the commentary channel for calls only when tools exist): none without tools.
  if (!offers_tools && plain.size() > 1) plain = without(plain, "commentary");
  std::vector<std::string> call_channels = without(spec.channels, "final");
  // Once the budget is spent the answer comes next: the final message, or a call if one is
  // required or there is no final channel.
  if (budget_spent) {
    plain = !needs_call && contains(spec.channels, "final") ? std::vector<std::string>{"final"}
                                                            : std::vector<std::string>{};
    if (!plain.empty()) call_channels.clear();
    if (plain.empty() && (call_channels.empty() || !offers_tools))
      return header_alternatives(spec, with_role, false);  // nothing else to open: the budget cannot apply
  }

  std::vector<HeaderAlternative> out;
  const HeaderPart channel{channel_, {}}, message{message_, {}}, constrain{constrain_, {}};
  auto add = [&](HeaderAlternative parts) {
    if (with_role) parts.insert(parts.begin(), HeaderPart{0, {"assistant"}});
    parts.push_back(message);
    out.push_back(std::move(parts));
  };
  if (!plain.empty()) add({channel, {0, plain}});
  if (!call_channels.empty())
    for (bool json : {true, false}) {
      const auto& recipients = json ? json_recipients_ : text_recipients_;
      if (recipients.empty()) continue;
      std::vector<HeaderAlternative> types = {{}};
      if (json) {
        types.push_back({{0, {" "}}, constrain, {0, {"json"}}});
        types.push_back({constrain, {0, {"json"}}});
        types.push_back({{0, {" json"}}});
      } else {
        types.push_back({{0, {" code"}}});
      }
      std::vector<std::string> to, channel_to;
      for (const auto& r : recipients) to.push_back(" to=" + r);
      for (const auto& c : call_channels)
        for (const auto& t : to) channel_to.push_back(c + t);
      for (const auto& type : types) {
        HeaderAlternative before = {{0, to}, channel, {0, call_channels}};
        HeaderAlternative after = {channel, {0, channel_to}};
        before.insert(before.end(), type.begin(), type.end());
        after.insert(after.end(), type.begin(), type.end());
        add(std::move(before));
        add(std::move(after));
      }
    }
  return out;
}

std::shared_ptr<const Grammar> HarmonyGrammar::build_header(const std::vector<HeaderAlternative>& alternatives) const {
  GrammarBuilder b(vocab_);
  const uint32_t root = b.add_rule("message header");
  for (const HeaderAlternative& alt : alternatives) {
    std::vector<Symbol> symbols;
    for (const HeaderPart& part : alt)
      symbols.push_back(part.words.empty() ? b.special(part.special) : b.lexeme(words(part.words)));
    b.add_alternative(root, std::move(symbols));
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
