// gptoss_context_set_checkpoint: truncating a long sequence back to where the next prompt
// diverges keeps the prefix's KV only if the sliding-window layers still hold the window
// before that point; a checkpoint keeps that window.
#include <vector>

#include "support/c_api.hpp"

using namespace gptoss::test;

namespace {

constexpr size_t kPrompt = 200;  // p3_long has 300 tokens: 200 of prompt, 100 of "decode"

// A context of a one-sequence shared pool: the pool must have reserved the checkpoint's pages.
struct Fixture {
  ModelPtr model = load_conformance_model(Format::hf, 0, gptoss_precision_exact);
  std::vector<uint32_t> ids = prompt_ids("p3_long");
  KvPtr kv;
  ContextPtr ctx;

  Fixture() {
    kv = make_pool(model.get(), 512, 1);
    ctx = make_context(model.get(), 512, 64, kv.get());
  }

  // Prefill of the prompt, optionally a checkpoint at its end, then the rest token by token
  // the way a decode loop appends sampled tokens.
  void run(bool checkpoint) {
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), kPrompt, ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
    if (checkpoint) GPTOSS_REQUIRE_OK(gptoss_context_set_checkpoint(ctx.get(), kPrompt));
    for (size_t i = kPrompt; i < ids.size(); ++i) {
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), 1, &ids[i]));
      GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
    }
  }

  size_t processed() const {
    size_t n = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_get_num_processed_tokens(ctx.get(), &n));
    return n;
  }

  // Logits of the first n tokens processed by a fresh private context in one prefill.
  std::vector<float> fresh_logits(size_t n) const {
    auto fresh = make_context(model.get(), 512);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(fresh.get(), n, ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(fresh.get()));
    return logits_of(fresh.get());
  }
};

}  // namespace

TEST_CASE("without a checkpoint, truncating behind the sliding window recomputes everything",
          "[api][checkpoint]") {
  Fixture f;
  f.run(false);
  GPTOSS_REQUIRE_OK(gptoss_context_truncate(f.ctx.get(), kPrompt + 1));
  CHECK(f.processed() == 0);
}

TEST_CASE("a checkpoint keeps the window: truncation resumes at the checkpoint",
          "[api][checkpoint]") {
  Fixture f;
  f.run(true);
  // The next prompt shares the first token of the answer (e.g. <|channel|>): resume from the
  // checkpoint and recompute that one token.
  GPTOSS_REQUIRE_OK(gptoss_context_truncate(f.ctx.get(), kPrompt + 1));
  CHECK(f.processed() == kPrompt);
  GPTOSS_REQUIRE_OK(gptoss_context_process(f.ctx.get()));
  CHECK(max_abs_diff(logits_of(f.ctx.get()), f.fresh_logits(kPrompt + 1)) < 1e-4);
  // Growing again from there works like any context (the pages it needs are allocated).
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(f.ctx.get(), 20, &f.ids[kPrompt + 1]));
  GPTOSS_REQUIRE_OK(gptoss_context_process(f.ctx.get()));
  CHECK(max_abs_diff(logits_of(f.ctx.get()), f.fresh_logits(kPrompt + 21)) < 1e-4);
}

TEST_CASE("truncating to the checkpoint itself recomputes only its last token", "[api][checkpoint]") {
  Fixture f;
  f.run(true);
  GPTOSS_REQUIRE_OK(gptoss_context_truncate(f.ctx.get(), kPrompt));
  CHECK(f.processed() == kPrompt - 1);
  GPTOSS_REQUIRE_OK(gptoss_context_process(f.ctx.get()));
  CHECK(max_abs_diff(logits_of(f.ctx.get()), f.fresh_logits(kPrompt)) < 1e-4);
}

TEST_CASE("a truncation below the checkpoint drops it", "[api][checkpoint]") {
  Fixture f;
  f.run(true);
  GPTOSS_REQUIRE_OK(gptoss_context_truncate(f.ctx.get(), 100));
  CHECK(f.processed() == 0);  // the window before 100 was released long ago
  GPTOSS_REQUIRE_OK(gptoss_context_process(f.ctx.get()));
  CHECK(max_abs_diff(logits_of(f.ctx.get()), f.fresh_logits(100)) < 1e-4);
}

TEST_CASE("truncating inside the live window needs no checkpoint", "[api][checkpoint]") {
  Fixture f;
  f.run(false);
  GPTOSS_REQUIRE_OK(gptoss_context_truncate(f.ctx.get(), f.ids.size() - 5));
  CHECK(f.processed() == f.ids.size() - 6);
}

TEST_CASE("gptoss_context_set_checkpoint rejects bad arguments", "[api][checkpoint][bad-input]") {
  Fixture f;
  CHECK(gptoss_context_set_checkpoint(nullptr, 0) == gptoss_status_invalid_argument);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(f.ctx.get(), 10, f.ids.data()));
  CHECK(gptoss_context_set_checkpoint(f.ctx.get(), 11) == gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("11") != std::string::npos);
  GPTOSS_REQUIRE_OK(gptoss_context_set_checkpoint(f.ctx.get(), 10));
  GPTOSS_REQUIRE_OK(gptoss_context_set_checkpoint(f.ctx.get(), 0));  // clears it
}
