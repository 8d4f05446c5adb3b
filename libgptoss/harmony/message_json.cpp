#include "libgptoss/harmony/message_json.hpp"

#include <initializer_list>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/json.hpp"

namespace gptoss::harmony {
namespace {

[[noreturn]] void bad(const std::string& path, std::string_view why) {
  fail(gptoss_status_invalid_argument, "{}: {}", path, why);
}

std::string sub(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

const Json& require_object(const Json& j, const std::string& path) {
  if (!j.is_object()) bad(path, "expected an object");
  return j;
}

// Rejects keys the schema does not know, so typos do not pass silently.
void check_keys(const Json& j, const std::string& path, std::initializer_list<std::string_view> keys) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (auto k : keys) known = known || it.key() == k;
    if (!known) bad(sub(path, it.key()), "unknown field");
  }
}

const Json* field(const Json& obj, std::string_view key) {
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string get_string(const Json& obj, std::string_view key, const std::string& path) {
  const Json* v = field(obj, key);
  if (v == nullptr) bad(sub(path, key), "required string is missing");
  if (!v->is_string()) bad(sub(path, key), "expected a string");
  return v->get<std::string>();
}

std::optional<std::string> get_opt_string(const Json& obj, std::string_view key,
                                          const std::string& path) {
  const Json* v = field(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) bad(sub(path, key), "expected a string or null");
  return v->get<std::string>();
}

Tool tool_from_json(const Json& j, const std::string& path) {
  require_object(j, path);
  check_keys(j, path, {"name", "description", "parameters"});
  Tool t;
  t.name = get_string(j, "name", path);
  t.description = get_opt_string(j, "description", path).value_or("");
  if (const Json* p = field(j, "parameters")) {
    if (!p->is_object()) bad(sub(path, "parameters"), "expected a JSON Schema object or null");
    t.parameters = *p;
  }
  return t;
}


SystemContent system_content_from_json(const Json& j, const std::string& path) {
  check_keys(j, path, {"type", "model_identity", "reasoning_effort", "conversation_start_date",
                       "knowledge_cutoff", "channel_config", "tools"});
  SystemContent s;
  s.model_identity = get_opt_string(j, "model_identity", path);
  if (auto effort = get_opt_string(j, "reasoning_effort", path)) {
    if (*effort == "low") s.reasoning_effort = ReasoningEffort::low;
    else if (*effort == "medium") s.reasoning_effort = ReasoningEffort::medium;
    else if (*effort == "high") s.reasoning_effort = ReasoningEffort::high;
    else bad(sub(path, "reasoning_effort"), "expected \"low\", \"medium\" or \"high\"");
  }
  s.conversation_start_date = get_opt_string(j, "conversation_start_date", path);
  s.knowledge_cutoff = get_opt_string(j, "knowledge_cutoff", path);
  if (const Json* cc = field(j, "channel_config")) {
    std::string p = sub(path, "channel_config");
    require_object(*cc, p);
    check_keys(*cc, p, {"valid_channels", "channel_required"});
    ChannelConfig c;
    const Json* chans = field(*cc, "valid_channels");
    if (chans == nullptr || !chans->is_array()) bad(sub(p, "valid_channels"), "expected an array of strings");
    for (size_t i = 0; i < chans->size(); ++i) {
      if (!(*chans)[i].is_string()) bad(at(sub(p, "valid_channels"), i), "expected a string");
      c.valid_channels.push_back((*chans)[i].get<std::string>());
    }
    if (const Json* req = field(*cc, "channel_required")) {
      if (!req->is_boolean()) bad(sub(p, "channel_required"), "expected true or false");
      c.channel_required = req->get<bool>();
    }
    s.channel_config = std::move(c);
  }
  if (const Json* tools = field(j, "tools")) s.tools = namespaces_from_json(*tools, sub(path, "tools"));
  return s;
}

DeveloperContent developer_content_from_json(const Json& j, const std::string& path) {
  check_keys(j, path, {"type", "instructions", "tools", "response_formats"});
  DeveloperContent d;
  d.instructions = get_opt_string(j, "instructions", path);
  if (const Json* tools = field(j, "tools")) d.tools = namespaces_from_json(*tools, sub(path, "tools"));
  if (const Json* rf = field(j, "response_formats")) {
    std::string p = sub(path, "response_formats");
    if (!rf->is_array()) bad(p, "expected an array");
    for (size_t i = 0; i < rf->size(); ++i) {
      std::string pi = at(p, i);
      const Json& f = require_object((*rf)[i], pi);
      check_keys(f, pi, {"name", "description", "schema"});
      ResponseFormat r;
      r.name = get_string(f, "name", pi);
      r.description = get_opt_string(f, "description", pi);
      const Json* schema = field(f, "schema");
      if (schema == nullptr || !schema->is_object()) bad(sub(pi, "schema"), "expected a JSON Schema object");
      r.schema = *schema;
      d.response_formats.push_back(std::move(r));
    }
  }
  return d;
}

ContentPart part_from_json(const Json& j, const std::string& path) {
  require_object(j, path);
  std::string type = get_string(j, "type", path);
  if (type == "text") {
    check_keys(j, path, {"type", "text"});
    return TextContent{get_string(j, "text", path)};
  }
  if (type == "system_content") return system_content_from_json(j, path);
  if (type == "developer_content") return developer_content_from_json(j, path);
  bad(sub(path, "type"), "expected \"text\", \"system_content\" or \"developer_content\"");
}

Json namespaces_to_json(const ToolNamespaces& nss) {
  Json out = Json::object();
  for (const auto& [key, ns] : nss) {
    Json tools = Json::array();
    for (const auto& t : ns.tools)
      tools.push_back({{"name", t.name}, {"description", t.description},
                       {"parameters", t.parameters ? *t.parameters : Json(nullptr)}});
    out[key] = {{"name", ns.name},
                {"description", ns.description ? Json(*ns.description) : Json(nullptr)},
                {"tools", tools}};
  }
  return out;
}

Json opt(const std::optional<std::string>& s) { return s ? Json(*s) : Json(nullptr); }

Json part_to_json(const ContentPart& part) {
  if (const auto* t = std::get_if<TextContent>(&part)) return {{"type", "text"}, {"text", t->text}};
  if (const auto* s = std::get_if<SystemContent>(&part)) {
    static const char* kEffort[] = {"low", "medium", "high"};
    Json cc = nullptr;
    if (s->channel_config)
      cc = {{"valid_channels", s->channel_config->valid_channels},
            {"channel_required", s->channel_config->channel_required}};
    return {{"type", "system_content"},
            {"model_identity", opt(s->model_identity)},
            {"reasoning_effort",
             s->reasoning_effort ? Json(kEffort[int(*s->reasoning_effort)]) : Json(nullptr)},
            {"conversation_start_date", opt(s->conversation_start_date)},
            {"knowledge_cutoff", opt(s->knowledge_cutoff)},
            {"channel_config", cc},
            {"tools", s->tools ? namespaces_to_json(*s->tools) : Json(nullptr)}};
  }
  const auto& d = std::get<DeveloperContent>(part);
  Json out = {{"type", "developer_content"},
              {"instructions", opt(d.instructions)},
              {"tools", d.tools ? namespaces_to_json(*d.tools) : Json(nullptr)}};
  if (!d.response_formats.empty()) {
    Json rf = Json::array();
    for (const auto& f : d.response_formats)
      rf.push_back({{"name", f.name}, {"description", opt(f.description)}, {"schema", f.schema}});
    out["response_formats"] = rf;
  }
  return out;
}

}  // namespace

ToolNamespaces namespaces_from_json(const Json& j, const std::string& path) {
  require_object(j, path);
  ToolNamespaces out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string p = sub(path, it.key());
    require_object(*it, p);
    check_keys(*it, p, {"name", "description", "tools", "builtin"});
    Namespace ns;
    ns.name = get_opt_string(*it, "name", p).value_or(it.key());
    ns.description = get_opt_string(*it, "description", p);
    if (const Json* b = field(*it, "builtin"); b != nullptr && !b->is_string())
      bad(sub(p, "builtin"), "expected a string");
    if (const Json* tools = field(*it, "tools")) {
      if (!tools->is_array()) bad(sub(p, "tools"), "expected an array of tools");
      for (size_t i = 0; i < tools->size(); ++i)
        ns.tools.push_back(tool_from_json((*tools)[i], at(sub(p, "tools"), i)));
    }
    out.emplace(it.key(), std::move(ns));
  }
  return out;
}

Json parse_json_text(std::string_view text, std::string_view what) {
  return parse_json<Json>(text, gptoss_status_invalid_argument, what);
}

Message message_from_json(const Json& j, const std::string& path) {
  require_object(j, path);
  check_keys(j, path, {"role", "name", "recipient", "channel", "content_type", "content"});
  Message m;
  std::string role = get_string(j, "role", path);
  auto r = role_from_name(role);
  if (!r) bad(sub(path, "role"), "expected \"system\", \"developer\", \"user\", \"assistant\" or \"tool\", got \"" + role + "\"");
  m.role = *r;
  m.name = get_opt_string(j, "name", path);
  if (m.role == Role::tool && !m.name) bad(sub(path, "name"), "a tool message needs the tool's name");
  m.recipient = get_opt_string(j, "recipient", path);
  m.channel = get_opt_string(j, "channel", path);
  m.content_type = get_opt_string(j, "content_type", path);
  const Json* content = field(j, "content");
  std::string cpath = sub(path, "content");
  if (content == nullptr) bad(cpath, "required content is missing");
  if (content->is_string()) {
    m.content.push_back(TextContent{content->get<std::string>()});
  } else if (content->is_array()) {
    for (size_t i = 0; i < content->size(); ++i) {
      ContentPart part = part_from_json((*content)[i], at(cpath, i));
      if (std::holds_alternative<SystemContent>(part) && m.role != Role::system)
        bad(at(cpath, i), "system_content may only appear in a system message");
      if (std::holds_alternative<DeveloperContent>(part) && m.role != Role::developer)
        bad(at(cpath, i), "developer_content may only appear in a developer message");
      m.content.push_back(std::move(part));
    }
  } else {
    bad(cpath, "expected a string or an array of content parts");
  }
  return m;
}

std::vector<Message> conversation_from_json(const Json& j) {
  const Json* list = &j;
  std::string path = "messages";
  if (j.is_object()) {
    check_keys(j, "", {"messages"});
    list = field(j, "messages");
    if (list == nullptr) bad("messages", "required array is missing");
  }
  if (!list->is_array()) bad(path, "expected an array of messages (or {\"messages\": [...]})");
  std::vector<Message> out;
  out.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) out.push_back(message_from_json((*list)[i], at(path, i)));
  return out;
}

Json message_to_json(const Message& m) {
  Json content = Json::array();
  for (const auto& part : m.content) content.push_back(part_to_json(part));
  return {{"role", std::string(role_name(m.role))}, {"name", opt(m.name)},
          {"recipient", opt(m.recipient)},            {"channel", opt(m.channel)},
          {"content_type", opt(m.content_type)},      {"content", content}};
}

Json messages_to_json(const std::vector<Message>& messages) {
  Json out = Json::array();
  for (const auto& m : messages) out.push_back(message_to_json(m));
  return out;
}

}  // namespace gptoss::harmony
