#include "engine/capi.hpp"

namespace gptoss_server {

void check(gptoss_status status, const char* call) {
  if (status == gptoss_status_success) return;
  const std::string message = gptoss_get_last_error_message();
  throw EngineError(status, std::string(call) + ": " + gptoss_status_to_string(status) +
                                (message.empty() ? "" : ": " + message),
                    message);
}

namespace {
// The C API's capacity protocol: try a guess, retry once with the size it reports.
template <typename Call>
std::vector<uint32_t> with_capacity(size_t guess, const char* name, Call call) {
  std::vector<uint32_t> ids(guess);
  size_t n = 0;
  gptoss_status status = call(ids.data(), ids.size(), &n);
  if (status == gptoss_status_buffer_too_small) {
    ids.resize(n);
    status = call(ids.data(), ids.size(), &n);
  }
  check(status, name);
  ids.resize(n);
  return ids;
}
}  // namespace

std::vector<uint32_t> encode(gptoss_tokenizer_t tokenizer, std::string_view text, bool allow_special) {
  const uint32_t flags = allow_special ? GPTOSS_ENCODE_ALLOW_SPECIAL : 0u;
  return with_capacity(text.size() / 2 + 16, "gptoss_tokenizer_encode", [&](uint32_t* out, size_t cap, size_t* n) {
    return gptoss_tokenizer_encode(tokenizer, text.data(), text.size(), flags, out, cap, n);
  });
}

std::string_view token_bytes(gptoss_tokenizer_t tokenizer, uint32_t token) {
  const void* bytes = nullptr;
  size_t size = 0;
  check(gptoss_tokenizer_decode(tokenizer, token, &bytes, &size), "gptoss_tokenizer_decode");
  return {static_cast<const char*>(bytes), size};
}

uint32_t special_token(gptoss_tokenizer_t tokenizer, gptoss_special_token type) {
  uint32_t id = 0;
  check(gptoss_tokenizer_get_special_token_id(tokenizer, type, &id), "gptoss_tokenizer_get_special_token_id");
  return id;
}

std::vector<uint32_t> render_conversation(gptoss_tokenizer_t tokenizer, const std::string& json) {
  gptoss_harmony_render_options options;
  check(gptoss_harmony_render_options_init(&options), "gptoss_harmony_render_options_init");
  return with_capacity(json.size() / 2 + 64, "gptoss_harmony_render", [&](uint32_t* out, size_t cap, size_t* n) {
    return gptoss_harmony_render(tokenizer, json.c_str(), &options, out, cap, n);
  });
}

}  // namespace gptoss_server
