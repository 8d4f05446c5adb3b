// The server's scheduler under concurrent clients, as the HTTP threads use it: several threads
// submit jobs, read their events, cancel some midway (a client that disconnects), share the
// grammar cache, and read the gauges and metrics (GET /metrics) while the scheduler thread
// batches, admits as pages free up and reuses prefixes. Run under ThreadSanitizer by scripts/reliability.sh
// (build-tsan/); the release and ASan builds run it too. Outputs are checked against the same
// jobs run one at a time (the conformance model in exact precision does not depend on the
// batch), so a race that mixed sequences up shows as wrong text even where TSan is absent.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "engine/grammar_cache.hpp"
#include "engine/scheduler.hpp"
#include "support/c_api.hpp"

using namespace gptoss_server;
using gptoss::test::Format;

namespace {

constexpr int kClients = 4;
constexpr int kJobsPerClient = 2;
constexpr size_t kMaxTokens = 6;

struct ScalarEngine {
  gptoss::test::ModelPtr model;
  gptoss::tokenizer tokenizer;
  Metrics metrics;
  std::unique_ptr<Scheduler> scheduler;

  explicit ScalarEngine(size_t kv_tokens, size_t prefix_cache) {
    setenv("GPTOSS_CPU_ISA", "scalar", 1);  // read when the model opens its device
    model = gptoss::test::load_conformance_model(Format::hf, 0, gptoss_precision_exact);
    gptoss_tokenizer_t t = nullptr;
    gptoss::check(gptoss_model_get_tokenizer(model.get(), &t), "tokenizer");
    tokenizer.reset(t);
    SchedulerConfig c;
    c.max_running = 4;
    c.max_queue = 2 * kClients * kJobsPerClient;
    c.step_tokens = 64;
    c.context_length = 32;
    c.kv_tokens = kv_tokens;
    c.prefix_cache_entries = prefix_cache;
    scheduler = std::make_unique<Scheduler>(model.get(), c, metrics);
  }
};

// The prompts' tokens, read on the main thread (Catch's assertions are not thread-safe).
const std::vector<uint32_t>& prompt_tokens() {
  static const std::vector<uint32_t> ids = gptoss::test::prompt_ids("p3_long");
  return ids;
}

// Client `client`'s job `j`: raw text that runs to kMaxTokens; prompts overlap across
// clients so that the prefix cache has something to reuse.
GenerationSpec spec(int client, int j) {
  const std::vector<uint32_t>& ids = prompt_tokens();
  GenerationSpec s;
  s.prompt.assign(ids.begin() + 4 * j, ids.begin() + 4 * j + 8 + 2 * client);
  s.max_tokens = kMaxTokens;
  s.harmony = false;
  s.ignore_stop_tokens = true;
  s.sampling.seed = uint64_t(100 * client + j);
  return s;
}

struct JobOutcome {
  std::string text;
  Finish finish;
};

// Reads a job to its end; cancels it after its first event when `cancel`.
JobOutcome follow(Job& job, bool cancel) {
  JobOutcome out;
  for (;;) {
    std::vector<OutputEvent> events;
    auto finish = job.take(events, std::chrono::milliseconds(50));
    for (const auto& e : events)
      if (e.kind == OutputEvent::Kind::delta) out.text += e.text;
    if (cancel && !events.empty()) job.cancel();
    if (finish) {
      out.finish = *finish;
      return out;
    }
  }
}

}  // namespace

TEST_CASE("scheduler: concurrent clients submit, stream and cancel; outputs are those of each job alone",
          "[server][scheduler][concurrency]") {
  REQUIRE(prompt_tokens().size() >= 4 * kJobsPerClient + 8 + 2 * kClients);
  // Each job alone first, on its own engine.
  std::map<std::pair<int, int>, std::string> alone;
  {
    ScalarEngine e(4096, 0);
    for (int c = 0; c < kClients; ++c)
      for (int j = 0; j < kJobsPerClient; ++j) alone[{c, j}] = follow(*e.scheduler->submit(spec(c, j)), false).text;
  }

  // 64 tokens of KV for four sequences of up to 20 tokens: admission waits for pages, and
  // finished sequences go to the prefix cache and are evicted from it.
  ScalarEngine e(64, 4);
  GrammarCache grammars(e.tokenizer.get(), 2);
  const std::vector<std::string> grammar_specs = {
      R"({"tool_choice": "none"})", R"({"response_format": {"type": "json_object"}})",
      R"({"response_format": {"type": "json_schema", "schema": {"type": "integer"}}})"};
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::map<std::pair<int, int>, JobOutcome> together;
  std::mutex together_mutex;

  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      for (int j = 0; j < kJobsPerClient; ++j) {
        // Grammars compiled and evicted from several threads at once (a cache of 2 for 3 specs).
        if (!grammars.harmony(grammar_specs[size_t(c + j) % grammar_specs.size()])) ++failures;
        const bool cancel = (c + j) % 3 == 2;
        JobOutcome o = follow(*e.scheduler->submit(spec(c, j)), cancel);
        std::lock_guard lock(together_mutex);
        together[{c, j}] = std::move(o);
      }
    });
  std::thread monitor([&] {  // GET /metrics, and the readiness checks
    while (!done.load()) {
      if (e.metrics.prometheus(e.scheduler->gauges()).empty()) ++failures;
      (void)e.scheduler->idle();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  for (auto& t : clients) t.join();
  done.store(true);
  monitor.join();

  CHECK(failures.load() == 0);
  for (const auto& [key, o] : together) {
    INFO("client " << key.first << " job " << key.second);
    if ((key.first + key.second) % 3 == 2) {
      // Cancelled after its first event; it may have finished on its own first.
      CHECK((o.finish.reason == FinishReason::cancelled || o.finish.reason == FinishReason::length));
      CHECK(alone[key].starts_with(o.text));
    } else {
      CHECK(o.finish.reason == FinishReason::length);
      CHECK(o.finish.usage.output_tokens == kMaxTokens);
      CHECK(o.text == alone[key]);
    }
  }
  for (int i = 0; i < 500 && !e.scheduler->idle(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(e.scheduler->idle());
}

TEST_CASE("scheduler: drain and cancel_all from another thread while clients submit",
          "[server][scheduler][concurrency]") {
  REQUIRE(prompt_tokens().size() >= 4 * kJobsPerClient + 8 + 2 * kClients);
  ScalarEngine e(4096, 2);
  std::atomic<int> accepted{0}, refused{0}, unfinished{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      for (int j = 0; j < kJobsPerClient; ++j) {
        std::shared_ptr<Job> job;
        try {
          job = e.scheduler->submit(spec(c, j));
        } catch (const QueueFull&) {
          ++refused;
          continue;
        } catch (const NotAccepting&) {
          ++refused;
          continue;
        }
        ++accepted;
        const JobOutcome o = follow(*job, false);
        if (o.finish.reason != FinishReason::length && o.finish.reason != FinishReason::cancelled) ++unfinished;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  e.scheduler->drain();
  e.scheduler->cancel_all();
  for (auto& t : clients) t.join();
  CHECK(accepted.load() + refused.load() == kClients * kJobsPerClient);
  CHECK(unfinished.load() == 0);
  CHECK_THROWS_AS(e.scheduler->submit(spec(0, 0)), NotAccepting);
  for (int i = 0; i < 500 && !e.scheduler->idle(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(e.scheduler->idle());
}
