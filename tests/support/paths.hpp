#pragma once
// Where tests find their data. Set by tests/CMakeLists.txt.
#include <string>

namespace gptoss::test {
inline std::string source_dir() { return GPTOSS_TEST_SOURCE_DIR; }
inline std::string binary_dir() { return GPTOSS_TEST_BINARY_DIR; }
inline std::string shared_dir() { return GPTOSS_TEST_SHARED_DIR; }
inline std::string tokenizer_json() { return GPTOSS_TEST_TOKENIZER_JSON; }
inline std::string logits_dir() { return shared_dir() + "/conformance/logits"; }
inline std::string conformance_hf_dir() { return logits_dir() + "/model-hf"; }
}  // namespace gptoss::test
