// gptoss_harmony_*: the C ABI over the Harmony renderer and streaming parser.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "libgptoss/api/api_util.hpp"
#include "libgptoss/api/handles_tokenizer.hpp"
#include "libgptoss/api/struct_versions.hpp"
#include "libgptoss/harmony/message_json.hpp"
#include "libgptoss/harmony/renderer.hpp"
#include "libgptoss/harmony/stream_parser.hpp"

using namespace gptoss;

struct gptoss_harmony_parser : api::RefCounted {
  std::unique_ptr<harmony::StreamParser> parser;
  // Storage for the strings handed out by get_current / finish / get_messages.
  std::string role, channel, recipient, content_type, delta, messages_json;
};

namespace {

gptoss_harmony_render_options default_render_options() {
  gptoss_harmony_render_options o{};
  o.struct_size = sizeof(o);
  o.for_completion = 1;
  o.auto_drop_analysis = 1;
  return o;
}

std::string messages_json(const harmony::StreamParser& p) {
  return harmony::messages_to_json(p.messages()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const char* c_str_or_null(std::string& storage, const std::optional<std::string>& value) {
  if (!value) return nullptr;
  storage = *value;
  return storage.c_str();
}

}  // namespace

extern "C" {

GPTOSS_API enum gptoss_status gptoss_harmony_render_options_init_sized(struct gptoss_harmony_render_options* options, size_t size) {
  return api::guard([&] { api::init_struct(options, size, default_render_options(), "options"); });
}

GPTOSS_API enum gptoss_status(gptoss_harmony_render_options_init)(struct gptoss_harmony_render_options* options) {
  return gptoss_harmony_render_options_init_sized(options, api::kPlainInitSize<gptoss_harmony_render_options>);
}

GPTOSS_API gptoss_status gptoss_harmony_render(gptoss_tokenizer_t tokenizer, const char* conversation_json,
                                               const struct gptoss_harmony_render_options* options,
                                               uint32_t* tokens_out, size_t capacity, size_t* n_tokens_out) {
  return api::guard([&] {
    api::require(tokenizer, "tokenizer");
    api::require(conversation_json, "conversation_json");
    api::require(n_tokens_out, "n_tokens_out");
    if (capacity > 0) api::require(tokens_out, "tokens_out");
    const gptoss_harmony_render_options o =
        api::read_struct(options, default_render_options(), "options");
    const bool for_completion = o.for_completion != 0;
    harmony::ConversationConfig config{o.auto_drop_analysis != 0};
    auto messages = harmony::conversation_from_json(harmony::parse_json_text(conversation_json, "conversation_json"));
    harmony::Pieces pieces = for_completion
                                 ? harmony::render_for_completion(messages, harmony::Role::assistant, config)
                                 : harmony::render_conversation(messages, config);
    std::vector<uint32_t> tokens = harmony::pieces_tokens(*tokenizer->tok, pieces);
    *n_tokens_out = tokens.size();
    if (tokens.size() > capacity)
      fail(gptoss_status_buffer_too_small, "{} tokens do not fit in a capacity of {}", tokens.size(), capacity);
    if (!tokens.empty()) std::memcpy(tokens_out, tokens.data(), tokens.size() * sizeof(uint32_t));
  });
}

GPTOSS_API gptoss_status gptoss_harmony_parser_create(gptoss_tokenizer_t tokenizer, const char* first_role,
                                                      int32_t strict, gptoss_harmony_parser_t* parser_out) {
  return api::guard([&] {
    api::require(tokenizer, "tokenizer");
    api::require(parser_out, "parser_out");
    std::optional<harmony::Role> role;
    if (first_role != nullptr) {
      role = harmony::role_from_name(first_role);
      if (!role)
        fail(gptoss_status_invalid_argument,
             "first_role: expected \"system\", \"developer\", \"user\", \"assistant\", \"tool\" or NULL, got \"{}\"",
             first_role);
    }
    auto handle = std::make_unique<gptoss_harmony_parser>();
    handle->parser = std::make_unique<harmony::StreamParser>(tokenizer->tok, role, strict != 0);
    *parser_out = handle.release();
  });
}

GPTOSS_API gptoss_status gptoss_harmony_parser_release(gptoss_harmony_parser_t parser) {
  return api::release(parser);
}

GPTOSS_API gptoss_status gptoss_harmony_parser_process_token(gptoss_harmony_parser_t parser, uint32_t token) {
  return api::guard([&] {
    api::require(parser, "parser");
    parser->parser->process(token);
  });
}

GPTOSS_API gptoss_status gptoss_harmony_parser_get_current(gptoss_harmony_parser_t parser,
                                                           struct gptoss_harmony_state* state) {
  return api::guard([&] {
    api::require(parser, "parser");
    api::require(state, "state");
    const harmony::StreamParser& p = *parser->parser;
    auto role = p.current_role();
    const auto& header = p.current_header();
    auto header_field = [&](auto member) -> std::optional<std::string> {
      return header ? (*header).*member : std::nullopt;
    };
    parser->delta = p.last_content_delta().value_or("");
    gptoss_harmony_state out{};
    using H = harmony::ParsedHeader;
    out.role = role ? c_str_or_null(parser->role, std::string(harmony::role_name(*role))) : nullptr;
    out.channel = c_str_or_null(parser->channel, header_field(&H::channel));
    out.recipient = c_str_or_null(parser->recipient, header_field(&H::recipient));
    out.content_type = c_str_or_null(parser->content_type, header_field(&H::content_type));
    out.content_delta = parser->delta.c_str();
    out.content_delta_size = parser->delta.size();
    out.num_messages = p.messages().size();
    api::write_struct(state, out, "state");
  });
}

GPTOSS_API gptoss_status gptoss_harmony_parser_finish(gptoss_harmony_parser_t parser, const char** json_out) {
  return api::guard([&] {
    api::require(parser, "parser");
    api::require(json_out, "json_out");
    parser->parser->process_eos();
    parser->messages_json = messages_json(*parser->parser);
    *json_out = parser->messages_json.c_str();
  });
}

GPTOSS_API gptoss_status gptoss_harmony_parser_get_messages(gptoss_harmony_parser_t parser, const char** json_out) {
  return api::guard([&] {
    api::require(parser, "parser");
    api::require(json_out, "json_out");
    parser->messages_json = messages_json(*parser->parser);
    *json_out = parser->messages_json.c_str();
  });
}

}  // extern "C"
