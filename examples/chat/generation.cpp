// One context's decode loop: process (prefill), then sample -> append -> process per token.
#include "generation.hpp"

#include "constraints.hpp"
#include "model_loader.hpp"

#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <string>

namespace gptoss_cli {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Printable form of a token's bytes: control characters escaped, quotes kept readable.
std::string printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '"') out += "\\\"";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out;
}
}  // namespace

StopTokens::StopTokens(gptoss_tokenizer_t tokenizer, bool harmony) {
  ids_.push_back(gptoss::special_token(tokenizer, gptoss_special_token_return));
  ids_.push_back(gptoss::special_token(tokenizer, gptoss_special_token_call));
  if (!harmony) ids_.push_back(gptoss::special_token(tokenizer, gptoss_special_token_endoftext));
}

bool StopTokens::contains(uint32_t token) const {
  for (uint32_t id : ids_)
    if (id == token) return true;
  return false;
}

double GenerationStats::prefill_tokens_per_second() const {
  return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0.0;
}

double GenerationStats::decode_tokens_per_second() const {
  return generated_tokens > 1 && decode_seconds > 0 ? (generated_tokens - 1) / decode_seconds
                                                    : 0.0;
}

void GenerationStats::print(std::FILE* out) const {
  std::fprintf(out,
               "[prompt %zu tok, prefill %.1f tok/s | generated %zu tok, decode %.1f tok/s | "
               "first token %.3f s%s]\n",
               prompt_tokens, prefill_tokens_per_second(), generated_tokens,
               decode_tokens_per_second(), first_token_seconds,
               interrupted ? " | interrupted" : context_full ? " | context full" : "");
}

uint64_t resolve_seed(const Options& options) {
  if (options.seed) return *options.seed;
  std::random_device device;
  return (uint64_t{device()} << 32) | device();
}

gptoss::sampler make_sampler(const Options& options, uint64_t seed) {
  gptoss_sampler_options so;
  gptoss::check(gptoss_sampler_options_init(&so), "gptoss_sampler_options_init");
  so.temperature = options.temperature;
  so.top_p = options.top_p;
  so.top_k = options.top_k;
  so.min_p = options.min_p;
  so.seed = seed;
  return gptoss::sampler::create(&so);
}

gptoss::context make_context(gptoss_model_t model, const Options& options,
                             gptoss_kvcache_t kvcache) {
  gptoss_context_options co;
  gptoss::check(gptoss_context_options_init(&co), "gptoss_context_options_init");
  co.context_length = options.context_length;
  co.kvcache = kvcache;
  co.kv_dtype = options.kv_bf16 ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32;  // private pools
  return gptoss::context::create(model, &co, "creating a context");
}

gptoss::kvcache make_kvcache(gptoss_model_t model, const Options& options, size_t max_sequences) {
  if (options.max_kv == 0) return {};
  gptoss_kvcache_options ko;
  gptoss::check(gptoss_kvcache_options_init(&ko), "gptoss_kvcache_options_init");
  ko.capacity_tokens = options.max_kv;
  ko.max_sequences = max_sequences;
  ko.dtype = options.kv_bf16 ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32;
  return gptoss::kvcache::create(model, ko, "creating the KV cache");
}

TokenDiagnostics::TokenDiagnostics(gptoss_model_t model, gptoss_tokenizer_t tokenizer)
    : tokenizer_(tokenizer), logits_(gptoss::model_info(model).vocab_size) {}

void TokenDiagnostics::print(std::FILE* out, gptoss_context_t context, uint32_t sampled,
                             const char* prefix) {
  size_t n = 0;
  gptoss::check(gptoss_context_get_logits(context, logits_.data(), logits_.size(), &n),
                "gptoss_context_get_logits");
  // Softmax in double: entropy H = log Z - sum(p * x) with x shifted by the max.
  size_t top = 0;
  for (size_t i = 1; i < n; ++i)
    if (logits_[i] > logits_[top]) top = i;
  const double max = logits_[top];
  double z = 0, weighted = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = logits_[i] - max;
    double e = std::exp(x);
    z += e;
    weighted += e * x;
  }
  const double entropy = std::log(z) - weighted / z;
  const double p_sampled = sampled < n ? std::exp(logits_[sampled] - max) / z : 0.0;
  std::fprintf(out, "%s[token %u \"%s\" p=%.4f | entropy %.3f nats | top-1 %u \"%s\" p=%.4f]\n",
               prefix, sampled, printable(gptoss::token_bytes(tokenizer_, sampled)).c_str(),
               p_sampled, entropy, static_cast<unsigned>(top),
               printable(gptoss::token_bytes(tokenizer_, static_cast<uint32_t>(top))).c_str(),
               1.0 / z);
}

gptoss::speculator make_speculator(const Options& options) {
  if (options.draft == "none") return {};
  gptoss_speculator_options so;
  gptoss::check(gptoss_speculator_options_init(&so), "gptoss_speculator_options_init");
  so.max_draft = options.draft_max;
  gptoss::model draft_model;
  if (options.draft != "ngram") {
    Options draft_options = options;
    draft_options.model_path = options.draft;
    draft_options.layers = 0;
    draft_model = load_model(draft_options);
    so.draft_model = draft_model.get();  // the speculator retains it
  }
  return gptoss::speculator::create(&so);
}

GenerationStats generate(gptoss_model_t model, gptoss_context_t context, gptoss_sampler_t sampler,
                         gptoss_tokenizer_t tokenizer, const Options& options, TokenSink& sink,
                         const std::atomic<bool>* interrupt, gptoss_constraint_t constraint,
                         gptoss_speculator_t speculator) {
  GenerationStats stats;
  StopTokens stop(tokenizer, options.harmony);
  size_t total = 0, processed = 0, capacity = 0;
  gptoss::check(gptoss_context_get_num_tokens(context, &total), "gptoss_context_get_num_tokens");
  gptoss::check(gptoss_context_get_num_processed_tokens(context, &processed),
                "gptoss_context_get_num_processed_tokens");
  gptoss::check(gptoss_context_get_max_tokens(context, &capacity), "gptoss_context_get_max_tokens");
  stats.prompt_tokens = total - processed;

  const auto start = Clock::now();
  gptoss::check(gptoss_context_process(context), "gptoss_context_process");
  stats.prefill_seconds = seconds_since(start);

  std::optional<TokenDiagnostics> diagnostics;
  if (options.verbose) diagnostics.emplace(model, tokenizer);
  Clock::time_point first_token_at;
  std::vector<uint32_t> step;
  for (size_t i = 0; i < options.max_tokens;) {
    if (interrupt && interrupt->load()) {
      stats.interrupted = true;
      break;
    }
    // One token, or with a speculator the tokens of one verified draft (the last not appended).
    if (speculator != nullptr) {
      step = gptoss::speculate(speculator, context, sampler, options.max_tokens - i, stop.ids());
    } else {
      step.assign(1, 0);
      gptoss::check(gptoss_context_sample(context, sampler, &step[0]), "gptoss_context_sample");
    }
    bool done = false;
    for (size_t j = 0; j < step.size() && !done; ++j, ++i) {
      const uint32_t token = step[j];
      if (i == 0) {
        first_token_at = Clock::now();
        stats.first_token_seconds = seconds_since(start);
      }
      stats.decode_seconds = seconds_since(first_token_at);
      ++stats.generated_tokens;
      // The context's logits are those that chose the step's last token.
      if (diagnostics && j + 1 == step.size()) diagnostics->print(stderr, context, token, "");
      sink.on_token(token);
      // The constraint has seen the whole step: it can only have finished at the step's last
      // token (a verification ends at the token that finishes it).
      done = stop.contains(token) || (j + 1 == step.size() && finished(constraint)) ||
             i + 1 == options.max_tokens;
    }
    if (done) break;
    if (total + stats.generated_tokens > capacity) {
      stats.context_full = true;
      break;
    }
    gptoss::check(gptoss_context_append_tokens(context, 1, &step.back()),
                  "gptoss_context_append_tokens");
    gptoss::check(gptoss_context_process(context), "gptoss_context_process");
  }
  if (speculator != nullptr) {
    stats.speculation = gptoss::speculator_stats(speculator);
    if (options.verbose)
      std::fprintf(
          stderr, "[speculative: %llu steps, drafted %llu, accepted %llu (%.0f%%), forced %llu]\n",
          static_cast<unsigned long long>(stats.speculation.steps),
          static_cast<unsigned long long>(stats.speculation.drafted),
          static_cast<unsigned long long>(stats.speculation.accepted),
          stats.speculation.drafted
              ? 100.0 * double(stats.speculation.accepted) / double(stats.speculation.drafted)
              : 0.0,
          static_cast<unsigned long long>(stats.speculation.forced));
  }
  return stats;
}

}  // namespace gptoss_cli
