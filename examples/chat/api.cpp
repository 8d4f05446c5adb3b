// The helpers of api.hpp: the capacity protocol of the C API wrapped once.
#include "api.hpp"

#include <string>

namespace gptoss_cli {

void check(gptoss_status status, const char* call) {
  if (status == gptoss_status_success) return;
  std::string message = gptoss_get_last_error_message();
  throw ApiError(status, std::string(call) + ": " + gptoss_status_to_string(status) +
                             (message.empty() ? "" : ": " + message));
}

Tokenizer model_tokenizer(gptoss_model_t model) {
  gptoss_tokenizer_t tokenizer = nullptr;
  check(gptoss_model_get_tokenizer(model, &tokenizer), "gptoss_model_get_tokenizer");
  return Tokenizer(tokenizer);
}

std::vector<uint32_t> encode(gptoss_tokenizer_t tokenizer, std::string_view text,
                             uint32_t flags) {
  // Most text needs fewer tokens than bytes; retry once with the exact count otherwise.
  std::vector<uint32_t> ids(text.size() + 1);
  size_t n = 0;
  gptoss_status status = gptoss_tokenizer_encode(tokenizer, text.data(), text.size(), flags,
                                                 ids.data(), ids.size(), &n);
  if (status == gptoss_status_buffer_too_small) {
    ids.resize(n);
    status = gptoss_tokenizer_encode(tokenizer, text.data(), text.size(), flags, ids.data(),
                                     ids.size(), &n);
  }
  check(status, "gptoss_tokenizer_encode");
  ids.resize(n);
  return ids;
}

std::string_view token_bytes(gptoss_tokenizer_t tokenizer, uint32_t token) {
  const void* bytes = nullptr;
  size_t size = 0;
  check(gptoss_tokenizer_decode(tokenizer, token, &bytes, &size), "gptoss_tokenizer_decode");
  return {static_cast<const char*>(bytes), size};
}

uint32_t special_token(gptoss_tokenizer_t tokenizer, gptoss_special_token type) {
  uint32_t id = 0;
  check(gptoss_tokenizer_get_special_token_id(tokenizer, type, &id),
        "gptoss_tokenizer_get_special_token_id");
  return id;
}

std::vector<uint32_t> render_for_completion(gptoss_tokenizer_t tokenizer,
                                            const std::string& conversation_json) {
  gptoss_harmony_render_options options;
  check(gptoss_harmony_render_options_init(&options), "gptoss_harmony_render_options_init");
  options.for_completion = 1;
  options.auto_drop_analysis = 1;
  std::vector<uint32_t> ids(conversation_json.size() + 64);
  size_t n = 0;
  gptoss_status status = gptoss_harmony_render(tokenizer, conversation_json.c_str(), &options,
                                               ids.data(), ids.size(), &n);
  if (status == gptoss_status_buffer_too_small) {
    ids.resize(n);
    status = gptoss_harmony_render(tokenizer, conversation_json.c_str(), &options, ids.data(),
                                   ids.size(), &n);
  }
  check(status, "gptoss_harmony_render");
  ids.resize(n);
  return ids;
}

std::vector<uint32_t> context_tokens(gptoss_context_t context) {
  size_t n = 0;
  check(gptoss_context_get_num_tokens(context, &n), "gptoss_context_get_num_tokens");
  std::vector<uint32_t> ids(n);
  check(gptoss_context_get_tokens(context, ids.data(), ids.size(), &n),
        "gptoss_context_get_tokens");
  ids.resize(n);
  return ids;
}

size_t vocab_size(gptoss_model_t model) {
  gptoss_model_info info{};
  info.struct_size = sizeof(info);
  check(gptoss_model_get_info(model, &info), "gptoss_model_get_info");
  return info.vocab_size;
}

}  // namespace gptoss_cli
