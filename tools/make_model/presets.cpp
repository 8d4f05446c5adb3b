#include "tools/make_model/presets.hpp"

#include "libgptoss/common/error.hpp"

namespace gptoss::make_model {

Preset preset(const std::string& name, uint32_t num_layers) {
  ModelConfig c;  // defaults: gpt-oss-20b
  bool sharded = true;
  if (name == "20b") {
    // defaults as they are
  } else if (name == "120b") {
    c.num_layers = 36;
    c.num_experts = 128;
  } else if (name == "tiny" || name == "conformance") {
    c.num_layers = name == "tiny" ? 2 : 4;
    c.hidden_size = 64;
    c.num_heads = 8;
    c.num_kv_heads = 1;
    c.intermediate_size = 64;
    sharded = false;
  } else if (name == "wide") {
    // The batch-invariance tests' second shape, generated afresh per seed: the attention
    // output's and the MoE down projection's K (576) past the CPU panels' 512-wide chunks, 18
    // MXFP4 blocks a row (not a multiple of the int8 kernels' 16 chains), 3 KV heads; the
    // tiny preset's hidden size keeps the full vocabulary's tables small.
    c.num_layers = 2;
    c.hidden_size = 64;
    c.num_heads = 9;
    c.num_kv_heads = 3;
    c.num_experts = 8;
    c.intermediate_size = 576;
    sharded = false;
  } else if (name == "micro") {
    // The smallest checkpoint with every tensor kind and both attention kinds, every row a
    // multiple of 32 wide (Q8_0), about 20 KB: seeds for the loader fuzzers. Its 16-token
    // vocabulary fits no tokenizer, so it loads only as a bare checkpoint.
    c.vocab_size = 16;
    c.num_layers = 2;
    c.hidden_size = 32;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_dim = 16;
    c.num_experts = 1;
    c.experts_per_token = 1;
    c.intermediate_size = 32;
    c.sliding_window = 4;
    c.max_context_length = 64;
    sharded = false;
  } else {
    fail(gptoss_status_invalid_argument,
         "unknown preset \"{}\" (tiny, conformance, wide, 20b, 120b, micro)", name);
  }
  if (num_layers > 0) c.num_layers = num_layers;
  c.layer_is_sliding.clear();
  for (uint32_t l = 0; l < c.num_layers; ++l) c.layer_is_sliding.push_back(l % 2 == 0);
  c.validate();
  return {name, c, sharded};
}

}  // namespace gptoss::make_model
