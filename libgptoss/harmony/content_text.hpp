#pragma once
// The text of system and developer content parts (the body between <|message|> and <|end|>).
#include <string>

#include "libgptoss/harmony/message.hpp"

namespace gptoss::harmony {

// `conversation_has_function_tools` adds the line that sends function calls to commentary.
std::string system_content_text(const SystemContent& sys, bool conversation_has_function_tools);
std::string developer_content_text(const DeveloperContent& dev);
// "# Tools" followed by one block per namespace, in key order.
std::string tools_section_text(const ToolNamespaces& namespaces);
// "# Response Formats" followed by one block per format (format guide, section 4).
std::string response_formats_text(const std::vector<ResponseFormat>& formats);

}  // namespace gptoss::harmony
