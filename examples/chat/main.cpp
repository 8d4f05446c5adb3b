// gptoss: chat, generate and batch-evaluate with libgptoss, through its public C API only.
#include <cstdio>
#include <exception>

#include <nlohmann/json.hpp>

#include <gptoss.hpp>

#include "cli_options.hpp"
#include "conversation.hpp"
#include "generation.hpp"
#include "model_loader.hpp"
#include "modes.hpp"

namespace gptoss_cli {

std::vector<uint32_t> prompt_tokens(gptoss_tokenizer_t tokenizer, const Options& options,
                                    const std::string& prompt) {
  if (!options.harmony) {
    // A raw prompt is continued; with no token at all there is nothing to continue from.
    if (prompt.empty()) throw UsageError("an empty prompt cannot be continued with --raw");
    return gptoss::encode(tokenizer, prompt, GPTOSS_ENCODE_ALLOW_SPECIAL);
  }
  Conversation conversation(options);
  conversation.add_user(prompt);
  return gptoss::render(tokenizer, conversation.to_json());
}

void print_model_info(gptoss_model_t model, uint64_t seed) {
  gptoss_model_info info{};
  info.struct_size = sizeof(info);
  gptoss::check(gptoss_model_get_info(model, &info), "gptoss_model_get_info");
  std::fprintf(stderr,
               "gptoss: %s model on %s (%s kernels, %s): %zu/%zu layers, hidden %zu, %zu experts "
               "(%zu active), vocab %zu, %.3g parameters; seed %llu\n",
               info.format ? info.format : "?", info.backend ? info.backend : "?",
               info.kernels && *info.kernels ? info.kernels : "unnamed",
               info.batch_invariant ? "batch invariant" : "not batch invariant", info.num_layers,
               info.num_layers_total, info.hidden_size, info.num_experts, info.num_active_experts,
               info.vocab_size, static_cast<double>(info.num_parameters),
               static_cast<unsigned long long>(seed));
}

Session open_session(const Options& options) {
  gptoss::model model = load_model(options);
  gptoss::tokenizer tokenizer = model.get_tokenizer();
  const uint64_t seed = resolve_seed(options);
  if (options.verbose) print_model_info(model.get(), seed);
  return {std::move(model), std::move(tokenizer), seed};
}

}  // namespace gptoss_cli

int main(int argc, char** argv) {
  using namespace gptoss_cli;
  try {
    std::optional<Options> options = parse_options(argc, argv);
    if (!options) return 0;
    switch (options->mode) {
      case Mode::chat: return run_chat(*options);
      case Mode::generate: return run_generate(*options);
      case Mode::getp: return run_getp(*options);
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gptoss: %s\n", e.what());
    return 2;
  } catch (const gptoss::error& e) {
    std::fprintf(stderr, "gptoss: %s\n", e.what());
    return 1;
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "gptoss: bad JSON from the library: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gptoss: %s\n", e.what());
    return 1;
  }
  return 0;
}
