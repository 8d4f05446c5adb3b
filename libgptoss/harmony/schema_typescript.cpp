#include "libgptoss/harmony/schema_typescript.hpp"

#include <set>
#include <vector>

namespace gptoss::harmony {
namespace {

// Present (even when null) in an object schema; nullptr otherwise.
const Json* get(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

const std::string* get_string(const Json& j, const char* key) {
  const Json* v = get(j, key);
  return v != nullptr && v->is_string() ? v->get_ptr<const std::string*>() : nullptr;
}

bool is_enum(const Json& schema) {
  const Json* e = get(schema, "enum");
  return e != nullptr && e->is_array() && !e->empty();
}

bool is_nullable(const Json& schema) {
  const Json* n = get(schema, "nullable");
  return n != nullptr && n->is_boolean() && n->get<bool>();
}

std::string with_null(std::string type, const Json& schema) {
  if (is_nullable(schema) && type.find("null") == std::string::npos) type += " | null";
  return type;
}

// "default: ..." for a property: strings raw (quoted unless the schema is an enum), anything
// else as compact JSON. `quote_enum_strings` covers the schema-level oneOf, which prints an enum
// variant's string default as JSON.
std::string default_comment(const Json& value, const Json& schema, bool quote_enum_strings) {
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    if (!is_enum(schema)) return "default: \"" + s + "\"";
    if (!quote_enum_strings) return "default: " + s;
  }
  return "default: " + value.dump();
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string render(const Json& schema, const std::string& indent);

std::string render_schema_one_of(const Json& variants, const std::string& indent) {
  std::string out;
  for (const Json& variant : variants) {
    out += "\n" + indent + " | " + with_null(render(variant, indent + "   "), variant);
    std::vector<std::string> comments;
    if (const std::string* d = get_string(variant, "description")) comments.push_back(*d);
    if (const Json* def = get(variant, "default")) comments.push_back(default_comment(*def, variant, true));
    if (!comments.empty()) out += " // " + join(comments, " ");
  }
  return out;
}

// A property whose schema is a oneOf: one ` | type` line per variant, then a lone comma.
std::string render_property_one_of(const std::string& key, bool required, const Json& prop,
                                   const Json& variants, const std::string& indent) {
  std::string out;
  const std::string* prop_desc = get_string(prop, "description");
  const std::string* first_desc = variants.empty() ? nullptr : get_string(variants[0], "description");
  bool desc_above = prop_desc != nullptr && !(first_desc != nullptr && *first_desc == *prop_desc);
  if (desc_above) out += indent + "// " + *prop_desc + "\n";
  if (const Json* def = get(prop, "default")) out += indent + "// " + default_comment(*def, prop, false) + "\n";
  out += indent + key + (required ? "" : "?") + ":\n";
  for (size_t i = 0; i < variants.size(); ++i) {
    const Json& variant = variants[i];
    out += indent + " | " + with_null(render(variant, indent + "   "), variant);
    std::vector<std::string> comments;
    const std::string* d = get_string(variant, "description");
    if (!(i == 0 && desc_above) && d != nullptr && !(prop_desc != nullptr && *d == *prop_desc))
      comments.push_back(*d);
    if (const Json* def = get(variant, "default")) comments.push_back(default_comment(*def, variant, false));
    if (!comments.empty()) out += " // " + join(comments, " ");
    out += "\n";
  }
  return out + indent + ",\n";
}

std::string render_object(const Json& schema, const std::string& indent) {
  std::string out;
  if (const std::string* d = get_string(schema, "description")) out += indent + "// " + *d + "\n";
  out += "{\n";
  const Json* props = get(schema, "properties");
  if (props != nullptr && props->is_object()) {
    std::set<std::string> required;
    if (const Json* req = get(schema, "required"); req != nullptr && req->is_array())
      for (const Json& r : *req)
        if (r.is_string()) required.insert(r.get<std::string>());
    for (auto it = props->begin(); it != props->end(); ++it) {
      const std::string& key = it.key();
      const Json& prop = *it;
      bool is_required = required.count(key) != 0;
      if (const std::string* t = get_string(prop, "title")) out += indent + "// " + *t + "\n" + indent + "//\n";
      const Json* one_of = get(prop, "oneOf");
      if (one_of == nullptr)
        if (const std::string* d = get_string(prop, "description")) out += indent + "// " + *d + "\n";
      if (const Json* ex = get(prop, "examples"); ex != nullptr && ex->is_array() && !ex->empty()) {
        out += indent + "// Examples:\n";
        for (const Json& e : *ex)
          if (e.is_string()) out += indent + "// - \"" + e.get<std::string>() + "\"\n";
      }
      if (one_of != nullptr && one_of->is_array()) {
        out += render_property_one_of(key, is_required, prop, *one_of, indent);
        continue;
      }
      out += indent + key + (is_required ? "" : "?") + ": " + with_null(render(prop, indent + "    "), prop) + ",";
      if (one_of == nullptr)
        if (const Json* def = get(prop, "default")) out += " // " + default_comment(*def, prop, false);
      out += "\n";
    }
  }
  return out + indent + "}";
}

std::string render(const Json& schema, const std::string& indent) {
  if (const Json* one_of = get(schema, "oneOf"); one_of != nullptr && one_of->is_array())
    return render_schema_one_of(*one_of, indent);
  const Json* type = get(schema, "type");
  if (type != nullptr && type->is_array()) {
    std::vector<std::string> names;
    for (const Json& t : *type)
      if (t.is_string()) names.push_back(t == "integer" ? "number" : t.get<std::string>());
    if (!names.empty()) return join(names, " | ");
  }
  if (type == nullptr || !type->is_string()) return "any";
  const auto& t = type->get_ref<const std::string&>();
  if (t == "object") return render_object(schema, indent);
  if (t == "string") {
    std::vector<std::string> values;
    if (const Json* e = get(schema, "enum"); e != nullptr && e->is_array())
      for (const Json& v : *e)
        if (v.is_string()) values.push_back("\"" + v.get<std::string>() + "\"");
    return values.empty() ? "string" : join(values, " | ");
  }
  if (t == "number" || t == "integer") return "number";
  if (t == "boolean") return "boolean";
  if (t == "array") {
    const Json* items = get(schema, "items");
    return items != nullptr ? render(*items, indent) + "[]" : "Array<any>";
  }
  return "any";
}

}  // namespace

std::string schema_to_typescript(const Json& schema, const std::string& indent) {
  return render(schema, indent);
}

}  // namespace gptoss::harmony
