// libgptoss for C++ (C++20, header-only): ownership of the C API's handles and its failures as
// exceptions. Everything here is inline code over include/gptoss.h and nothing else, so it
// carries no ABI of its own: programs built against it keep linking to libgptoss.so.0.
//
//  - A failed call throws gptoss::error: the status, the call that failed and the library's
//    message (gptoss_get_last_error_message, read on the failing thread).
//  - gptoss::model, tokenizer, kvcache, context, sampler, speculator, harmony_parser, grammar,
//    constraint and stop_strings each own one reference to a C handle: move-only, released by their
//    destructor. get() lends the C handle (to the free functions below, or to the C API
//    itself); release() gives the reference up; a default-constructed one holds nothing.
//  - The free functions take C handles, owned or borrowed, and wrap the C API's
//    out-parameters and its capacity protocol (ask, retry once with the size it reports).
//  - Text is std::string_view, token ids std::span<const uint32_t>. Views returned into a
//    handle (token bytes, parser JSON, stop-string output) live as the C API says they do.
//
// Thread safety is the C API's (include/gptoss.h): a model and a tokenizer may be used from
// any number of threads at once; the other handles by one thread at a time.
// docs/cpp.md has an example.
#ifndef GPTOSS_HPP_
#define GPTOSS_HPP_

#include <gptoss.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gptoss {

// A libgptoss call that did not return gptoss_status_success.
class error : public std::runtime_error {
 public:
  // what(): "<call>: <status>: <message>" (": <message>" left out when there is none).
  error(gptoss_status status, std::string call, std::string message)
      : std::runtime_error(describe(status, call, message)), status_(status),
        call_(std::move(call)), message_(std::move(message)) {}

  gptoss_status status() const noexcept { return status_; }
  // What failed: the C function's name, or the caller's words for it.
  const std::string& call() const noexcept { return call_; }
  // The library's own message (gptoss_get_last_error_message); may be empty.
  const std::string& message() const noexcept { return message_; }

 private:
  static std::string describe(gptoss_status status, const std::string& call,
                              const std::string& message) {
    std::string what = call + ": " + gptoss_status_to_string(status);
    if (!message.empty()) what += ": " + message;
    return what;
  }

  gptoss_status status_;
  std::string call_;
  std::string message_;
};

// Throws gptoss::error unless `status` is success; `call` names what failed.
inline void check(gptoss_status status, const char* call) {
  if (status == gptoss_status_success) return;
  const char* message = gptoss_get_last_error_message();
  throw error(status, call, message ? message : "");
}

// One reference to a C handle of type Raw, dropped with Release.
template <typename Raw, gptoss_status (*Release)(Raw)>
class handle {
 public:
  using c_type = Raw;

  handle() noexcept = default;
  // Takes over a reference the caller holds (from a *_create or *_retain call).
  explicit handle(Raw adopted) noexcept : raw_(adopted) {}
  handle(handle&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
  handle& operator=(handle&& other) noexcept {
    if (this != &other) reset(std::exchange(other.raw_, nullptr));
    return *this;
  }
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;
  ~handle() { reset(); }

  Raw get() const noexcept { return raw_; }
  explicit operator bool() const noexcept { return raw_ != nullptr; }
  // Gives the reference to the caller, who must release it.
  [[nodiscard]] Raw release() noexcept { return std::exchange(raw_, nullptr); }
  // Drops the reference held (if any) and takes over `adopted`.
  void reset(Raw adopted = nullptr) noexcept {
    if (Raw old = std::exchange(raw_, adopted)) Release(old);
  }

 private:
  Raw raw_ = nullptr;
};

// ---- Free functions over C handles -------------------------------------------------------

namespace detail {
// The capacity protocol: `call(out, capacity, &n)` with a guess, again with the n it reports.
template <typename T, typename Call>
std::vector<T> with_capacity(size_t guess, const char* name, Call call) {
  std::vector<T> out(guess);
  size_t n = 0;
  gptoss_status status = call(out.data(), out.size(), &n);
  if (status == gptoss_status_buffer_too_small) {
    out.resize(n);
    status = call(out.data(), out.size(), &n);
  }
  check(status, name);
  out.resize(n);
  return out;
}
}  // namespace detail

// Text to ids; `flags` as gptoss_tokenizer_encode (GPTOSS_ENCODE_ALLOW_SPECIAL).
inline std::vector<uint32_t> encode(gptoss_tokenizer_t tokenizer, std::string_view text,
                                    uint32_t flags = 0) {
  return detail::with_capacity<uint32_t>(text.size() / 2 + 16, "gptoss_tokenizer_encode",
                                         [&](uint32_t* out, size_t capacity, size_t* n) {
                                           return gptoss_tokenizer_encode(tokenizer, text.data(),
                                                                          text.size(), flags, out,
                                                                          capacity, n);
                                         });
}

// Bytes of one token (may end inside a UTF-8 character); they live as long as the tokenizer.
inline std::string_view token_bytes(gptoss_tokenizer_t tokenizer, uint32_t token) {
  const void* bytes = nullptr;
  size_t size = 0;
  check(gptoss_tokenizer_decode(tokenizer, token, &bytes, &size), "gptoss_tokenizer_decode");
  return {static_cast<const char*>(bytes), size};
}

// Bytes of a token sequence (special tokens as their strings).
inline std::string decode(gptoss_tokenizer_t tokenizer, std::span<const uint32_t> tokens) {
  const std::vector<char> bytes =
      detail::with_capacity<char>(tokens.size() * 4 + 16, "gptoss_tokenizer_decode_tokens",
                                  [&](char* out, size_t capacity, size_t* n) {
                                    return gptoss_tokenizer_decode_tokens(
                                        tokenizer, tokens.data(), tokens.size(), out, capacity, n);
                                  });
  return {bytes.begin(), bytes.end()};
}

inline uint32_t special_token(gptoss_tokenizer_t tokenizer, gptoss_special_token type) {
  uint32_t id = 0;
  check(gptoss_tokenizer_get_special_token_id(tokenizer, type, &id),
        "gptoss_tokenizer_get_special_token_id");
  return id;
}

// A Harmony conversation (JSON) rendered to ids; `options` null: the defaults (for completion,
// analysis of earlier turns dropped).
inline std::vector<uint32_t> render(gptoss_tokenizer_t tokenizer,
                                    const std::string& conversation_json,
                                    const gptoss_harmony_render_options* options = nullptr) {
  gptoss_harmony_render_options defaults;
  if (!options) {
    check(gptoss_harmony_render_options_init(&defaults), "gptoss_harmony_render_options_init");
    options = &defaults;
  }
  return detail::with_capacity<uint32_t>(conversation_json.size() / 2 + 64, "gptoss_harmony_render",
                                         [&](uint32_t* out, size_t capacity, size_t* n) {
                                           return gptoss_harmony_render(tokenizer,
                                                                        conversation_json.c_str(),
                                                                        options, out, capacity, n);
                                         });
}

inline gptoss_model_info model_info(gptoss_model_t model) {
  gptoss_model_info info{};
  info.struct_size = sizeof info;
  check(gptoss_model_get_info(model, &info), "gptoss_model_get_info");
  return info;
}

inline void append(gptoss_context_t context, std::span<const uint32_t> tokens) {
  check(gptoss_context_append_tokens(context, tokens.size(), tokens.data()),
        "gptoss_context_append_tokens");
}

inline void process(gptoss_context_t context) {
  check(gptoss_context_process(context), "gptoss_context_process");
}

// Processes several contexts together (gptoss_contexts_process).
inline void process(std::span<gptoss_context_t> contexts) {
  check(gptoss_contexts_process(contexts.data(), contexts.size()), "gptoss_contexts_process");
}

// Processes what is pending, then draws the next token (not appended).
inline uint32_t sample(gptoss_context_t context, gptoss_sampler_t sampler) {
  uint32_t token = 0;
  check(gptoss_context_sample(context, sampler, &token), "gptoss_context_sample");
  return token;
}

// Verifies `draft` in one step (gptoss_context_sample_draft): the tokens plain decoding gives,
// the kept drafted ones appended, the last one not. `stop`: tokens that end the run.
inline std::vector<uint32_t> sample_draft(gptoss_context_t context, gptoss_sampler_t sampler,
                                          std::span<const uint32_t> draft,
                                          std::span<const uint32_t> stop = {}) {
  gptoss_draft_options options;
  check(gptoss_draft_options_init(&options), "gptoss_draft_options_init");
  options.stop_tokens = stop.data();
  options.n_stop_tokens = stop.size();
  std::vector<uint32_t> out(draft.size() + 1);
  size_t n = 0;
  check(gptoss_context_sample_draft(context, sampler, draft.data(), draft.size(), &options,
                                    out.data(), out.size(), &n),
        "gptoss_context_sample_draft");
  out.resize(n);
  return out;
}

// One speculative step (gptoss_speculator_step): 1..max_tokens tokens, the last not appended.
inline std::vector<uint32_t> speculate(gptoss_speculator_t speculator, gptoss_context_t context,
                                       gptoss_sampler_t sampler, size_t max_tokens,
                                       std::span<const uint32_t> stop = {}) {
  gptoss_draft_options options;
  check(gptoss_draft_options_init(&options), "gptoss_draft_options_init");
  options.stop_tokens = stop.data();
  options.n_stop_tokens = stop.size();
  std::vector<uint32_t> out(max_tokens);
  size_t n = 0;
  check(gptoss_speculator_step(speculator, context, sampler, &options, out.data(), out.size(), &n),
        "gptoss_speculator_step");
  out.resize(n);
  return out;
}

inline gptoss_speculator_stats speculator_stats(gptoss_speculator_t speculator) {
  gptoss_speculator_stats s{};
  s.struct_size = sizeof s;
  check(gptoss_speculator_get_stats(speculator, &s), "gptoss_speculator_get_stats");
  return s;
}

inline size_t num_tokens(gptoss_context_t context) {
  size_t n = 0;
  check(gptoss_context_get_num_tokens(context, &n), "gptoss_context_get_num_tokens");
  return n;
}

inline size_t num_processed_tokens(gptoss_context_t context) {
  size_t n = 0;
  check(gptoss_context_get_num_processed_tokens(context, &n),
        "gptoss_context_get_num_processed_tokens");
  return n;
}

inline size_t max_tokens(gptoss_context_t context) {
  size_t n = 0;
  check(gptoss_context_get_max_tokens(context, &n), "gptoss_context_get_max_tokens");
  return n;
}

// The context's tokens, processed or not.
inline std::vector<uint32_t> tokens(gptoss_context_t context) {
  std::vector<uint32_t> ids(num_tokens(context));
  size_t n = 0;
  check(gptoss_context_get_tokens(context, ids.data(), ids.size(), &n),
        "gptoss_context_get_tokens");
  ids.resize(n);
  return ids;
}

// Logits of the last processed token into `out` (at least the vocabulary); their count.
inline size_t logits(gptoss_context_t context, std::span<float> out) {
  size_t n = 0;
  check(gptoss_context_get_logits(context, out.data(), out.size(), &n),
        "gptoss_context_get_logits");
  return n;
}

// ---- Owning handles ----------------------------------------------------------------------

class tokenizer : public handle<gptoss_tokenizer_t, gptoss_tokenizer_release> {
 public:
  using handle::handle;
  // A Hugging Face tokenizer.json.
  static tokenizer from_file(const std::string& path) {
    gptoss_tokenizer_t raw = nullptr;
    check(gptoss_tokenizer_create_from_file(path.c_str(), &raw),
          "gptoss_tokenizer_create_from_file");
    return tokenizer(raw);
  }
  std::vector<uint32_t> encode(std::string_view text, uint32_t flags = 0) const {
    return gptoss::encode(get(), text, flags);
  }
  std::string_view token_bytes(uint32_t token) const { return gptoss::token_bytes(get(), token); }
  std::string decode(std::span<const uint32_t> tokens) const {
    return gptoss::decode(get(), tokens);
  }
  uint32_t special_token(gptoss_special_token type) const {
    return gptoss::special_token(get(), type);
  }
  std::vector<uint32_t> render(const std::string& conversation_json,
                               const gptoss_harmony_render_options* options = nullptr) const {
    return gptoss::render(get(), conversation_json, options);
  }
};

class model : public handle<gptoss_model_t, gptoss_model_release> {
 public:
  using handle::handle;
  // A Hugging Face directory or a .gguf file; `options` null: the defaults.
  static model load(const std::string& path, const gptoss_model_options* options = nullptr,
                    const char* call = "gptoss_model_create_with_options") {
    gptoss_model_options defaults;
    if (!options) {
      check(gptoss_model_options_init(&defaults), "gptoss_model_options_init");
      options = &defaults;
    }
    gptoss_model_t raw = nullptr;
    check(gptoss_model_create_with_options(path.c_str(), options, &raw), call);
    return model(raw);
  }
  // The model's tokenizer (a reference of its own).
  gptoss::tokenizer get_tokenizer() const {
    gptoss_tokenizer_t raw = nullptr;
    check(gptoss_model_get_tokenizer(get(), &raw), "gptoss_model_get_tokenizer");
    return gptoss::tokenizer(raw);
  }
  gptoss_model_info info() const { return model_info(get()); }
};

class kvcache : public handle<gptoss_kvcache_t, gptoss_kvcache_release> {
 public:
  using handle::handle;
  static kvcache create(gptoss_model_t model, const gptoss_kvcache_options& options,
                        const char* call = "gptoss_kvcache_create") {
    gptoss_kvcache_t raw = nullptr;
    check(gptoss_kvcache_create(model, &options, &raw), call);
    return kvcache(raw);
  }
  size_t free_tokens() const {
    size_t n = 0;
    check(gptoss_kvcache_get_free_tokens(get(), &n), "gptoss_kvcache_get_free_tokens");
    return n;
  }
};

class context : public handle<gptoss_context_t, gptoss_context_release> {
 public:
  using handle::handle;
  // `options` null: the defaults (the model's full length, a private KV pool).
  static context create(gptoss_model_t model, const gptoss_context_options* options = nullptr,
                        const char* call = "gptoss_context_create_with_options") {
    gptoss_context_options defaults;
    if (!options) {
      check(gptoss_context_options_init(&defaults), "gptoss_context_options_init");
      options = &defaults;
    }
    gptoss_context_t raw = nullptr;
    check(gptoss_context_create_with_options(model, options, &raw), call);
    return context(raw);
  }
  void append(std::span<const uint32_t> ids) const { gptoss::append(get(), ids); }
  void process() const { gptoss::process(get()); }
  uint32_t sample(gptoss_sampler_t sampler) const { return gptoss::sample(get(), sampler); }
  std::vector<uint32_t> tokens() const { return gptoss::tokens(get()); }
  size_t num_tokens() const { return gptoss::num_tokens(get()); }
  void truncate(size_t n) const {
    check(gptoss_context_truncate(get(), n), "gptoss_context_truncate");
  }
  void reset_tokens() const { check(gptoss_context_reset(get()), "gptoss_context_reset"); }
};

class sampler : public handle<gptoss_sampler_t, gptoss_sampler_release> {
 public:
  using handle::handle;
  // `options` null: the defaults (temperature 1, seed 0).
  static sampler create(const gptoss_sampler_options* options = nullptr,
                        const char* call = "gptoss_sampler_create") {
    gptoss_sampler_options defaults;
    if (!options) {
      check(gptoss_sampler_options_init(&defaults), "gptoss_sampler_options_init");
      options = &defaults;
    }
    gptoss_sampler_t raw = nullptr;
    check(gptoss_sampler_create(options, &raw), call);
    return sampler(raw);
  }
  // The sampler retains the constraint; null detaches it.
  void set_constraint(gptoss_constraint_t constraint) const {
    check(gptoss_sampler_set_constraint(get(), constraint), "gptoss_sampler_set_constraint");
  }
};

// One sequence's speculative decoding loop (gptoss_speculator_*).
class speculator : public handle<gptoss_speculator_t, gptoss_speculator_release> {
 public:
  using handle::handle;
  // `options` null: the defaults (prompt lookup and jump-forward, up to 8 drafted tokens).
  static speculator create(const gptoss_speculator_options* options = nullptr) {
    gptoss_speculator_t raw = nullptr;
    check(gptoss_speculator_create(options, &raw), "gptoss_speculator_create");
    return speculator(raw);
  }
  // One step: 1..max_tokens tokens, the last one not appended (gptoss_speculator_step).
  std::vector<uint32_t> step(gptoss_context_t context, gptoss_sampler_t sampler, size_t max_tokens,
                             std::span<const uint32_t> stop = {}) const {
    return gptoss::speculate(get(), context, sampler, max_tokens, stop);
  }
  gptoss_speculator_stats stats() const { return gptoss::speculator_stats(get()); }
  void reset_sequence() const { check(gptoss_speculator_reset(get()), "gptoss_speculator_reset"); }
};

class harmony_parser : public handle<gptoss_harmony_parser_t, gptoss_harmony_parser_release> {
 public:
  using handle::handle;
  static harmony_parser create(gptoss_tokenizer_t tokenizer, const char* first_role, bool strict) {
    gptoss_harmony_parser_t raw = nullptr;
    check(gptoss_harmony_parser_create(tokenizer, first_role, strict ? 1 : 0, &raw),
          "gptoss_harmony_parser_create");
    return harmony_parser(raw);
  }
  void process_token(uint32_t token) const {
    check(gptoss_harmony_parser_process_token(get(), token), "gptoss_harmony_parser_process_token");
  }
  gptoss_harmony_state current() const {
    gptoss_harmony_state state{};
    state.struct_size = sizeof state;
    check(gptoss_harmony_parser_get_current(get(), &state), "gptoss_harmony_parser_get_current");
    return state;
  }
  // The completed messages as JSON (valid until the next call on the parser).
  std::string_view messages() const {
    const char* json = nullptr;
    check(gptoss_harmony_parser_get_messages(get(), &json), "gptoss_harmony_parser_get_messages");
    return json ? json : "";
  }
  // Ends the output; every message as JSON (valid until the next call on the parser).
  std::string_view finish() const {
    const char* json = nullptr;
    check(gptoss_harmony_parser_finish(get(), &json), "gptoss_harmony_parser_finish");
    return json ? json : "";
  }
};

class grammar : public handle<gptoss_grammar_t, gptoss_grammar_release> {
 public:
  using handle::handle;
  static grammar json_schema(gptoss_tokenizer_t tokenizer, const std::string& schema_json) {
    gptoss_grammar_t raw = nullptr;
    check(gptoss_grammar_create_json_schema(tokenizer, schema_json.c_str(), &raw),
          "gptoss_grammar_create_json_schema");
    return grammar(raw);
  }
  static grammar harmony(gptoss_tokenizer_t tokenizer, const std::string& spec_json) {
    gptoss_grammar_t raw = nullptr;
    check(gptoss_grammar_create_harmony(tokenizer, spec_json.c_str(), &raw),
          "gptoss_grammar_create_harmony");
    return grammar(raw);
  }
};

class constraint : public handle<gptoss_constraint_t, gptoss_constraint_release> {
 public:
  using handle::handle;
  // `options` null: the defaults (no reasoning or token limit).
  static constraint create(gptoss_grammar_t grammar,
                           const gptoss_constraint_options* options = nullptr) {
    gptoss_constraint_options defaults;
    if (!options) {
      check(gptoss_constraint_options_init(&defaults), "gptoss_constraint_options_init");
      options = &defaults;
    }
    gptoss_constraint_t raw = nullptr;
    check(gptoss_constraint_create(grammar, options, &raw), "gptoss_constraint_create");
    return constraint(raw);
  }
  void accept(uint32_t token) const {
    check(gptoss_constraint_accept_token(get(), token), "gptoss_constraint_accept_token");
  }
  // The allowed tokens as a bit mask (GPTOSS_MASK_WORDS(vocabulary) words); words written.
  size_t fill_mask(std::span<uint32_t> mask) const {
    size_t n = 0;
    check(gptoss_constraint_fill_mask(get(), mask.data(), mask.size(), &n),
          "gptoss_constraint_fill_mask");
    return n;
  }
  bool finished() const {
    int32_t done = 0;
    check(gptoss_constraint_is_finished(get(), &done), "gptoss_constraint_is_finished");
    return done != 0;
  }
  // Tokens of the shortest completion from here; < 0 when none exists.
  int64_t min_tokens() const {
    int64_t n = 0;
    check(gptoss_constraint_min_tokens(get(), &n), "gptoss_constraint_min_tokens");
    return n;
  }
  bool closed_by_budget() const {
    int32_t closed = 0;
    check(gptoss_constraint_closed_by_budget(get(), &closed), "gptoss_constraint_closed_by_budget");
    return closed != 0;
  }
  void restart() const { check(gptoss_constraint_reset(get()), "gptoss_constraint_reset"); }
};

class stop_strings : public handle<gptoss_stop_strings_t, gptoss_stop_strings_release> {
 public:
  using handle::handle;
  // What push() lets through, and which stop string ended the text (-1: none yet).
  struct output {
    std::string_view text;
    int32_t stop_index = -1;
  };
  // `stops`: NUL-terminated strings.
  static stop_strings create(std::span<const char* const> stops) {
    gptoss_stop_strings_t raw = nullptr;
    check(gptoss_stop_strings_create(stops.data(), stops.size(), &raw),
          "gptoss_stop_strings_create");
    return stop_strings(raw);
  }
  // The views are valid until the next call on the handle.
  output push(std::string_view text) const {
    const char* emit = nullptr;
    size_t size = 0;
    int32_t hit = -1;
    check(gptoss_stop_strings_push(get(), text.data(), text.size(), &emit, &size, &hit),
          "gptoss_stop_strings_push");
    return {{emit, size}, hit};
  }
  std::string_view flush() const {
    const char* emit = nullptr;
    size_t size = 0;
    check(gptoss_stop_strings_flush(get(), &emit, &size), "gptoss_stop_strings_flush");
    return {emit, size};
  }
};

}  // namespace gptoss

#endif  // GPTOSS_HPP_
