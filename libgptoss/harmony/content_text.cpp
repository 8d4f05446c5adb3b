#include "libgptoss/harmony/content_text.hpp"

#include <vector>

#include "libgptoss/harmony/schema_typescript.hpp"

namespace gptoss::harmony {
namespace {

// Rust's str::lines(): split on '\n', drop one '\r' before it, no empty last line.
std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string::npos ? text.size() : nl;
    std::string line = text.substr(pos, end - pos);
    if (nl != std::string::npos && !line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string namespace_text(const Namespace& ns) {
  std::vector<std::string> block;
  block.push_back("## " + ns.name + "\n");
  const bool has_tools = !ns.tools.empty();
  // A namespace without tools (python) is prose; with tools its description is a comment.
  if (ns.description)
    for (auto& line : lines(*ns.description)) block.push_back(has_tools ? "// " + line : line);
  if (has_tools) {
    block.push_back("namespace " + ns.name + " {\n");
    for (const Tool& tool : ns.tools) {
      for (auto& line : lines(tool.description)) block.push_back("// " + line);
      if (tool.parameters)
        block.push_back("type " + tool.name + " = (_: " + schema_to_typescript(*tool.parameters) + ") => any;\n");
      else
        block.push_back("type " + tool.name + " = () => any;\n");
    }
    block.push_back("} // namespace " + ns.name);
  }
  return join(block, "\n");
}

}  // namespace

std::string tools_section_text(const ToolNamespaces& namespaces) {
  std::vector<std::string> sections{"# Tools"};
  for (const auto& [key, ns] : namespaces) sections.push_back(namespace_text(ns));
  return join(sections, "\n\n");
}

std::string response_formats_text(const std::vector<ResponseFormat>& formats) {
  std::vector<std::string> sections{"# Response Formats"};
  for (const ResponseFormat& f : formats) {
    std::string block = "## " + f.name + "\n\n";
    if (f.description)
      for (auto& line : lines(*f.description)) block += "// " + line + "\n";
    block += f.schema.dump();
    sections.push_back(std::move(block));
  }
  return join(sections, "\n\n");
}

std::string system_content_text(const SystemContent& sys, bool conversation_has_function_tools) {
  std::vector<std::string> sections;
  std::vector<std::string> meta;
  if (sys.model_identity) meta.push_back(*sys.model_identity);
  if (sys.knowledge_cutoff) meta.push_back("Knowledge cutoff: " + *sys.knowledge_cutoff);
  if (sys.conversation_start_date) meta.push_back("Current date: " + *sys.conversation_start_date);
  if (!meta.empty()) sections.push_back(join(meta, "\n"));
  if (sys.reasoning_effort) {
    static const char* kLevel[] = {"low", "medium", "high"};
    sections.push_back(std::string("Reasoning: ") + kLevel[int(*sys.reasoning_effort)]);
  }
  if (sys.tools && !sys.tools->empty()) sections.push_back(tools_section_text(*sys.tools));
  if (sys.channel_config && !sys.channel_config->valid_channels.empty()) {
    std::string text = "# Valid channels: " + join(sys.channel_config->valid_channels, ", ") + ".";
    if (sys.channel_config->channel_required) text += " Channel must be included for every message.";
    if (conversation_has_function_tools)
      text += "\nCalls to these tools must go to the commentary channel: 'functions'.";
    sections.push_back(std::move(text));
  }
  return join(sections, "\n\n");
}

std::string developer_content_text(const DeveloperContent& dev) {
  std::vector<std::string> sections;
  if (dev.instructions) {
    sections.push_back("# Instructions");
    sections.push_back(*dev.instructions);
  }
  if (dev.tools && !dev.tools->empty()) sections.push_back(tools_section_text(*dev.tools));
  if (!dev.response_formats.empty()) sections.push_back(response_formats_text(dev.response_formats));
  return join(sections, "\n\n");
}

}  // namespace gptoss::harmony
