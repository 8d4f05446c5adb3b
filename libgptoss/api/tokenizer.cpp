// gptoss_tokenizer_*: the C ABI over gptoss::Tokenizer.
#include <cstring>

#include "libgptoss/api/api_util.hpp"
#include "libgptoss/api/handles_tokenizer.hpp"

using namespace gptoss;

namespace {

const Tokenizer& tokenizer_of(gptoss_tokenizer_t t) {
  api::require(t, "tokenizer");
  return *t->tok;
}

// The capacity protocol: the full count always goes to *n_out; the elements are copied only
// when they all fit, else buffer_too_small.
template <typename T>
void copy_out(const T* data, size_t n, T* out, size_t capacity, size_t* n_out, const char* what) {
  *n_out = n;
  if (n > capacity) {
    fail(gptoss_status_buffer_too_small, "{} {} do not fit in a capacity of {}", n, what,
         capacity);
  }
  if (n > 0) std::memcpy(out, data, n * sizeof(T));
}

}  // namespace

extern "C" {

GPTOSS_API gptoss_status gptoss_tokenizer_create_from_file(const char* path,
                                                           gptoss_tokenizer_t* tokenizer_out) {
  return api::guard([&] {
    api::require(path, "path");
    api::require(tokenizer_out, "tokenizer_out");
    *tokenizer_out = new gptoss_tokenizer(Tokenizer::from_json_file(path));
  });
}

GPTOSS_API gptoss_status gptoss_tokenizer_retain(gptoss_tokenizer_t tokenizer) {
  return api::retain(tokenizer);
}

GPTOSS_API gptoss_status gptoss_tokenizer_release(gptoss_tokenizer_t tokenizer) {
  return api::release(tokenizer);
}

GPTOSS_API gptoss_status gptoss_tokenizer_encode(gptoss_tokenizer_t tokenizer, const char* text,
                                                 size_t text_size, uint32_t flags,
                                                 uint32_t* tokens_out, size_t capacity,
                                                 size_t* n_tokens_out) {
  return api::guard([&] {
    const Tokenizer& tok = tokenizer_of(tokenizer);
    if (text_size > 0) api::require(text, "text");
    if (capacity > 0) api::require(tokens_out, "tokens_out");
    api::require(n_tokens_out, "n_tokens_out");
    if ((flags & ~GPTOSS_ENCODE_ALLOW_SPECIAL) != 0) {
      fail(gptoss_status_invalid_argument, "unknown encode flags {:#x}",
           flags & ~GPTOSS_ENCODE_ALLOW_SPECIAL);
    }
    const std::string_view view(text_size > 0 ? text : "", text_size);
    const std::vector<uint32_t> ids = (flags & GPTOSS_ENCODE_ALLOW_SPECIAL)
                                          ? tok.encode_with_specials(view)
                                          : tok.encode_ordinary(view);
    copy_out(ids.data(), ids.size(), tokens_out, capacity, n_tokens_out, "tokens");
  });
}

GPTOSS_API gptoss_status gptoss_tokenizer_decode(gptoss_tokenizer_t tokenizer, uint32_t token_id,
                                                 const void** token_ptr_out,
                                                 size_t* token_size_out) {
  return api::guard([&] {
    const Tokenizer& tok = tokenizer_of(tokenizer);
    api::require(token_ptr_out, "token_ptr_out");
    api::require(token_size_out, "token_size_out");
    const std::string_view bytes = tok.token_bytes(token_id);
    *token_ptr_out = bytes.data();
    *token_size_out = bytes.size();
  });
}

GPTOSS_API gptoss_status gptoss_tokenizer_decode_tokens(gptoss_tokenizer_t tokenizer,
                                                        const uint32_t* tokens, size_t n_tokens,
                                                        char* text_out, size_t capacity,
                                                        size_t* text_size_out) {
  return api::guard([&] {
    const Tokenizer& tok = tokenizer_of(tokenizer);
    if (n_tokens > 0) api::require(tokens, "tokens");
    if (capacity > 0) api::require(text_out, "text_out");
    api::require(text_size_out, "text_size_out");
    const std::string text = tok.decode(std::span<const uint32_t>(tokens, n_tokens));
    copy_out(text.data(), text.size(), text_out, capacity, text_size_out, "bytes");
  });
}

GPTOSS_API gptoss_status gptoss_tokenizer_get_special_token_id(gptoss_tokenizer_t tokenizer,
                                                               enum gptoss_special_token type,
                                                               uint32_t* token_id_out) {
  return api::guard([&] {
    const Tokenizer& tok = tokenizer_of(tokenizer);
    api::require(token_id_out, "token_id_out");
    const char* name = nullptr;
    switch (type) {
      case gptoss_special_token_return: name = "<|return|>"; break;
      case gptoss_special_token_start: name = "<|start|>"; break;
      case gptoss_special_token_message: name = "<|message|>"; break;
      case gptoss_special_token_end: name = "<|end|>"; break;
      case gptoss_special_token_constrain: name = "<|constrain|>"; break;
      case gptoss_special_token_channel: name = "<|channel|>"; break;
      case gptoss_special_token_call: name = "<|call|>"; break;
      case gptoss_special_token_startoftext: name = "<|startoftext|>"; break;
      case gptoss_special_token_endoftext: name = "<|endoftext|>"; break;
      case gptoss_special_token_endofprompt: name = "<|endofprompt|>"; break;
      default: break;  // invalid, refusal, untrusted, end_untrusted: not in o200k_harmony
    }
    const auto id = name != nullptr ? tok.special_id(name) : std::nullopt;
    if (!id) {
      fail(gptoss_status_invalid_argument, "special token type {} has no id in o200k_harmony",
           static_cast<int>(type));
    }
    *token_id_out = *id;
  });
}

GPTOSS_API gptoss_status gptoss_tokenizer_lookup_special(gptoss_tokenizer_t tokenizer,
                                                         const char* name,
                                                         uint32_t* token_id_out) {
  return api::guard([&] {
    const Tokenizer& tok = tokenizer_of(tokenizer);
    api::require(name, "name");
    api::require(token_id_out, "token_id_out");
    const auto id = tok.special_id(name);
    if (!id) fail(gptoss_status_invalid_argument, "'{}' is not a special token", name);
    *token_id_out = *id;
  });
}

GPTOSS_API gptoss_status gptoss_tokenizer_get_num_text_tokens(gptoss_tokenizer_t tokenizer,
                                                              size_t* n_out) {
  return api::guard([&] {
    const Tokenizer& tok = tokenizer_of(tokenizer);
    api::require(n_out, "n_out");
    *n_out = tok.num_text_tokens();
  });
}

GPTOSS_API gptoss_status gptoss_tokenizer_get_num_special_tokens(gptoss_tokenizer_t tokenizer,
                                                                 size_t* n_out) {
  return api::guard([&] {
    const Tokenizer& tok = tokenizer_of(tokenizer);
    api::require(n_out, "n_out");
    *n_out = tok.num_special_tokens();
  });
}

GPTOSS_API gptoss_status gptoss_tokenizer_get_num_tokens(gptoss_tokenizer_t tokenizer,
                                                         size_t* n_out) {
  return api::guard([&] {
    const Tokenizer& tok = tokenizer_of(tokenizer);
    api::require(n_out, "n_out");
    *n_out = tok.num_tokens();
  });
}

}  // extern "C"
