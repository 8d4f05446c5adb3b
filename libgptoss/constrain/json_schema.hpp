#pragma once
// JSON Schema -> grammar of the JSON documents that validate against it (the subset in
// docs/constrained-decoding.md). The language generated is a subset of the valid documents:
// compact JSON (one optional space after ':' and ','), properties in the schema's order (the
// required ones always, optional ones or not), no keys beyond "properties" unless the object
// declares none, numbers without exponents. Every document of the language validates.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "libgptoss/constrain/grammar_builder.hpp"
#include "libgptoss/harmony/message.hpp"

namespace gptoss::constrain {

// Adds rules for one JSON value valid against `schema` (a schema object or boolean; $refs
// resolve inside it) and returns the value's rule. Errors: gptoss::Error(invalid_argument or
// unsupported_argument) whose message is "`context`: at #POINTER: what".
uint32_t add_json_schema(GrammarBuilder& builder, const harmony::Json& schema, const std::string& context);

// A whole grammar: one JSON value valid against `schema`, then one of `end_tokens`.
std::shared_ptr<const Grammar> compile_json_schema(std::shared_ptr<const Vocabulary> vocab,
                                                   const harmony::Json& schema, const std::string& context,
                                                   const std::vector<uint32_t>& end_tokens);

}  // namespace gptoss::constrain
