// `gptoss getp -i prompts.txt -o outputs.txt`: every prompt gets its own context and sampler
// (same seed as a lone `generate` would use), and the live contexts advance together through
// gptoss_contexts_process, one batched forward step per generated token.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "completion.hpp"
#include "constraints.hpp"
#include "modes.hpp"

namespace gptoss_cli {

std::string ids_line(const std::vector<uint32_t>& ids);  // mode_generate.cpp

namespace {
using Clock = std::chrono::steady_clock;

// One line per prompt: backslash, newline and carriage return escaped.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

std::vector<std::string> read_prompts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read prompts file " + path);
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    prompts.push_back(line);
  }
  return prompts;
}

struct Sequence {
  gptoss::context context;
  gptoss::sampler sampler;
  AnswerConstraint constraint;
  std::unique_ptr<Completion> completion;
  size_t capacity = 0;
  size_t generated = 0;
  bool done = false;
};

struct Totals {
  size_t prompt_tokens = 0;
  size_t generated_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
  size_t closed_by_budget = 0;  // answers the token budget steered to their end
  std::string budget_source;    // what set that budget, for the notice
};

void process(std::vector<Sequence*>& live) {
  std::vector<gptoss_context_t> handles;
  for (Sequence* s : live) handles.push_back(s->context.get());
  gptoss::check(gptoss_contexts_process(handles.data(), handles.size()), "gptoss_contexts_process");
}

// Runs prompts[first, last) to completion together; returns each one's output line.
std::vector<std::string> run_batch(gptoss_model_t model, gptoss_tokenizer_t tokenizer,
                                   gptoss_kvcache_t kvcache, gptoss_grammar_t grammar,
                                   const Options& options, uint64_t seed,
                                   const std::vector<std::string>& prompts, size_t first,
                                   size_t last, Totals& totals) {
  StopTokens stop(tokenizer, options.harmony);
  std::optional<TokenDiagnostics> diagnostics;
  if (options.verbose) diagnostics.emplace(model, tokenizer);
  std::vector<Sequence> sequences(last - first);
  std::vector<Sequence*> live;
  for (size_t i = 0; i < sequences.size(); ++i) {
    Sequence& s = sequences[i];
    s.context = make_context(model, options, kvcache);
    s.sampler = make_sampler(options, seed);
    s.completion = std::make_unique<Completion>(tokenizer, options.harmony, Display{});
    std::vector<uint32_t> ids = prompt_tokens(tokenizer, options, prompts[first + i]);
    gptoss::check(gptoss_context_append_tokens(s.context.get(), ids.size(), ids.data()),
                  ("appending prompt " + std::to_string(first + i + 1)).c_str());
    s.constraint = attach_constraint(grammar, s.sampler.get(), options, sampling_room(s.context.get()));
    gptoss::check(gptoss_context_get_max_tokens(s.context.get(), &s.capacity),
                  "gptoss_context_get_max_tokens");
    totals.prompt_tokens += ids.size();
    live.push_back(&s);
  }

  auto t = Clock::now();
  process(live);  // batched prefill
  totals.prefill_seconds += std::chrono::duration<double>(Clock::now() - t).count();

  t = Clock::now();
  while (!live.empty()) {
    std::vector<Sequence*> next;
    for (Sequence* s : live) {
      uint32_t token = 0;
      gptoss::check(gptoss_context_sample(s->context.get(), s->sampler.get(), &token),
                    "gptoss_context_sample");
      if (diagnostics) {
        std::string prefix = "#" + std::to_string(first + (s - sequences.data()) + 1) + " ";
        diagnostics->print(stderr, s->context.get(), token, prefix.c_str());
      }
      s->completion->on_token(token);
      ++s->generated;
      ++totals.generated_tokens;
      size_t used = 0;
      gptoss::check(gptoss_context_get_num_tokens(s->context.get(), &used),
                    "gptoss_context_get_num_tokens");
      if (stop.contains(token) || finished(s->constraint.get()) || s->generated == options.max_tokens ||
          used >= s->capacity)
        continue;
      gptoss::check(gptoss_context_append_tokens(s->context.get(), 1, &token),
                    "gptoss_context_append_tokens");
      next.push_back(s);
    }
    live = std::move(next);
    if (!live.empty()) process(live);
  }
  totals.decode_seconds += std::chrono::duration<double>(Clock::now() - t).count();

  std::vector<std::string> lines;
  for (Sequence& s : sequences) {
    s.completion->finish();
    const bool closed_by_budget = s.constraint.closed_by_budget();
    if (closed_by_budget) {
      ++totals.closed_by_budget;
      totals.budget_source = s.constraint.budget_source();
    }
    if (options.format == OutputFormat::ids) {
      lines.push_back(ids_line(s.completion->tokens()));
    } else if (options.format == OutputFormat::json) {
      nlohmann::json out = {{"text", s.completion->answer()},
                            {"tokens", s.completion->tokens()},
                            {"messages", nlohmann::json::parse(s.completion->messages_json())},
                            {"closed_by_budget", closed_by_budget}};
      lines.push_back(out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
      lines.push_back(one_line(s.completion->answer()));
    }
  }
  return lines;
}

}  // namespace

int run_getp(const Options& options) {
  std::vector<std::string> prompts = read_prompts(*options.input);
  std::FILE* out = stdout;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(nullptr, std::fclose);
  if (!options.output.empty() && options.output != "-") {
    file.reset(std::fopen(options.output.c_str(), "w"));
    if (!file) throw UsageError("cannot write outputs file " + options.output);
    out = file.get();
  }

  auto [model, tokenizer, seed] = open_session(options);
  const size_t batch = std::min(options.batch, std::max<size_t>(prompts.size(), 1));
  gptoss::kvcache kvcache = make_kvcache(model.get(), options, batch);
  gptoss::grammar grammar = make_grammar(tokenizer.get(), options);
  check_token_budget(grammar.get(), options);

  Totals totals;
  const auto start = Clock::now();
  for (size_t first = 0; first < prompts.size(); first += batch) {
    size_t last = std::min(prompts.size(), first + batch);
    for (const std::string& line : run_batch(model.get(), tokenizer.get(), kvcache.get(), grammar.get(),
                                             options, seed, prompts, first, last, totals)) {
      std::fprintf(out, "%s\n", line.c_str());
    }
    std::fflush(out);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (file && std::fclose(file.release()) != 0) throw UsageError("cannot write " + options.output);
  if (!options.quiet) {
    const size_t total = totals.prompt_tokens + totals.generated_tokens;
    std::fprintf(stderr,
                 "[getp: %zu prompts in batches of %zu | %zu tokens (%zu prompt, %zu generated) "
                 "in %.2f s, %.1f tok/s | prefill %.1f tok/s | decode %.1f tok/s]\n",
                 prompts.size(), batch, total, totals.prompt_tokens, totals.generated_tokens,
                 seconds, seconds > 0 ? total / seconds : 0.0,
                 totals.prefill_seconds > 0 ? totals.prompt_tokens / totals.prefill_seconds : 0.0,
                 totals.decode_seconds > 0 ? totals.generated_tokens / totals.decode_seconds : 0.0);
    if (totals.closed_by_budget > 0)
      std::fprintf(stderr, "gptoss: the token budget closed %zu of %zu answers (%s)\n",
                   totals.closed_by_budget, prompts.size(), totals.budget_source.c_str());
  }
  return 0;
}

}  // namespace gptoss_cli
