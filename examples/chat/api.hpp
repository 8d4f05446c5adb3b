#pragma once
// Thin C++ ownership over the public C API (include/gptoss.h): RAII handles and a check()
// that turns a failed status into an exception carrying the library's message. The CLI uses
// nothing of libgptoss but this header's functions.
#include <gptoss.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gptoss_cli {

// A failed libgptoss call: the status and gptoss_get_last_error_message().
class ApiError : public std::runtime_error {
 public:
  ApiError(gptoss_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  gptoss_status status() const { return status_; }

 private:
  gptoss_status status_;
};

// A bad command line or input file: reported as one line, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws ApiError("<call>: <status>: <message>") unless `status` is success.
void check(gptoss_status status, const char* call);

template <typename Object, gptoss_status (*Release)(Object*)>
struct HandleReleaser {
  void operator()(Object* handle) const noexcept { Release(handle); }
};
using Model = std::unique_ptr<gptoss_model, HandleReleaser<gptoss_model, gptoss_model_release>>;
using Tokenizer =
    std::unique_ptr<gptoss_tokenizer, HandleReleaser<gptoss_tokenizer, gptoss_tokenizer_release>>;
using KvCache =
    std::unique_ptr<gptoss_kvcache, HandleReleaser<gptoss_kvcache, gptoss_kvcache_release>>;
using Context =
    std::unique_ptr<gptoss_context, HandleReleaser<gptoss_context, gptoss_context_release>>;
using Sampler =
    std::unique_ptr<gptoss_sampler, HandleReleaser<gptoss_sampler, gptoss_sampler_release>>;
using HarmonyParser =
    std::unique_ptr<gptoss_harmony_parser,
                    HandleReleaser<gptoss_harmony_parser, gptoss_harmony_parser_release>>;

Tokenizer model_tokenizer(gptoss_model_t model);
// Text to ids; `flags` as gptoss_tokenizer_encode (GPTOSS_ENCODE_ALLOW_SPECIAL).
std::vector<uint32_t> encode(gptoss_tokenizer_t tokenizer, std::string_view text, uint32_t flags);
// Bytes of one token (may be part of a UTF-8 character).
std::string_view token_bytes(gptoss_tokenizer_t tokenizer, uint32_t token);
uint32_t special_token(gptoss_tokenizer_t tokenizer, gptoss_special_token type);
// A conversation (Harmony JSON) rendered for the assistant's next turn, analysis of earlier
// turns dropped.
std::vector<uint32_t> render_for_completion(gptoss_tokenizer_t tokenizer,
                                            const std::string& conversation_json);
std::vector<uint32_t> context_tokens(gptoss_context_t context);
size_t vocab_size(gptoss_model_t model);

}  // namespace gptoss_cli
