// `gptoss generate -i PROMPT`: one prompt, the answer streamed to stdout.
#include <unistd.h>

#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "completion.hpp"
#include "constraints.hpp"
#include "modes.hpp"

namespace gptoss_cli {

std::string ids_line(const std::vector<uint32_t>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
  return line;
}

int run_generate(const Options& options) {
  std::string prompt = *options.input;
  if (prompt == "-") prompt.assign(std::istreambuf_iterator<char>(std::cin), {});

  auto [model, tokenizer, seed] = open_session(options);

  gptoss::kvcache kvcache = make_kvcache(model.get(), options, 1);
  gptoss::context context = make_context(model.get(), options, kvcache.get());
  gptoss::sampler sampler = make_sampler(options, seed);
  gptoss::grammar grammar = make_grammar(tokenizer.get(), options);
  check_token_budget(grammar.get(), options);
  std::vector<uint32_t> prompt_ids = prompt_tokens(tokenizer.get(), options, prompt);
  gptoss::check(gptoss_context_append_tokens(context.get(), prompt_ids.size(), prompt_ids.data()),
                "appending the prompt");
  AnswerConstraint constraint =
      attach_constraint(grammar.get(), sampler.get(), options, sampling_room(context.get()));

  // Text streams as it comes; ids and json are printed whole at the end.
  Display display;
  if (options.format == OutputFormat::text) {
    display.out = stdout;
    display.show_reasoning = options.show_reasoning.value_or(false);
    display.color = isatty(STDOUT_FILENO);
  }
  Completion completion(tokenizer.get(), options.harmony, display);
  gptoss::speculator speculator = make_speculator(options);
  GenerationStats stats =
      generate(model.get(), context.get(), sampler.get(), tokenizer.get(), options, completion,
               nullptr, constraint.get(), speculator.get());
  completion.finish();
  const bool closed_by_budget = constraint.closed_by_budget();

  if (options.format == OutputFormat::ids) {
    std::printf("%s\n", ids_line(completion.tokens()).c_str());
  } else if (options.format == OutputFormat::json) {
    nlohmann::json out = {
        {"text", completion.answer()},
        {"tokens", completion.tokens()},
        {"messages", nlohmann::json::parse(completion.messages_json())},
        {"prompt_tokens", stats.prompt_tokens},
        {"generated_tokens", stats.generated_tokens},
        {"prefill_tokens_per_second", stats.prefill_tokens_per_second()},
        {"decode_tokens_per_second", stats.decode_tokens_per_second()},
        {"first_token_seconds", stats.first_token_seconds},
        {"closed_by_budget", closed_by_budget}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::fflush(stdout);
  if (closed_by_budget && !options.quiet)
    std::fprintf(stderr, "gptoss: the token budget closed the answer (%s)\n",
                 constraint.budget_source().c_str());
  if (!options.quiet) stats.print(stderr);
  return 0;
}

}  // namespace gptoss_cli
