#pragma once
// JSON Schema -> the TypeScript-like type text that Harmony tool definitions use
// (`type f = (_: {TS}) => any;`). The exact spacing matches openai-harmony 0.0.8, which the
// model saw in training; docs/harmony.md lists the rules.
#include <string>

#include "libgptoss/harmony/message.hpp"

namespace gptoss::harmony {

// `indent` is the prefix of property lines; tool parameters use "".
std::string schema_to_typescript(const Json& schema, const std::string& indent = "");

}  // namespace gptoss::harmony
