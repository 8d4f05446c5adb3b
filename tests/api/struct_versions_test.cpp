// Every struct of gptoss.h that begins with struct_size, passed at every size it has had in a
// published gptoss.h, below its first size, and at a size from the future. The sizes are the
// ones `git log -p -- include/gptoss.h` shows on x86-64 (written out here, not taken from the
// library's table in libgptoss/api/struct_versions.hpp, which this checks).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/c_api.hpp"

// The sizes below are those of 64-bit systems, the only ones the library is built for.
#if UINTPTR_MAX > 0xFFFFFFFFu

using namespace gptoss::test;

namespace {

constexpr unsigned char kUnrelated = 0xA5;  // bytes beyond the caller's struct

// A caller's struct of `size` bytes: the first `size` bytes of `value` with struct_size =
// size, then memory that is not the caller's struct (an older caller's stack, a newer caller's
// fields this library cannot know). `struct_size` overrides the size it declares.
template <typename T>
class CallerStruct {
 public:
  CallerStruct(const T& value, size_t size, size_t struct_size = 0)
      : bytes_(std::max(size, sizeof(T)) + 64, kUnrelated) {
    if (struct_size == 0) struct_size = size;
    std::memcpy(bytes_.data(), &value, std::min(size, sizeof(T)));
    std::memcpy(bytes_.data(), &struct_size, sizeof(size_t));
    before_ = bytes_;
  }
  T* get() { return reinterpret_cast<T*>(bytes_.data()); }
  T value() const {
    T v;
    std::memcpy(&v, bytes_.data(), sizeof(T));
    return v;
  }
  // Whether nothing from byte `from` on was written.
  bool untouched_from(size_t from) const {
    return std::equal(bytes_.begin() + from, bytes_.end(), before_.begin() + from);
  }

 private:
  std::vector<unsigned char> bytes_, before_;
};

}  // namespace

TEST_CASE("versioned structs: the sizes of git history are the library's",
          "[api][abi][fixed-device]") {
  CHECK(sizeof(gptoss_model_options) == 48);
  CHECK(sizeof(gptoss_model_info) == 152);
  CHECK(sizeof(gptoss_kvcache_options) == 32);
  CHECK(sizeof(gptoss_context_options) == 40);
  CHECK(sizeof(gptoss_sampler_options) == 56);
  CHECK(sizeof(gptoss_harmony_render_options) == 16);
  CHECK(sizeof(gptoss_harmony_state) == 64);
  CHECK(sizeof(gptoss_constraint_options) == 24);
  CHECK(sizeof(gptoss_draft_options) == 24);
  CHECK(sizeof(gptoss_speculator_options) == 32);
  CHECK(sizeof(gptoss_speculator_stats) == 48);
}

TEST_CASE("model options at every size", "[api][abi][fixed-device]") {
  const std::string path = logits_dir() + "/model.gguf";
  gptoss_model_options o;
  gptoss_model_options_init(&o);
  o.backend = "cpu";
  o.precision = static_cast<gptoss_precision>(5);  // invalid: reading it fails the call
  auto create = [&](gptoss_model_options* options, gptoss_model_t* m) {
    return gptoss_model_create_with_options(path.c_str(), options, m);
  };

  SECTION("40 bytes (before `precision`): precision is not read, it defaults") {
    CallerStruct<gptoss_model_options> s(o, 40);
    gptoss_model_t m = nullptr;
    GPTOSS_REQUIRE_OK(create(s.get(), &m));
    ModelPtr owned(m);
    gptoss_model_info info{};
    info.struct_size = sizeof(info);
    GPTOSS_REQUIRE_OK(gptoss_model_get_info(m, &info));
    CHECK(std::string(info.backend) == "cpu");  // the fields it covers are read
  }
  SECTION("48 bytes and a future 64: precision is read") {
    for (size_t size : {48, 64}) {
      CallerStruct<gptoss_model_options> s(o, size);
      gptoss_model_t m = nullptr;
      CHECK(create(s.get(), &m) == gptoss_status_invalid_argument);
      CHECK(last_error().find("precision") != std::string::npos);
      CHECK(m == nullptr);
    }
  }
  SECTION("smaller than the first version: invalid_argument naming struct_size") {
    for (size_t size : {0, 8, 32, 39}) {
      CallerStruct<gptoss_model_options> s(o, size);
      gptoss_model_t m = nullptr;
      CHECK(create(s.get(), &m) == gptoss_status_invalid_argument);
      CHECK(last_error().find("struct_size is " + std::to_string(size)) != std::string::npos);
    }
  }
  SECTION("an uninitialized struct_size (garbage) is refused") {
    CallerStruct<gptoss_model_options> s(o, sizeof(o), size_t(0xA5A5A5A5A5A5A5A5ull));
    gptoss_model_t m = nullptr;
    CHECK(create(s.get(), &m) == gptoss_status_invalid_argument);
  }
}

TEST_CASE("model info at every size: only the caller's fields are written", "[api][abi]") {
  auto model = load_conformance_model(Format::gguf);
  gptoss_model_info zero{};
  for (size_t size : {128, 136, 152, 200}) {
    CAPTURE(size);
    CallerStruct<gptoss_model_info> s(zero, size);
    GPTOSS_REQUIRE_OK(gptoss_model_get_info(model.get(), s.get()));
    const gptoss_model_info info = s.value();
    CHECK(info.struct_size == size);
    CHECK(info.vocab_size == 201088);
    CHECK(std::string(info.format) == "gguf");
    if (size == 128) {
      CHECK(s.untouched_from(128));  // decode_weight_bytes is not the caller's
    } else if (size == 136) {
      CHECK(info.decode_weight_bytes > 0);
      CHECK(s.untouched_from(136));  // batch_invariant and kernels are not the caller's
    } else {
      CHECK(info.decode_weight_bytes > 0);
      REQUIRE(info.kernels != nullptr);
      // The CPU backend names its kernel level; the strict test devices (runtime.strict) name none.
      if (std::string(info.backend) == "cpu") CHECK(std::string(info.kernels) != "");
      CHECK(s.untouched_from(152));  // a newer caller's fields stay as they were
    }
  }
  CallerStruct<gptoss_model_info> small(zero, 120);
  CHECK(gptoss_model_get_info(model.get(), small.get()) == gptoss_status_invalid_argument);
  CHECK(small.untouched_from(sizeof(size_t)));  // on failure nothing is written
}

TEST_CASE("KV cache options at every size, defaults, and NULL", "[api][abi]") {
  auto model = load_conformance_model(Format::gguf);
  gptoss_kvcache_options o;
  gptoss_kvcache_options_init(&o);
  CHECK(o.max_sequences == 8);
  CHECK(o.dtype == gptoss_kv_dtype_f32);
  o.capacity_tokens = 160;
  for (size_t size : {32, 48}) {
    CAPTURE(size);
    CallerStruct<gptoss_kvcache_options> s(o, size);
    gptoss_kvcache_t kv = nullptr;
    GPTOSS_REQUIRE_OK(gptoss_kvcache_create(model.get(), s.get(), &kv));
    KvPtr owned(kv);
    size_t free_tokens = 0;
    GPTOSS_REQUIRE_OK(gptoss_kvcache_get_free_tokens(kv, &free_tokens));
    CHECK(free_tokens == 160);
  }
  CallerStruct<gptoss_kvcache_options> small(o, 24);
  gptoss_kvcache_t kv = nullptr;
  CHECK(gptoss_kvcache_create(model.get(), small.get(), &kv) == gptoss_status_invalid_argument);
  CHECK(last_error().find("struct_size") != std::string::npos);
  CHECK(gptoss_kvcache_create(model.get(), nullptr, &kv) == gptoss_status_invalid_argument);
  CHECK(last_error().find("capacity_tokens") != std::string::npos);
  o.dtype = static_cast<gptoss_kv_dtype>(9);
  CHECK(gptoss_kvcache_create(model.get(), &o, &kv) == gptoss_status_invalid_argument);
  CHECK(kv == nullptr);
}

TEST_CASE("context options at every size", "[api][abi]") {
  auto model = load_conformance_model(Format::gguf);
  gptoss_context_options o;
  gptoss_context_options_init(&o);
  o.context_length = 96;
  for (size_t size : {40, 72}) {
    CAPTURE(size);
    CallerStruct<gptoss_context_options> s(o, size);
    gptoss_context_t c = nullptr;
    GPTOSS_REQUIRE_OK(gptoss_context_create_with_options(model.get(), s.get(), &c));
    ContextPtr owned(c);
    size_t max_tokens = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_get_max_tokens(c, &max_tokens));
    CHECK(max_tokens == 96);
  }
  CallerStruct<gptoss_context_options> small(o, 32);
  gptoss_context_t c = nullptr;
  CHECK(gptoss_context_create_with_options(model.get(), small.get(), &c) ==
        gptoss_status_invalid_argument);
  CHECK(c == nullptr);
}

TEST_CASE("sampler options at every size", "[api][abi][fixed-device]") {
  gptoss_sampler_options o;
  gptoss_sampler_options_init(&o);
  o.top_p = 1.5f;  // invalid: reading it fails the call
  for (size_t size : {56, 80}) {
    CAPTURE(size);
    CallerStruct<gptoss_sampler_options> s(o, size);
    gptoss_sampler_t sampler = nullptr;
    CHECK(gptoss_sampler_create(s.get(), &sampler) == gptoss_status_invalid_argument);
    CHECK(last_error().find("top_p") != std::string::npos);
  }
  gptoss_sampler_options_init(&o);
  CallerStruct<gptoss_sampler_options> future(o, 80);
  gptoss_sampler_t sampler = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_sampler_create(future.get(), &sampler));
  SamplerPtr owned(sampler);
  CallerStruct<gptoss_sampler_options> small(o, 48);
  gptoss_sampler_t none = nullptr;
  CHECK(gptoss_sampler_create(small.get(), &none) == gptoss_status_invalid_argument);
  CHECK(none == nullptr);
}

TEST_CASE("Harmony render options and parser state at every size",
          "[api][abi][harmony][fixed-device]") {
  gptoss_tokenizer_t tok = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_tokenizer_create_from_file(tokenizer_json().c_str(), &tok));
  const char* json = R"([{"role":"user","content":"Hi"}])";
  auto render = [&](const gptoss_harmony_render_options* o, size_t* n) {
    std::vector<uint32_t> out(64);
    return gptoss_harmony_render(tok, json, o, out.data(), out.size(), n);
  };
  size_t with_start = 0;
  GPTOSS_REQUIRE_OK(render(nullptr, &with_start));
  gptoss_harmony_render_options o;
  gptoss_harmony_render_options_init(&o);
  o.for_completion = 0;
  for (size_t size : {16, 40}) {
    CAPTURE(size);
    CallerStruct<gptoss_harmony_render_options> s(o, size);
    size_t n = 0;
    GPTOSS_REQUIRE_OK(render(s.get(), &n));
    CHECK(n == with_start - 2);  // without the closing <|start|>assistant
  }
  for (size_t size : {8, 12}) {
    CallerStruct<gptoss_harmony_render_options> s(o, size);
    size_t n = 0;
    CHECK(render(s.get(), &n) == gptoss_status_invalid_argument);
  }

  gptoss_harmony_parser_t p = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_harmony_parser_create(tok, "assistant", 0, &p));
  uint32_t message = 0;
  GPTOSS_REQUIRE_OK(
      gptoss_tokenizer_get_special_token_id(tok, gptoss_special_token_message, &message));
  GPTOSS_REQUIRE_OK(gptoss_harmony_parser_process_token(p, message));
  gptoss_harmony_state zero{};
  for (size_t size : {64, 96}) {
    CAPTURE(size);
    CallerStruct<gptoss_harmony_state> s(zero, size);
    GPTOSS_REQUIRE_OK(gptoss_harmony_parser_get_current(p, s.get()));
    CHECK(std::string(s.value().role) == "assistant");
    CHECK(s.value().struct_size == size);
    CHECK(s.untouched_from(64));
  }
  CallerStruct<gptoss_harmony_state> small(zero, 56);
  CHECK(gptoss_harmony_parser_get_current(p, small.get()) == gptoss_status_invalid_argument);
  CHECK(small.untouched_from(sizeof(size_t)));
  gptoss_harmony_parser_release(p);
  gptoss_tokenizer_release(tok);
}

TEST_CASE("options init: never writes past the caller's struct", "[api][abi][fixed-device]") {
  // gptoss_model_options as 0.1 had it (40 bytes: up to tokenizer_path), as today, and from the
  // future: the defaults of the fields the size holds, zeros for the rest, nothing beyond.
  for (size_t size : {40, 48, 64}) {
    CAPTURE(size);
    std::array<unsigned char, 128> bytes;  // the caller's struct, then memory that is not
    bytes.fill(kUnrelated);
    GPTOSS_REQUIRE_OK(gptoss_model_options_init_sized(reinterpret_cast<gptoss_model_options*>(bytes.data()), size));
    CHECK(std::all_of(bytes.begin() + std::ptrdiff_t(size), bytes.end(), [](unsigned char b) { return b == kUnrelated; }));
    gptoss_model_options o;
    std::memcpy(&o, bytes.data(), sizeof o);
    CHECK(o.struct_size == size);
    CHECK(std::string(o.backend) == "auto");
    CHECK(o.use_mmap == 1);
    if (size >= 48) CHECK(o.precision == gptoss_precision_fast);
  }
  // Below the first version, NULL: refused, nothing written.
  gptoss_model_options o;
  std::memset(&o, 0x5A, sizeof o);
  CHECK(gptoss_model_options_init_sized(&o, 32) == gptoss_status_invalid_argument);
  CHECK(last_error().find("at least 40") != std::string::npos);
  CHECK(o.struct_size == 0x5A5A5A5A5A5A5A5Aull);
  CHECK(gptoss_model_options_init_sized(nullptr, sizeof o) == gptoss_status_invalid_argument);

  // The macro passes the caller's sizeof; the plain symbol (what a program built against 0.2
  // calls) writes the 0.2 struct: 48 bytes, whatever the struct has grown to since.
  GPTOSS_REQUIRE_OK(gptoss_model_options_init(&o));
  CHECK(o.struct_size == sizeof o);
  std::array<unsigned char, 128> old;
  old.fill(kUnrelated);
  GPTOSS_REQUIRE_OK((gptoss_model_options_init)(reinterpret_cast<gptoss_model_options*>(old.data())));
  size_t old_size = 0;
  std::memcpy(&old_size, old.data(), sizeof old_size);
  CHECK(old_size == 48);
  CHECK(std::all_of(old.begin() + 48, old.end(), [](unsigned char b) { return b == kUnrelated; }));

  // Every other options struct: the macro and the symbol at today's size.
  gptoss_kvcache_options k;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_options_init(&k));
  CHECK(k.struct_size == 32);
  gptoss_context_options c;
  GPTOSS_REQUIRE_OK(gptoss_context_options_init(&c));
  CHECK(c.struct_size == 40);
  gptoss_sampler_options so;
  GPTOSS_REQUIRE_OK((gptoss_sampler_options_init)(&so));
  CHECK(so.struct_size == 56);
  CHECK(so.top_p == 1.0f);
  gptoss_harmony_render_options r;
  GPTOSS_REQUIRE_OK(gptoss_harmony_render_options_init(&r));
  CHECK(r.struct_size == 16);
  gptoss_constraint_options co;
  GPTOSS_REQUIRE_OK((gptoss_constraint_options_init)(&co));
  CHECK(co.struct_size == 16);
  CHECK(co.max_reasoning_tokens < 0);
  gptoss_draft_options d;
  GPTOSS_REQUIRE_OK((gptoss_draft_options_init)(&d));
  CHECK(d.struct_size == 24);
  CHECK(d.n_stop_tokens == 0);
  gptoss_speculator_options sp;
  GPTOSS_REQUIRE_OK((gptoss_speculator_options_init)(&sp));
  CHECK(sp.struct_size == 32);
  CHECK(sp.max_draft == 8);
  CHECK(sp.prompt_lookup == 1);
  CHECK(sp.jump_forward == 1);
  CHECK(sp.draft_model == nullptr);
  CHECK(sp.cost_bound == 1);
}

#endif  // 64-bit
