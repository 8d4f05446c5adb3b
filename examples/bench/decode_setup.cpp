// The setup the model benchmarks share: model and context options from the command line, a
// greedy sampler, the fixed prompt.
#include "bench.hpp"

namespace gptoss::bench {

gptoss_model_options model_options(const Options& o) {
  gptoss_model_options mo;
  gptoss_model_options_init(&mo);
  mo.num_threads = o.threads;
  mo.use_mmap = o.use_mmap ? 1 : 0;
  mo.precision = o.exact ? gptoss_precision_exact : gptoss_precision_fast;
  if (!o.backend.empty()) mo.backend = o.backend.c_str();
  if (!o.tokenizer_json.empty()) mo.tokenizer_path = o.tokenizer_json.c_str();
  return mo;
}

gptoss_context_options decode_context_options(const Options& o, size_t context_length,
                                              size_t max_batch_tokens) {
  gptoss_context_options co;
  gptoss_context_options_init(&co);
  co.context_length = context_length;
  co.max_batch_tokens = max_batch_tokens;
  co.kv_dtype = o.kv_bf16 ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32;
  return co;
}

gptoss::sampler greedy_sampler() {
  gptoss_sampler_options so;
  gptoss_sampler_options_init(&so);
  so.temperature = 0.0f;
  return gptoss::sampler::create(&so, "creating a sampler");
}

std::vector<uint32_t> bench_prompt(size_t n, size_t vocab_size) {
  std::vector<uint32_t> prompt(n);
  const size_t id_range = text_id_range(vocab_size);
  for (size_t i = 0; i < n; ++i) prompt[i] = uint32_t(1000 + (i * 7919 + 13) % id_range);
  return prompt;
}

}  // namespace gptoss::bench
