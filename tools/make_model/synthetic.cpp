#include "tools/make_model/synthetic.hpp"

#include <cmath>

#include "libgptoss/model/dtypes.hpp"

namespace gptoss::make_model {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_at(uint64_t key, uint64_t i) { return mix(key + (i + 1) * 0x9e3779b97f4a7c15ull); }

uint64_t tensor_key(const TensorSpec& spec, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the canonical name
  for (char c : spec.name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return mix(h ^ mix(seed));
}

}  // namespace

float DenseGenerator::operator()(uint64_t i) const {
  // Sum of four uniform 16-bit draws (Irwin-Hall), rescaled to unit variance: close enough to
  // normal for weights, and cheap.
  const uint64_t h = hash_at(key, i);
  const double s = double(h & 0xffff) + double((h >> 16) & 0xffff) + double((h >> 32) & 0xffff) +
                   double(h >> 48);
  const double normal = (s / 65536.0 - 2.0) * std::sqrt(3.0);
  return bf16_to_f32(f32_to_bf16(static_cast<float>(mean + stddev * normal)));
}

void Mxfp4Generator::block(uint64_t b, uint8_t* data16, uint8_t* scale) const {
  const uint64_t h0 = hash_at(key, 2 * b), h1 = hash_at(key, 2 * b + 1);
  for (int j = 0; j < 8; ++j) {
    data16[j] = static_cast<uint8_t>(h0 >> (8 * j));
    data16[8 + j] = static_cast<uint8_t>(h1 >> (8 * j));
  }
  *scale = static_cast<uint8_t>(min_exponent + (mix(h0 ^ h1) & 1));
}

DenseGenerator dense_generator(const TensorSpec& spec, uint64_t seed) {
  float mean = 0, stddev = 0.02f;
  switch (spec.role) {
    case gptoss_tensor_embedding: stddev = 1.0f; break;
    case gptoss_tensor_final_norm:
    case gptoss_tensor_attn_norm:
    case gptoss_tensor_mlp_norm: mean = 1.0f; stddev = 0.1f; break;
    case gptoss_tensor_attn_sinks: stddev = 0.5f; break;
    case gptoss_tensor_router_bias: stddev = 0.1f; break;
    case gptoss_tensor_unembedding:
    case gptoss_tensor_attn_q:
    case gptoss_tensor_attn_k:
    case gptoss_tensor_attn_v:
    case gptoss_tensor_attn_out:
    case gptoss_tensor_router:
      stddev = static_cast<float>(1.0 / std::sqrt(double(spec.shape.back())));  // 1/sqrt(fan_in)
      break;
    default: break;  // biases
  }
  return {tensor_key(spec, seed), mean, stddev};
}

Mxfp4Generator mxfp4_generator(const TensorSpec& spec, uint64_t seed) {
  // Uniform E2M1 codes have RMS sqrt(68.5 / 8); pick scales 2^k, 2^(k+1) around the scale
  // that gives RMS 1/sqrt(fan_in).
  const double target = 1.0 / (std::sqrt(double(spec.shape.back())) * std::sqrt(68.5 / 8.0));
  const int k = static_cast<int>(std::floor(std::log2(target)));
  return {tensor_key(spec, seed) ^ 0x6d786670ull, static_cast<uint8_t>(127 + k)};
}

}  // namespace gptoss::make_model
