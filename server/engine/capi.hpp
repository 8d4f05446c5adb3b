#pragma once
// Ownership over the public C API's handles and a check() that turns a failed status into an
// EngineError carrying the library's message. The server uses nothing of libgptoss but
// include/gptoss.h.
#include <gptoss.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gptoss_server {

class EngineError : public std::runtime_error {
 public:
  EngineError(gptoss_status status, const std::string& message, std::string detail = {})
      : std::runtime_error(message), status_(status), detail_(std::move(detail)) {}
  gptoss_status status() const { return status_; }
  // The library's own message (gptoss_get_last_error_message), without the call and status.
  const std::string& detail() const { return detail_; }

 private:
  gptoss_status status_;
  std::string detail_;
};

// Throws EngineError("<call>: <status>: <message>") unless `status` is success.
void check(gptoss_status status, const char* call);

template <typename Object, gptoss_status (*Release)(Object*)>
struct HandleReleaser {
  void operator()(Object* handle) const noexcept { Release(handle); }
};
template <typename Object, gptoss_status (*Release)(Object*)>
using Handle = std::unique_ptr<Object, HandleReleaser<Object, Release>>;
using ModelHandle = Handle<gptoss_model, gptoss_model_release>;
using TokenizerHandle = Handle<gptoss_tokenizer, gptoss_tokenizer_release>;
using KvCacheHandle = Handle<gptoss_kvcache, gptoss_kvcache_release>;
using ContextHandle = Handle<gptoss_context, gptoss_context_release>;
using SamplerHandle = Handle<gptoss_sampler, gptoss_sampler_release>;
using ParserHandle = Handle<gptoss_harmony_parser, gptoss_harmony_parser_release>;
using ConstraintHandle = Handle<gptoss_constraint, gptoss_constraint_release>;

// Text to ids (special-token strings become their ids when allow_special).
std::vector<uint32_t> encode(gptoss_tokenizer_t tokenizer, std::string_view text, bool allow_special);
// Bytes of one token (may end inside a UTF-8 character).
std::string_view token_bytes(gptoss_tokenizer_t tokenizer, uint32_t token);
uint32_t special_token(gptoss_tokenizer_t tokenizer, gptoss_special_token type);
// A Harmony conversation rendered for the assistant's next turn.
std::vector<uint32_t> render_conversation(gptoss_tokenizer_t tokenizer, const std::string& json);

}  // namespace gptoss_server
