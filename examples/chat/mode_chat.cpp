// `gptoss chat`: a Harmony conversation read line by line from stdin (a terminal or a
// script). Each turn re-renders the whole conversation and reuses the KV of the prefix the
// context already holds, so only the new tokens are processed.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iostream>

#include "completion.hpp"
#include "constraints.hpp"
#include "conversation.hpp"
#include "modes.hpp"

namespace gptoss_cli {
namespace {

// Ctrl-C while an answer streams stops the answer; at the prompt it quits.
std::atomic<bool> g_generating{false};
std::atomic<bool> g_interrupt{false};

void on_sigint(int) {
  if (g_generating.load()) {
    g_interrupt.store(true);
  } else {
    static const char newline = '\n';
    (void)!write(STDERR_FILENO, &newline, 1);
    _exit(130);
  }
}

void install_sigint_handler() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_sigint;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
}

// Makes the context hold exactly `tokens`: keeps the longest common prefix (its KV stays
// valid) and appends the rest. At least one token is left to process so logits exist.
void sync_context(gptoss_context_t context, const std::vector<uint32_t>& tokens) {
  std::vector<uint32_t> held = gptoss::tokens(context);
  size_t common = 0;
  while (common < held.size() && common < tokens.size() && held[common] == tokens[common]) ++common;
  if (common == tokens.size() && common > 0) --common;
  gptoss::check(gptoss_context_truncate(context, common), "gptoss_context_truncate");
  gptoss::check(
      gptoss_context_append_tokens(context, tokens.size() - common, tokens.data() + common),
      "appending the conversation");
}

const char* kHelp =
    "commands: /reset (new conversation)  /save FILE  /load FILE  /quit (or Ctrl-D)\n"
    "Ctrl-C stops the answer being written.\n";

}  // namespace

int run_chat(const Options& options) {
  auto [model, tokenizer, seed] = open_session(options);
  gptoss::kvcache kvcache = make_kvcache(model.get(), options, 1);
  gptoss::context context = make_context(model.get(), options, kvcache.get());
  gptoss::sampler sampler = make_sampler(options, seed);
  gptoss::grammar grammar = make_grammar(tokenizer.get(), options);
  check_token_budget(grammar.get(), options);
  gptoss::speculator speculator = make_speculator(options);
  Conversation conversation(options);
  std::vector<uint32_t> raw_history;  // --raw: every token so far, prompts and completions

  const bool interactive = isatty(STDIN_FILENO);
  Display display{stdout, options.show_reasoning.value_or(true), isatty(STDOUT_FILENO) != 0};
  install_sigint_handler();
  if (interactive && !options.quiet) std::fputs(kHelp, stderr);

  std::string line;
  while (true) {
    if (interactive) {
      std::fputs(">>> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;

    if (line[0] == '/') {
      std::string command = line.substr(0, line.find(' '));
      std::string argument = line.size() > command.size() ? line.substr(command.size() + 1) : "";
      try {
        if (command == "/quit" || command == "/exit") break;
        if (command == "/help") {
          std::fputs(kHelp, stderr);
        } else if (command == "/reset") {
          conversation.reset();
          raw_history.clear();
          gptoss::check(gptoss_context_reset(context.get()), "gptoss_context_reset");
          std::fputs("[conversation reset]\n", stderr);
        } else if (command == "/save" && !argument.empty()) {
          conversation.save(argument);
          std::fprintf(stderr, "[saved %zu messages to %s]\n", conversation.size(), argument.c_str());
        } else if (command == "/load" && !argument.empty()) {
          Conversation loaded = conversation;
          loaded.load(argument);
          gptoss::render(tokenizer.get(), loaded.to_json());  // rejects what cannot render
          conversation = loaded;
          std::fprintf(stderr, "[loaded %zu messages from %s]\n", conversation.size(), argument.c_str());
        } else {
          std::fprintf(stderr, "gptoss: unknown command or missing FILE: %s\n", line.c_str());
          std::fputs(kHelp, stderr);
        }
      } catch (const std::exception& e) {  // a bad file must not end the conversation
        std::fprintf(stderr, "gptoss: %s\n", e.what());
      }
      continue;
    }

    std::vector<uint32_t> prompt;
    if (options.harmony) {
      conversation.add_user(line);
      try {
        prompt = gptoss::render(tokenizer.get(), conversation.to_json());
      } catch (const gptoss::error& e) {
        conversation.pop_last();
        std::fprintf(stderr, "gptoss: %s\n", e.what());
        continue;
      }
    } else {
      prompt = raw_history;
      std::vector<uint32_t> text =
          gptoss::encode(tokenizer.get(), line + "\n", GPTOSS_ENCODE_ALLOW_SPECIAL);
      prompt.insert(prompt.end(), text.begin(), text.end());
    }
    size_t capacity = 0;
    gptoss::check(gptoss_context_get_max_tokens(context.get(), &capacity),
                  "gptoss_context_get_max_tokens");
    if (prompt.size() >= capacity) {
      if (options.harmony) conversation.pop_last();
      std::fprintf(stderr,
                   "gptoss: the conversation (%zu tokens) no longer fits the context of %zu "
                   "tokens; /reset to start over\n", prompt.size(), capacity);
      continue;
    }
    sync_context(context.get(), prompt);

    Completion completion(tokenizer.get(), options.harmony, display);
    AnswerConstraint constraint;  // a fresh one each turn
    try {
      constraint = attach_constraint(grammar.get(), sampler.get(), options, sampling_room(context.get()));
    } catch (const UsageError& e) {  // the context too full for an answer: like a prompt that does not fit
      if (options.harmony) conversation.pop_last();
      std::fprintf(stderr, "gptoss: %s; /reset to start over\n", e.what());
      continue;
    }
    g_interrupt.store(false);
    g_generating.store(true);
    GenerationStats stats;
    try {
      stats = generate(model.get(), context.get(), sampler.get(), tokenizer.get(), options,
                       completion, &g_interrupt, constraint.get(), speculator.get());
    } catch (...) {
      g_generating.store(false);
      throw;
    }
    g_generating.store(false);
    completion.finish();
    if (options.harmony) {
      conversation.add_parsed(completion.messages_json());
    } else {
      StopTokens stop(tokenizer.get(), false);
      raw_history = prompt;
      for (uint32_t token : completion.tokens())
        if (!stop.contains(token)) raw_history.push_back(token);
    }
    if (stats.interrupted) std::fputs("[interrupted]\n", stderr);
    if (constraint.closed_by_budget() && !options.quiet)
      std::fprintf(stderr, "gptoss: the token budget closed the answer (%s)\n",
                   constraint.budget_source().c_str());
    if (!options.quiet) stats.print(stderr);
  }
  return 0;
}

}  // namespace gptoss_cli
