// gptoss-bench --constrained: what constrained decoding costs per token, beside the decode step
// it rides on. Each scenario decodes under a grammar (the sampler's constraint) while a mirror
// constraint, fed the same tokens, has its mask filled and timed before every step; steps are
// split by how many tokens the mask allows (a dense mask: inside free text or a JSON string).
// Decode time per token is measured in the same run without a constraint. Public C API only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"

namespace gptoss::bench {
namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

constexpr size_t kDenseMask = 100000;  // allowed tokens above which a step counts as "in text"

const char* kToolsSpec = R"({"tools": {"functions": {"tools": [
  {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"},
    "unit": {"enum": ["c", "f"]}}, "required": ["city"]}},
  {"name": "lookup", "parameters": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}},
    "required": ["id"]}}]}}})";

const char* kNestedSchema = R"({"type": "object", "properties": {
  "title": {"type": "string"},
  "author": {"type": "object", "properties": {"name": {"type": "string"}, "born": {"type": "integer",
    "minimum": 1000, "maximum": 2025}}, "required": ["name", "born"], "additionalProperties": false},
  "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
  "rating": {"type": "number", "minimum": 0, "maximum": 5},
  "meta": {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": {"type": "string"}}]}},
  "required": ["title", "author", "tags", "rating"], "additionalProperties": false})";

struct Scenario {
  const char* name;
  bool harmony;
  const char* source;  // spec or schema
  bool budget;         // max_tokens twice the shortest output: every output is closed by it
};

struct Times {
  std::vector<double> dense, sparse;  // mask ms per step, by mask density
  std::vector<double> step;           // constrained decode step ms (forward + mask + sample)
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

size_t popcount(const std::vector<uint32_t>& mask) {
  size_t n = 0;
  for (uint32_t w : mask) n += size_t(__builtin_popcount(w));
  return n;
}

gptoss::constraint new_constraint(gptoss_grammar_t g, int64_t max_tokens) {
  gptoss_constraint_options co;
  gptoss_constraint_options_init(&co);
  co.max_tokens = max_tokens;
  gptoss_constraint_t c = nullptr;
  gptoss::check(gptoss_constraint_create(g, &co, &c), "creating a constraint");
  return gptoss::constraint(c);
}

int64_t min_tokens(gptoss_grammar_t g) { return new_constraint(g, -1).min_tokens(); }

// Decodes n tokens after `prompt` under `grammar`; a document or turn that finishes starts
// over (constraints reset, the context goes on).
void decode(gptoss_context_t ctx, gptoss_sampler_t sampler, gptoss_grammar_t grammar,
            int64_t max_tokens, const std::vector<uint32_t>& prompt, size_t n, Times* times) {
  const gptoss::constraint live = new_constraint(grammar, max_tokens),
                           mirror = new_constraint(grammar, max_tokens);
  gptoss::check(gptoss_sampler_set_constraint(sampler, live.get()), "attaching");
  gptoss::check(gptoss_context_reset(ctx), "reset");
  gptoss::check(gptoss_context_append_tokens(ctx, prompt.size(), prompt.data()), "append");
  gptoss::check(gptoss_context_process(ctx), "prefill");
  std::vector<uint32_t> mask(GPTOSS_MASK_WORDS(201088));
  for (size_t i = 0; i < n; ++i) {
    size_t words = 0;
    auto t0 = Clock::now();
    gptoss::check(gptoss_constraint_fill_mask(mirror.get(), mask.data(), mask.size(), &words),
                  "mask");
    const double mask_ms = ms_since(t0);
    uint32_t token = 0;
    t0 = Clock::now();
    gptoss::check(gptoss_context_sample(ctx, sampler, &token), "sample");
    gptoss::check(gptoss_constraint_accept_token(mirror.get(), token), "mirror");
    int32_t done = 0;
    gptoss::check(gptoss_constraint_is_finished(live.get(), &done), "finished");
    if (done) {
      gptoss::check(gptoss_constraint_reset(live.get()), "reset");
      gptoss::check(gptoss_constraint_reset(mirror.get()), "reset");
    }
    gptoss::check(gptoss_context_append_tokens(ctx, 1, &token), "append");
    gptoss::check(gptoss_context_process(ctx), "decode");
    if (times) {
      (popcount(mask) > kDenseMask ? times->dense : times->sparse).push_back(mask_ms);
      times->step.push_back(ms_since(t0));
    }
  }
  gptoss_sampler_set_constraint(sampler, nullptr);
}

}  // namespace

int run_constrained_bench(const Options& o) {
  const gptoss_model_options mo = model_options(o);
  const gptoss::model model = gptoss::model::load(o.model, &mo, "loading the model");
  const gptoss::tokenizer tokenizer = model.get_tokenizer();
  const gptoss_tokenizer_t tok = tokenizer.get();
  gptoss_context_t raw_context = nullptr;
  gptoss::check(gptoss_context_create(model.get(), 2 * o.n_gen + 1024, &raw_context), "context");
  const gptoss::context context(raw_context);
  const gptoss_context_t ctx = context.get();
  gptoss_sampler_options so;
  gptoss_sampler_options_init(&so);
  so.seed = 1;
  const gptoss::sampler seeded = gptoss::sampler::create(&so, "sampler");
  const gptoss_sampler_t sampler = seeded.get();

  // Harmony: a rendered turn (the grammar starts after its <|start|>assistant); JSON: raw text.
  const char* conversation =
      R"({"messages": [{"role": "user", "content": "What is the weather in Lima?"}]})";
  const std::vector<uint32_t> harmony_prompt = tokenizer.render(conversation);
  const std::vector<uint32_t> json_prompt = tokenizer.encode("JSON:");

  // Decode without a constraint: the step the mask is compared with.
  std::vector<double> plain;
  {
    gptoss::check(gptoss_context_reset(ctx), "reset");
    gptoss::check(gptoss_context_append_tokens(ctx, json_prompt.size(), json_prompt.data()),
                  "append");
    uint32_t token = 0;
    gptoss::check(gptoss_context_sample(ctx, sampler, &token), "prefill");
    for (size_t i = 0; i < o.n_gen + 2; ++i) {
      const auto t0 = Clock::now();
      gptoss::check(gptoss_context_append_tokens(ctx, 1, &token), "append");
      gptoss::check(gptoss_context_sample(ctx, sampler, &token), "decode");
      if (i >= 2) plain.push_back(ms_since(t0));  // two warm-up steps
    }
  }
  const double decode_ms = mean(plain);

  // The first grammar of a tokenizer builds its token trie (once per tokenizer): timed apart.
  double trie_ms = 0;
  {
    gptoss_grammar_t first = nullptr;
    const auto t0 = Clock::now();
    gptoss::check(gptoss_grammar_create_json_schema(tok, "true", &first), "first grammar");
    trie_ms = ms_since(t0);
    gptoss_grammar_release(first);
  }

  const Scenario scenarios[] = {{"harmony (tools, text answer)", true, kToolsSpec, false},
                                {"harmony + JSON answer (nested schema)", true, nullptr, false},
                                {"JSON Schema (nested, strings)", false, kNestedSchema, false},
                                {"harmony (tools, text answer), budget 2x shortest", true, kToolsSpec, true},
                                {"harmony + JSON answer, budget 2x shortest", true, nullptr, true},
                                {"JSON Schema (nested), budget 2x shortest", false, kNestedSchema, true}};
  struct Row {
    std::string name, part;
    double compile_ms, cold_ms, mean_ms, p50, p99, max, steps;
  };
  std::vector<Row> rows;
  for (const Scenario& s : scenarios) {
    gptoss_grammar_t raw_grammar = nullptr;
    std::string spec = s.source ? s.source : std::string("{\"response_format\": {\"type\": \"json_schema\", "
                                                         "\"schema\": ") + kNestedSchema + "}}";
    const auto t0 = Clock::now();
    const gptoss_status st =
        s.harmony ? gptoss_grammar_create_harmony(tok, spec.c_str(), &raw_grammar)
                  : gptoss_grammar_create_json_schema(tok, spec.c_str(), &raw_grammar);
    const double compile_ms = ms_since(t0);
    gptoss::check(st, "compiling the grammar");
    const gptoss::grammar owned_grammar(raw_grammar);
    const gptoss_grammar_t grammar = owned_grammar.get();
    const auto& prompt = s.harmony ? harmony_prompt : json_prompt;
    const int64_t max_tokens = s.budget ? 2 * min_tokens(grammar) : -1;
    Times cold, warm;  // first pass: token sets computed on first use; second: cached
    decode(ctx, sampler, grammar, max_tokens, prompt, o.n_gen, &cold);
    decode(ctx, sampler, grammar, max_tokens, prompt, o.n_gen, &warm);
    std::vector<double> cold_all = cold.dense;
    cold_all.insert(cold_all.end(), cold.sparse.begin(), cold.sparse.end());
    for (auto [part, v] : {std::pair{"dense mask (in text/strings)", &warm.dense},
                           std::pair{"sparse mask (structure)", &warm.sparse}})
      if (!v->empty())
        rows.push_back({s.name, part, compile_ms, mean(cold_all), mean(*v), percentile(*v, 0.5), percentile(*v, 0.99),
                        percentile(*v, 1.0), double(v->size())});
  }

  if (o.json) {
    std::printf("{\"decode_ms_per_token\": %.4f, \"n_gen\": %zu, \"first_grammar_ms\": %.3f, \"scenarios\": [",
                decode_ms, o.n_gen, trie_ms);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s{\"grammar\": \"%s\", \"steps\": \"%s\", \"count\": %.0f, \"compile_ms\": %.3f, "
                  "\"cold_mask_ms\": %.4f, \"mask_ms\": {\"mean\": %.4f, \"p50\": %.4f, \"p99\": %.4f, \"max\": %.4f}, "
                  "\"mask_pct_of_decode\": %.3f}",
                  i ? ", " : "", r.name.c_str(), r.part.c_str(), r.steps, r.compile_ms, r.cold_ms, r.mean_ms, r.p50,
                  r.p99, r.max, 100.0 * r.mean_ms / decode_ms);
    }
    std::printf("]}\n");
  } else {
    std::printf("decode without a constraint: %.2f ms/token (%zu tokens); first grammar of the tokenizer "
                "(builds its token trie): %.1f ms\n\n",
                decode_ms, plain.size(), trie_ms);
    std::printf("| grammar | steps | n | compile ms | cold mask ms | mask ms mean | p50 | p99 | max | %% of decode |\n");
    std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (const Row& r : rows)
      std::printf("| %s | %s | %.0f | %.2f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f %% |\n", r.name.c_str(),
                  r.part.c_str(), r.steps, r.compile_ms, r.cold_ms, r.mean_ms, r.p50, r.p99, r.max,
                  100.0 * r.mean_ms / decode_ms);
    std::printf("\n(mask: gptoss_constraint_fill_mask, 6284 words, on a mirror constraint at each state of a "
                "decode under the grammar;\n cold: the first pass, whose token sets are computed on first use; "
                "the others: a second pass over cached sets)\n");
  }
  return 0;
}

}  // namespace gptoss::bench
