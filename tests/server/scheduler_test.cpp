// The scheduler on the shared conformance model (random weights, scalar kernels in exact
// precision, whose results do not depend on the batch): batched sequences produce what each
// would alone, through preemption and prefix reuse; cancellation frees pages; the queue is
// bounded.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "api/harmony_conversation.hpp"
#include "engine/grammar_cache.hpp"
#include "engine/scheduler.hpp"
#include "support/c_api.hpp"

using namespace gptoss_server;
using gptoss::test::Format;

namespace {

struct Engine {
  gptoss::test::ModelPtr model;
  gptoss::tokenizer tokenizer;
  Metrics metrics;
  std::unique_ptr<Scheduler> scheduler;

  explicit Engine(const SchedulerConfig& config) {
    setenv("GPTOSS_CPU_ISA", "scalar", 1);  // read when the model opens its device
    model = gptoss::test::load_conformance_model(Format::hf, 0, gptoss_precision_exact);
    gptoss_tokenizer_t t = nullptr;
    gptoss::check(gptoss_model_get_tokenizer(model.get(), &t), "tokenizer");
    tokenizer.reset(t);
    scheduler = std::make_unique<Scheduler>(model.get(), config, metrics);
  }
  ~Engine() { scheduler.reset(); }
};

SchedulerConfig config(size_t max_running, size_t kv_tokens, size_t context, size_t prefix_cache) {
  SchedulerConfig c;
  c.max_running = max_running;
  c.kv_tokens = kv_tokens;
  c.context_length = context;
  c.prefix_cache_entries = prefix_cache;
  c.step_tokens = 64;
  c.speculation.on =
      false;  // the step counts below are plain decoding's; speculation has its own tests
  return c;
}

// Raw text that always runs to max_tokens.
GenerationSpec spec(std::vector<uint32_t> prompt, size_t max_tokens, uint64_t seed) {
  GenerationSpec s;
  s.prompt = std::move(prompt);
  s.max_tokens = max_tokens;
  s.harmony = false;
  s.ignore_stop_tokens = true;
  s.sampling.seed = seed;
  return s;
}

std::vector<uint32_t> prompt(size_t n, uint32_t offset) {
  static const std::vector<uint32_t> ids = gptoss::test::prompt_ids("p3_long");  // read once
  REQUIRE(offset + n <= ids.size());
  return {ids.begin() + offset, ids.begin() + offset + std::ptrdiff_t(n)};
}

struct Outcome {
  std::string text;
  Finish finish;
  size_t deltas = 0;
};

Outcome wait(Job& job) {
  Outcome out;
  for (;;) {
    std::vector<OutputEvent> events;
    auto finish = job.take(events, std::chrono::milliseconds(100));
    for (const auto& e : events)
      if (e.kind == OutputEvent::Kind::delta) {
        out.text += e.text;
        ++out.deltas;
      }
    if (finish) {
      out.finish = *finish;
      return out;
    }
  }
}

// Waits until `pred` holds for the scheduler's gauges (at most 5 s).
template <typename Pred>
bool eventually(Scheduler& s, Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred(s.gauges())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The value of an unlabelled sample NAME in Prometheus text (NaN when absent).
double counter(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + name.size() + 2));
}

}  // namespace

TEST_CASE("batched sequences produce what each produces alone", "[server][scheduler]") {
  Engine e(config(8, 4096, 512, 0));
  std::vector<std::shared_ptr<Job>> jobs;
  for (uint32_t i = 0; i < 6; ++i) jobs.push_back(e.scheduler->submit(spec(prompt(20 + 7 * i, i * 11), 24, 100 + i)));
  std::vector<Outcome> together;
  for (auto& job : jobs) together.push_back(wait(*job));
  // They ran together: 6 x 24 decode tokens and 225 prompt tokens (64 a step) one sequence a
  // step would take over 150 steps; batched, about 24 decode steps and a few prompt steps.
  const std::string metrics = e.metrics.prometheus(e.scheduler->gauges());
  INFO(metrics);
  const double steps = counter(metrics, "gptoss_forward_steps_total");
  CHECK(steps >= 24);
  CHECK(steps <= 60);
  CHECK(counter(metrics, "gptoss_forward_step_tokens_total") == 225 + 6 * 23);
  CHECK(counter(metrics, "gptoss_forward_step_sequences_total") >= 3 * steps);
  CHECK(counter(metrics, "gptoss_forward_step_seconds_count") == steps);
  for (uint32_t i = 0; i < 6; ++i) {
    INFO("job " << i);
    CHECK(together[i].finish.reason == FinishReason::length);
    CHECK(together[i].finish.usage.output_tokens == 24);
    CHECK(together[i].finish.usage.prompt_tokens == 20 + 7 * i);
    const Outcome alone = wait(*e.scheduler->submit(spec(prompt(20 + 7 * i, i * 11), 24, 100 + i)));
    CHECK(alone.text == together[i].text);
  }
  CHECK(eventually(*e.scheduler, [&](const EngineGauges&) { return e.scheduler->idle(); }));
}

namespace {
// A negative frequency penalty makes random weights repeat themselves, so prompt lookup's
// drafts are kept; the penalty also makes every position sample on the host.
GenerationSpec repetitive(std::vector<uint32_t> prompt, size_t max_tokens, uint64_t seed,
                          double temperature) {
  GenerationSpec s = spec(std::move(prompt), max_tokens, seed);
  s.sampling.temperature = temperature;
  s.sampling.frequency_penalty = -1.5;
  s.sampling.logprobs = 2;
  return s;
}

struct Tokens {
  std::vector<TokenLogprob> logprobs;
  Finish finish;
};
Tokens wait_tokens(Job& job) {
  Tokens out;
  for (;;) {
    std::vector<OutputEvent> events;
    auto finish = job.take(events, std::chrono::milliseconds(100));
    for (const auto& e : events)
      out.logprobs.insert(out.logprobs.end(), e.logprobs.begin(), e.logprobs.end());
    if (finish) {
      out.finish = *finish;
      return out;
    }
  }
}
bool same(const Tokens& a, const Tokens& b) {
  if (a.logprobs.size() != b.logprobs.size()) return false;
  for (size_t i = 0; i < a.logprobs.size(); ++i)
    if (a.logprobs[i].token != b.logprobs[i].token ||
        a.logprobs[i].logprob != b.logprobs[i].logprob || a.logprobs[i].top != b.logprobs[i].top)
      return false;
  return true;
}
}  // namespace

TEST_CASE(
    "speculation: batched drafts give plain decoding's tokens and logprobs within the step budget",
    "[server][scheduler][speculative]") {
  const uint64_t seed = std::random_device{}();
  std::printf("speculation scheduler test seed %llu\n", static_cast<unsigned long long>(seed));
  INFO("seed " << seed);
  // A budget of 32 tokens for 6 decoding sequences: drafts must shrink to what is left.
  SchedulerConfig on = config(8, 4096, 512, 0);
  on.step_tokens = 32;
  on.speculation.on = true;
  // Drafts in every step, to test how they share it: on this tiny model the cost bound would
  // keep most of them back (a drafted token costs about what a plain step does).
  on.speculation.cost_bound = false;
  SchedulerConfig off = on;
  off.speculation.on = false;
  Engine spec_engine(on), plain_engine(off);
  std::vector<std::shared_ptr<Job>> on_jobs, off_jobs;
  size_t prompt_tokens = 0;
  for (uint32_t i = 0; i < 6; ++i) {
    const size_t n = 12 + (seed >> (4 * i)) % 40;
    prompt_tokens += n;
    const double temperature = i % 2 == 0 ? 0.0 : 1.0;
    on_jobs.push_back(
        spec_engine.scheduler->submit(repetitive(prompt(n, 3 * i), 40, seed + i, temperature)));
    off_jobs.push_back(
        plain_engine.scheduler->submit(repetitive(prompt(n, 3 * i), 40, seed + i, temperature)));
  }
  size_t drafted = 0, accepted = 0;
  for (uint32_t i = 0; i < 6; ++i) {
    INFO("job " << i);
    const Tokens a = wait_tokens(*on_jobs[i]), b = wait_tokens(*off_jobs[i]);
    REQUIRE(a.finish.reason == FinishReason::length);
    CHECK(a.logprobs.size() == 40);
    CHECK(same(a, b));
    CHECK(a.finish.usage.speculative);
    CHECK_FALSE(b.finish.usage.speculative);
    CHECK(a.finish.usage.accepted_tokens <= a.finish.usage.drafted_tokens);
    drafted += a.finish.usage.drafted_tokens;
    accepted += a.finish.usage.accepted_tokens;
  }
  const std::string metrics = spec_engine.metrics.prometheus(spec_engine.scheduler->gauges());
  INFO(metrics);
  CHECK(accepted > 0);
  CHECK(counter(metrics, "gptoss_speculative_drafted_tokens_total") == double(drafted));
  CHECK(counter(metrics, "gptoss_speculative_accepted_tokens_total") == double(accepted));
  // Every token a step processed: the prompts, one pending token per decode step (40 - 1
  // sampled tokens a sequence, less those that came as accepted drafts), and every draft.
  CHECK(counter(metrics, "gptoss_forward_step_tokens_total") ==
        double(prompt_tokens + 6 * 39 - accepted + drafted));
  // No step went past the budget.
  CHECK(counter(metrics, "gptoss_forward_step_size_tokens_bucket{le=\"32\"}") ==
        counter(metrics, "gptoss_forward_step_size_tokens_count"));
}

TEST_CASE("speculation: preemption and prefix reuse keep plain decoding's tokens",
          "[server][scheduler][speculative]") {
  // 256 tokens of KV for four sequences: preempted mid-draft, twice over. Then one prompt alone,
  // twice: the second run resumes from the prefix cache that holds the first's context (its KV
  // past rejected drafts gone). Which of four concurrent sequences the cache still holds when
  // the next four arrive depends on thread timing, so the reuse is asserted on the lone pair.
  SchedulerConfig squeezed = config(4, 256, 256, 4);
  squeezed.speculation.on = true;
  squeezed.speculation.cost_bound = false;  // drafts to roll back, whatever they cost
  SchedulerConfig roomy = config(4, 4096, 256, 0);
  Engine e(squeezed), plain(roomy);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::shared_ptr<Job>> jobs;
    for (uint32_t i = 0; i < 4; ++i)
      jobs.push_back(e.scheduler->submit(repetitive(prompt(40, 30 * i), 120, 7 + i, 0.0)));
    for (uint32_t i = 0; i < 4; ++i) {
      INFO("round " << round << ", job " << i);
      const Tokens a = wait_tokens(*jobs[i]);
      const Tokens b =
          wait_tokens(*plain.scheduler->submit(repetitive(prompt(40, 30 * i), 120, 7 + i, 0.0)));
      INFO(a.finish.error);
      REQUIRE(a.finish.reason == FinishReason::length);
      CHECK(same(a, b));
    }
  }
  const auto lone = prompt(40, 250);  // shares no 16 tokens with the rounds' prompts
  const Tokens plain_lone = wait_tokens(*plain.scheduler->submit(repetitive(lone, 120, 11, 0.0)));
  const Tokens first = wait_tokens(*e.scheduler->submit(repetitive(lone, 120, 11, 0.0)));
  const Tokens again = wait_tokens(*e.scheduler->submit(repetitive(lone, 120, 11, 0.0)));
  INFO(first.finish.error);
  INFO(again.finish.error);
  REQUIRE(again.finish.reason == FinishReason::length);
  CHECK(first.finish.usage.cached_tokens == 0);
  CHECK(again.finish.usage.cached_tokens == lone.size() - 1);
  CHECK(again.finish.usage.drafted_tokens > again.finish.usage.accepted_tokens);
  CHECK(same(first, plain_lone));
  CHECK(same(again, plain_lone));
  const std::string metrics = e.metrics.prometheus(e.scheduler->gauges());
  INFO(metrics);
  CHECK(metrics.find("gptoss_preemptions_total 0\n") == std::string::npos);
  CHECK(counter(metrics, "gptoss_speculative_accepted_tokens_total") > 0);
}

TEST_CASE("a pool too small for every sequence preempts and still finishes each identically",
          "[server][scheduler]") {
  // 256 tokens of KV for four sequences of 40 + 150 tokens: at most one fits at a time.
  Engine e(config(4, 256, 256, 0));
  std::vector<std::shared_ptr<Job>> jobs;
  for (uint32_t i = 0; i < 4; ++i) jobs.push_back(e.scheduler->submit(spec(prompt(40, 30 * i), 150, 7 + i)));
  std::vector<Outcome> squeezed;
  for (auto& job : jobs) squeezed.push_back(wait(*job));
  const std::string metrics = e.metrics.prometheus(e.scheduler->gauges());
  INFO(metrics);
  CHECK(metrics.find("gptoss_preemptions_total 0\n") == std::string::npos);

  Engine roomy(config(4, 4096, 256, 0));
  for (uint32_t i = 0; i < 4; ++i) {
    INFO("job " << i);
    REQUIRE(squeezed[i].finish.reason == FinishReason::length);
    CHECK(squeezed[i].finish.usage.output_tokens == 150);
    CHECK(wait(*roomy.scheduler->submit(spec(prompt(40, 30 * i), 150, 7 + i))).text == squeezed[i].text);
  }
}

TEST_CASE("cancelling a job frees its pages within a step", "[server][scheduler]") {
  Engine e(config(4, 4096, 1024, 0));
  auto job = e.scheduler->submit(spec(prompt(60, 0), 900, 1));
  REQUIRE(eventually(*e.scheduler, [](const EngineGauges& g) { return g.running == 1 && g.kv_pages_used > 0; }));
  std::vector<OutputEvent> events;
  job->take(events, std::chrono::milliseconds(200));
  job->cancel();
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o = wait(*job);
  CHECK(o.finish.reason == FinishReason::cancelled);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(eventually(*e.scheduler, [](const EngineGauges& g) { return g.running == 0 && g.kv_pages_used == 0; }));
}

TEST_CASE("prefix reuse: the next prompt resumes from the previous one, past the sliding window",
          "[server][scheduler]") {
  Engine e(config(4, 4096, 1024, 4));
  const auto first = prompt(60, 0);
  const Outcome a = wait(*e.scheduler->submit(spec(first, 200, 3)));  // 200 > the window of 128
  REQUIRE(a.finish.reason == FinishReason::length);
  CHECK(a.finish.usage.cached_tokens == 0);
  // The same prompt again: everything but the last token (which gives the logits) is reused,
  // and the output is the same.
  const Outcome same = wait(*e.scheduler->submit(spec(first, 200, 3)));
  CHECK(same.finish.usage.cached_tokens == first.size() - 1);
  CHECK(same.text == a.text);
  // A next turn: the first prompt, then other tokens. It diverges right after the prompt,
  // 200 tokens before the cached sequence's end: the checkpoint keeps that window.
  auto next = first;
  const auto more = prompt(30, 200);
  next.insert(next.end(), more.begin(), more.end());
  const Outcome b = wait(*e.scheduler->submit(spec(next, 10, 4)));
  CHECK(b.finish.usage.cached_tokens >= first.size() - 1);
  // Its output equals a run without any cache.
  Engine cold(config(4, 4096, 1024, 0));
  CHECK(wait(*cold.scheduler->submit(spec(next, 10, 4))).text == b.text);
}

TEST_CASE("the queue is bounded, drain refuses new jobs, max_tokens 0 ends at once", "[server][scheduler]") {
  SchedulerConfig c = config(1, 4096, 1024, 0);
  c.max_queue = 1;
  Engine e(c);
  const Outcome none = wait(*e.scheduler->submit(spec(prompt(10, 0), 0, 1)));
  CHECK(none.finish.reason == FinishReason::length);
  CHECK(none.finish.usage.output_tokens == 0);

  auto running = e.scheduler->submit(spec(prompt(10, 0), 900, 1));
  REQUIRE(eventually(*e.scheduler, [](const EngineGauges& g) { return g.running == 1 && g.queued == 0; }));
  auto queued = e.scheduler->submit(spec(prompt(10, 0), 900, 2));
  CHECK_THROWS_AS(e.scheduler->submit(spec(prompt(10, 0), 5, 3)), QueueFull);
  e.scheduler->drain();
  CHECK_THROWS_AS(e.scheduler->submit(spec(prompt(10, 0), 5, 4)), NotAccepting);
  CHECK_FALSE(e.scheduler->idle());
  e.scheduler->cancel_all();
  CHECK(wait(*running).finish.reason == FinishReason::cancelled);
  CHECK(wait(*queued).finish.reason == FinishReason::cancelled);
  CHECK(eventually(*e.scheduler, [&](const EngineGauges&) { return e.scheduler->idle(); }));
}

TEST_CASE("a burst on an idle server is admitted up to max_running + max_queue", "[server][scheduler]") {
  SchedulerConfig c = config(2, 4096, 1024, 0);
  c.max_queue = 2;
  Engine e(c);
  // Back to back, before the scheduler thread has admitted any: 2 to run, 2 to wait.
  std::vector<std::shared_ptr<Job>> jobs;
  for (uint64_t i = 0; i < 4; ++i) REQUIRE_NOTHROW(jobs.push_back(e.scheduler->submit(spec(prompt(10, 0), 900, i))));
  CHECK_THROWS_AS(e.scheduler->submit(spec(prompt(10, 0), 5, 9)), QueueFull);
  REQUIRE(eventually(*e.scheduler, [](const EngineGauges& g) { return g.running == 2 && g.queued == 2; }));
  CHECK_THROWS_AS(e.scheduler->submit(spec(prompt(10, 0), 5, 9)), QueueFull);
  e.scheduler->cancel_all();
  for (auto& job : jobs) CHECK(wait(*job).finish.reason == FinishReason::cancelled);
}

TEST_CASE("an inconsistent configuration is refused", "[server][scheduler][bad-input]") {
  setenv("GPTOSS_CPU_ISA", "scalar", 1);
  auto model = gptoss::test::load_conformance_model(Format::hf, 0, gptoss_precision_exact);
  Metrics metrics;
  CHECK_THROWS_AS(Scheduler(model.get(), config(64, 4096, 1024, 0), metrics), std::invalid_argument);  // 64 step tokens
  SchedulerConfig c = config(4, 512, 1024, 0);  // context > KV
  CHECK_THROWS_AS(Scheduler(model.get(), c, metrics), std::invalid_argument);
}

TEST_CASE("constrained sequences: forced tool calls with valid arguments, the same through preemption",
          "[server][scheduler]") {
  ChatSetup setup;
  setup.tools.push_back({"get_weather", "", nlohmann::json::parse(R"({"type": "object",
      "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}, "days": {"type": "integer", "minimum": 1, "maximum": 3}},
      "required": ["city", "days"], "additionalProperties": false})"), false});
  setup.tool_choice.mode = ToolChoice::Mode::required;
  auto run = [&](Engine& e, uint64_t seed) {
    GrammarCache grammars(e.tokenizer.get(), 4);
    GenerationSpec s;
    const std::vector<ConversationItem> items = {{ConversationItem::Kind::message, "user", false, "Weather?", "", ""}};
    s.prompt = gptoss::render(e.tokenizer.get(),
                              harmony_conversation(setup, items, "2025-06-28", "input").dump());
    s.max_tokens = 300;
    s.sampling.seed = seed;
    s.grammar = grammars.harmony(constraint_spec(setup).dump());
    s.max_reasoning_tokens = 60;
    return e.scheduler->submit(std::move(s));
  };
  // Four at once in a pool that holds two prompts and less than two whole outputs: preemption,
  // constraint state and all.
  Engine squeezed(config(4, 320, 320, 0));
  std::vector<std::shared_ptr<Job>> jobs;
  for (uint64_t seed = 0; seed < 4; ++seed) jobs.push_back(run(squeezed, seed));
  Engine roomy(config(4, 4096, 320, 0));
  for (uint64_t seed = 0; seed < 4; ++seed) {
    INFO("seed " << seed);
    std::vector<OutputEvent> events;
    std::optional<Finish> finish;
    while (!finish) finish = jobs[seed]->take(events, std::chrono::milliseconds(100));
    REQUIRE(finish->reason == FinishReason::stop);
    std::string call, args;
    for (const auto& ev : events) {
      if (ev.kind == OutputEvent::Kind::begin && !ev.header.recipient.empty()) call = ev.header.recipient;
      if (ev.kind == OutputEvent::Kind::delta && !call.empty()) args += ev.text;
    }
    CHECK(call == "functions.get_weather");
    const auto parsed = nlohmann::json::parse(args);
    CHECK((parsed["city"] == "Paris" || parsed["city"] == "Oslo"));
    CHECK((parsed["days"] >= 1 && parsed["days"] <= 3));
    CHECK(parsed.size() == 2);
    const Outcome alone = wait(*run(roomy, seed));
    CHECK(alone.finish.usage.output_tokens == finish->usage.output_tokens);
    std::string squeezed_text;
    for (const auto& ev : events)
      if (ev.kind == OutputEvent::Kind::delta) squeezed_text += ev.text;
    CHECK(alone.text == squeezed_text);
  }
  CHECK(squeezed.metrics.prometheus(squeezed.scheduler->gauges()).find("gptoss_preemptions_total 0\n") ==
        std::string::npos);
}

TEST_CASE("structured output with a token budget: complete, valid, and ended by <|return|> within max_tokens",
          "[server][scheduler]") {
  ChatSetup setup;
  setup.format.type = ResponseFormat::Type::json_schema;
  setup.format.schema = nlohmann::json::parse(R"({"type": "object",
      "properties": {"name": {"type": "string"}, "score": {"type": "number"},
                     "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
                     "inner": {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"],
                               "additionalProperties": false}},
      "required": ["name", "score", "tags", "inner"], "additionalProperties": false})");
  Engine e(config(9, 8192, 1024, 0));
  GrammarCache grammars(e.tokenizer.get(), 4);
  const Grammar grammar = grammars.harmony(constraint_spec(setup).dump());
  const int64_t shortest = shortest_output_tokens(grammar, -1);
  REQUIRE(shortest > 0);
  const std::vector<ConversationItem> items = {{ConversationItem::Kind::message, "user", false, "JSON?", "", ""}};
  const auto prompt_tokens = gptoss::render(
      e.tokenizer.get(), harmony_conversation(setup, items, "2025-06-28", "input").dump());
  // The random-weight model wanders (free strings, reasoning without end): only the budget ends
  // these. A budget of exactly the shortest output leaves no choice anywhere the grammar has one.
  const std::vector<size_t> budgets = {size_t(shortest), size_t(shortest) + 5, 2 * size_t(shortest)};
  std::vector<std::pair<size_t, std::shared_ptr<Job>>> jobs;
  for (size_t budget : budgets)
    for (uint64_t seed = 0; seed < 3; ++seed) {
      GenerationSpec s;
      s.prompt = prompt_tokens;
      s.max_tokens = budget;
      s.sampling.seed = seed;
      s.sampling.temperature = 1.5;
      s.grammar = grammar;
      s.complete_within_max_tokens = true;
      jobs.emplace_back(budget, e.scheduler->submit(std::move(s)));
    }
  for (auto& [budget, job] : jobs) {
    INFO("budget " << budget << " of shortest " << shortest);
    std::vector<OutputEvent> events;
    std::optional<Finish> finish;
    while (!finish) finish = job->take(events, std::chrono::milliseconds(100));
    REQUIRE(finish->reason == FinishReason::stop);
    CHECK(finish->usage.output_tokens <= budget);
    if (budget == size_t(shortest)) CHECK(finish->closed_by_budget);
    std::string channel, answer;
    for (const auto& ev : events) {
      if (ev.kind == OutputEvent::Kind::begin) channel = ev.header.channel;
      if (ev.kind == OutputEvent::Kind::delta && channel == "final") answer += ev.text;
    }
    INFO(answer);
    const auto doc = nlohmann::json::parse(answer);
    CHECK(doc["name"].is_string());
    CHECK(doc["score"].is_number());
    CHECK(doc["tags"].is_array());
    CHECK(doc["inner"]["note"].is_string());
  }
}
