// One model used from several threads at once, as the header allows: each thread with its own
// contexts and KV pools (batched gptoss_contexts_process, private pools), a shared KV pool
// handed from thread to thread, and handles released on other threads than their creator's.
// Every result must equal the same work done on one thread, bit for bit (the same batches give
// the same arithmetic whatever else runs). Tagged [concurrency]: the ThreadSanitizer build runs
// these (docs/reliability.md). No Catch2 assertion runs off the main thread (it is not thread
// safe): workers record statuses and logits, the main thread checks them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/c_api.hpp"

using namespace gptoss::test;

namespace {

gptoss_model_t shared_model() {
  static ModelPtr model = load_conformance_model(Format::gguf);
  return model.get();
}

// What a worker did: the first failing call (empty if none) and the logits it ended with.
struct Outcome {
  std::string error;
  std::vector<std::vector<float>> logits;
};

#define WORKER_OK(outcome, call)                                                          \
  do {                                                                                    \
    const gptoss_status st_ = (call);                                                     \
    if (st_ != gptoss_status_success && (outcome).error.empty())                          \
      (outcome).error = std::string(#call) + " -> " + gptoss_status_to_string(st_) + ": " + \
                        gptoss_get_last_error_message();                                  \
  } while (0)

std::vector<float> logits_or_empty(gptoss_context_t c, Outcome& out) {
  std::vector<float> v(201088);
  size_t n = 0;
  WORKER_OK(out, gptoss_context_get_logits(c, v.data(), v.size(), &n));
  v.resize(n);
  return v;
}

// A little serving session on its own KV pool: two sequences prefilled in one batch, then
// three decode steps (each appends the argmax of its logits) batched together.
Outcome session(gptoss_model_t m, const std::vector<uint32_t>& ids, size_t variant) {
  Outcome out;
  gptoss_kvcache_options ko;
  gptoss_kvcache_options_init(&ko);
  ko.capacity_tokens = 128;
  ko.max_sequences = 2;
  gptoss_kvcache_t kv = nullptr;
  WORKER_OK(out, gptoss_kvcache_create(m, &ko, &kv));
  if (!out.error.empty()) return out;
  gptoss_context_t ctx[2] = {nullptr, nullptr};
  gptoss_context_options co;
  gptoss_context_options_init(&co);
  co.context_length = 64;
  co.kvcache = kv;
  co.max_batch_tokens = 8;  // prefill in several steps
  for (size_t i = 0; i < 2; ++i) {
    WORKER_OK(out, gptoss_context_create_with_options(m, &co, &ctx[i]));
    const size_t from = (variant * 5 + i * 11) % 20, len = 10 + i * 3;
    if (ctx[i]) WORKER_OK(out, gptoss_context_append_tokens(ctx[i], len, ids.data() + from));
  }
  for (int step = 0; step < 4 && out.error.empty(); ++step) {
    WORKER_OK(out, gptoss_contexts_process(ctx, 2));
    for (size_t i = 0; i < 2 && out.error.empty(); ++i) {
      const auto l = logits_or_empty(ctx[i], out);
      if (step == 3) {
        out.logits.push_back(l);
        continue;
      }
      const uint32_t next = uint32_t(std::max_element(l.begin(), l.end()) - l.begin());
      WORKER_OK(out, gptoss_context_append_tokens(ctx[i], 1, &next));
    }
  }
  for (auto* c : ctx) gptoss_context_release(c);
  gptoss_kvcache_release(kv);
  return out;
}

// One sequence on a private pool, processed token chunk by token chunk.
Outcome private_context(gptoss_model_t m, const std::vector<uint32_t>& ids) {
  Outcome out;
  gptoss_context_t c = nullptr;
  WORKER_OK(out, gptoss_context_create(m, 64, &c));
  if (!c) return out;
  for (size_t i = 0; i < ids.size() && out.error.empty(); i += 4) {
    WORKER_OK(out, gptoss_context_append_tokens(c, std::min<size_t>(4, ids.size() - i), ids.data() + i));
    WORKER_OK(out, gptoss_context_process(c));
  }
  out.logits.push_back(logits_or_empty(c, out));
  gptoss_context_release(c);
  return out;
}

void require_same(const Outcome& got, const Outcome& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.error == "");
  REQUIRE(want.error == "");
  REQUIRE(got.logits.size() == want.logits.size());
  for (size_t i = 0; i < got.logits.size(); ++i) {
    REQUIRE(got.logits[i].size() == 201088);
    CHECK(got.logits[i] == want.logits[i]);  // bit for bit
  }
}

}  // namespace

TEST_CASE("one model, batched contexts on several threads", "[concurrency][api]") {
  gptoss_model_t m = shared_model();
  const auto long_ids = prompt_ids("p3_long"), short_ids = prompt_ids("p1_short");
  constexpr size_t kSessions = 3;
  std::vector<Outcome> serial;
  for (size_t v = 0; v < kSessions; ++v) serial.push_back(session(m, long_ids, v));
  const Outcome serial_private = private_context(m, short_ids);

  std::vector<Outcome> threaded(kSessions);
  Outcome threaded_private;
  std::vector<std::thread> threads;
  for (size_t v = 0; v < kSessions; ++v)
    threads.emplace_back([&, v] { threaded[v] = session(m, long_ids, v); });
  threads.emplace_back([&] { threaded_private = private_context(m, short_ids); });
  for (auto& t : threads) t.join();

  for (size_t v = 0; v < kSessions; ++v) require_same(threaded[v], serial[v], "session " + std::to_string(v));
  require_same(threaded_private, serial_private, "private pool");
}

TEST_CASE("a shared KV pool handed from thread to thread", "[concurrency][api]") {
  gptoss_model_t m = shared_model();
  const auto ids = prompt_ids("p3_long");
  gptoss_kvcache_options ko;
  gptoss_kvcache_options_init(&ko);
  ko.capacity_tokens = 96;
  ko.max_sequences = 2;
  gptoss_kvcache_t raw = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_create(m, &ko, &raw));
  KvPtr kv(raw);

  // Each thread owns one context of the pool; they take turns, as the header requires of
  // contexts sharing a pool (the turn is the lock), four tokens a turn.
  std::mutex turn_mutex;
  std::condition_variable turn_changed;
  size_t turn = 0;
  Outcome outcome[2];
  auto worker = [&](size_t me) {
    gptoss_context_options co;
    gptoss_context_options_init(&co);
    co.context_length = 48;
    co.kvcache = kv.get();
    gptoss_context_t raw_context = nullptr;
    WORKER_OK(outcome[me], gptoss_context_create_with_options(m, &co, &raw_context));
    ContextPtr c(raw_context);
    for (size_t round = 0; round < 6; ++round) {
      std::unique_lock<std::mutex> lock(turn_mutex);
      turn_changed.wait(lock, [&] { return turn % 2 == me; });
      if (c) {
        WORKER_OK(outcome[me], gptoss_context_append_tokens(c.get(), 4, ids.data() + me * 7 + round * 4));
        WORKER_OK(outcome[me], gptoss_context_process(c.get()));
        if (round == 5) outcome[me].logits.push_back(logits_or_empty(c.get(), outcome[me]));
        if (round == 2 && me == 1) WORKER_OK(outcome[me], gptoss_context_truncate(c.get(), 6));
      }
      ++turn;
      turn_changed.notify_all();
    }
    std::lock_guard<std::mutex> lock(turn_mutex);
    c.reset();  // pages back to the pool under the turn lock too
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();

  // The same token sequences, each alone on one thread.
  for (size_t me = 0; me < 2; ++me) {
    ContextPtr c = make_context(m, 48);
    for (size_t round = 0; round < 6; ++round) {
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 4, ids.data() + me * 7 + round * 4));
      GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
      if (round == 2 && me == 1) GPTOSS_REQUIRE_OK(gptoss_context_truncate(c.get(), 6));
    }
    Outcome alone;
    alone.logits.push_back(logits_of(c.get()));
    require_same(outcome[me], alone, "context " + std::to_string(me));
  }
  size_t free_tokens = 0;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_get_free_tokens(kv.get(), &free_tokens));
  CHECK(free_tokens == 96);
}

TEST_CASE("handles retained and released on other threads", "[concurrency][api]") {
  gptoss_model_t m = shared_model();
  gptoss_kvcache_options ko;
  gptoss_kvcache_options_init(&ko);
  ko.capacity_tokens = 64;
  ko.max_sequences = 4;
  gptoss_kvcache_t kv = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_create(m, &ko, &kv));
  constexpr int kWorkers = 4;
  std::vector<gptoss_context_t> contexts;
  for (int i = 0; i < kWorkers; ++i) {
    contexts.push_back(make_context(m, 16, 512, kv).release());
    const uint32_t t = uint32_t(100 + i);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(contexts.back(), 1, &t));
  }
  GPTOSS_REQUIRE_OK(gptoss_contexts_process(contexts.data(), contexts.size()));

  // Every worker owns one reference to its context, to the pool and to the model, retains and
  // releases them many times, then drops its references: the last ones (contexts, whose
  // pages go back to the shared pool, then the pool) go on whichever worker ends last.
  for (int i = 0; i < kWorkers; ++i) {
    GPTOSS_REQUIRE_OK(gptoss_kvcache_retain(kv));
    GPTOSS_REQUIRE_OK(gptoss_model_retain(m));
  }
  gptoss_kvcache_release(kv);  // the workers hold the pool now
  std::vector<gptoss_status> worst(kWorkers, gptoss_status_success);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWorkers; ++i)
    threads.emplace_back([&, i] {
      gptoss_context_t c = contexts[size_t(i)];
      for (int k = 0; k < 200; ++k) {
        for (gptoss_status st : {gptoss_context_retain(c), gptoss_kvcache_retain(kv),
                                 gptoss_model_retain(m)})
          if (st != gptoss_status_success) worst[size_t(i)] = st;
        gptoss_model_release(m);
        gptoss_kvcache_release(kv);
        gptoss_context_release(c);
      }
      gptoss_context_release(c);
      gptoss_kvcache_release(kv);
      gptoss_model_release(m);
    });
  for (auto& t : threads) t.join();
  for (gptoss_status st : worst) CHECK(st == gptoss_status_success);
}
