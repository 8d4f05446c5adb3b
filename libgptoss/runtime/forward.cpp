// The forward pass, written once as backend op calls (DESIGN.md "The model's math"):
//   x = embed(tokens)
//   per layer: x += o_proj(attention(rope(q), rope(k), v, sinks, window)) of rmsnorm(x)
//              x += moe(router top-4 of rmsnorm(x))
//   logits = unembed(rmsnorm(x)) for the last token of each sequence that asks.
#include "libgptoss/runtime/forward.hpp"

#include <cmath>
#include <vector>

#include "libgptoss/common/error.hpp"
#include "libgptoss/runtime/context.hpp"

namespace gptoss {
namespace {

// Device buffers of one step, released at the end of it.
class StepBuffers {
 public:
  explicit StepBuffers(const BackendDevice& dev) : dev_(dev) {}
  ~StepBuffers() {
    for (void* b : bufs_) dev_.api().buffer_free(dev_.dev(), b);
  }
  void* alloc(size_t bytes) {
    void* b = nullptr;
    dev_.check(dev_.api().buffer_alloc(dev_.dev(), bytes, &b), "buffer allocation");
    bufs_.push_back(b);
    return b;
  }
  template <typename T>
  void* upload(void* stream, const std::vector<T>& host) {
    void* b = alloc(std::max<size_t>(1, host.size()) * sizeof(T));
    if (!host.empty())
      dev_.check(dev_.api().buffer_write(stream, b, 0, host.data(), host.size() * sizeof(T)),
                 "buffer write");
    return b;
  }

 private:
  const BackendDevice& dev_;
  std::vector<void*> bufs_;
};

class Stream {
 public:
  explicit Stream(const BackendDevice& dev) : dev_(dev) {
    dev_.check(dev_.api().stream_create(dev_.dev(), &s_), "stream creation");
  }
  ~Stream() { dev_.api().stream_destroy(dev_.dev(), s_); }
  void* get() const { return s_; }

 private:
  const BackendDevice& dev_;
  void* s_ = nullptr;
};

}  // namespace

// Reaches into Context for its pages; a friend of Context.
class ForwardStep {
 public:
  static void run(KvPool& pool, std::span<const SequenceChunk> chunks);
};

void ForwardStep::run(KvPool& pool, std::span<const SequenceChunk> chunks) {
  const Model& model = pool.model();
  const ModelConfig& c = model.config();
  const BackendDevice& dev = model.device();
  const gptoss_backend_api& api = dev.api();
  const size_t P = KvPool::kPageSize;
  const size_t H = c.hidden_size, nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim;
  const size_t q_dim = nh * hd, kv_dim = nkv * hd, top_k = c.experts_per_token;

  for (const auto& ch : chunks) ch.context->prepare_pages(ch.begin, ch.end);

  // Host-side metadata: tokens, positions, and per page group the slots and attention spans.
  std::vector<int32_t> tokens, positions, slots[2], page_table[2];
  std::vector<gptoss_attn_token> attn[2];
  std::vector<size_t> logit_rows;
  for (const auto& ch : chunks) {
    const Context& ctx = *ch.context;
    int32_t offset[2];
    for (int g = 0; g < 2; ++g) {
      offset[g] = int32_t(page_table[g].size());
      page_table[g].insert(page_table[g].end(), ctx.pages_[g].begin(), ctx.pages_[g].end());
    }
    for (size_t pos = ch.begin; pos < ch.end; ++pos) {
      tokens.push_back(int32_t(ctx.tokens_[pos]));
      positions.push_back(int32_t(pos));
      for (int g = 0; g < 2; ++g) {
        slots[g].push_back(int32_t(size_t(ctx.page_at(PageGroup(g), pos)) * P + pos % P));
        const size_t start = g == int(PageGroup::sliding) && pos + 1 > c.sliding_window
                                 ? pos + 1 - c.sliding_window
                                 : 0;
        attn[g].push_back({int32_t(pos), int32_t(start), offset[g], 0});
      }
    }
    if (ch.want_logits) logit_rows.push_back(tokens.size() - 1);
  }
  const size_t T = tokens.size();

  Stream stream(dev);
  void* s = stream.get();
  StepBuffers buf(dev);
  void* d_tokens = buf.upload(s, tokens);
  void* d_positions = buf.upload(s, positions);
  void *d_slots[2], *d_attn[2], *d_pages[2];
  for (int g = 0; g < 2; ++g) {
    d_slots[g] = buf.upload(s, slots[g]);
    d_attn[g] = buf.upload(s, attn[g]);
    d_pages[g] = buf.upload(s, page_table[g]);
  }
  void* x = buf.alloc(T * H * 4);
  void* h = buf.alloc(T * H * 4);
  void* y = buf.alloc(T * H * 4);
  void* q = buf.alloc(T * q_dim * 4);
  void* k = buf.alloc(T * kv_dim * 4);
  void* v = buf.alloc(T * kv_dim * 4);
  void* a = buf.alloc(T * q_dim * 4);
  void* ids = buf.alloc(T * top_k * 4);
  void* gates = buf.alloc(T * top_k * 4);

  auto W = [&](uint32_t l, gptoss_tensor_role r) { return model.layer_weight(l, r); };
  const gptoss_rope_params rope = {c.rope_theta,     c.rope_scaling_factor, c.rope_original_context,
                                   c.rope_beta_fast, c.rope_beta_slow,      c.rope_truncate ? 1 : 0};
  const float scale = 1.0f / std::sqrt(float(hd));

  dev.check(api.embedding(s, model.embedding(), d_tokens, T, x), "embedding");
  for (uint32_t l = 0; l < model.num_layers(); ++l) {
    const int g = int(pool.group_of(l));
    dev.check(api.rmsnorm(s, x, W(l, gptoss_tensor_attn_norm), T, H, c.rms_norm_eps, h), "rmsnorm");
    dev.check(api.linear(s, h, W(l, gptoss_tensor_attn_q), W(l, gptoss_tensor_attn_q_bias), T, H, q_dim, q), "q projection");
    dev.check(api.linear(s, h, W(l, gptoss_tensor_attn_k), W(l, gptoss_tensor_attn_k_bias), T, H, kv_dim, k), "k projection");
    dev.check(api.linear(s, h, W(l, gptoss_tensor_attn_v), W(l, gptoss_tensor_attn_v_bias), T, H, kv_dim, v), "v projection");
    dev.check(api.rope(s, q, d_positions, T, nh, hd, &rope), "rope(q)");
    dev.check(api.rope(s, k, d_positions, T, nkv, hd, &rope), "rope(k)");
    dev.check(api.kv_write(s, pool.k(l), pool.v(l), pool.dtype(), k, v, d_slots[g], T, kv_dim), "kv_write");
    dev.check(api.attention(s, q, pool.k(l), pool.v(l), pool.dtype(), W(l, gptoss_tensor_attn_sinks),
                            d_attn[g], d_pages[g], T, nh, nkv, hd, P, scale, a),
              "attention");
    dev.check(api.linear(s, a, W(l, gptoss_tensor_attn_out), W(l, gptoss_tensor_attn_out_bias), T, q_dim, H, y), "o projection");
    dev.check(api.add(s, x, y, T * H), "residual add");
    dev.check(api.rmsnorm(s, x, W(l, gptoss_tensor_mlp_norm), T, H, c.rms_norm_eps, h), "rmsnorm");
    dev.check(api.router(s, h, W(l, gptoss_tensor_router), W(l, gptoss_tensor_router_bias), T, H,
                         c.num_experts, top_k, ids, gates),
              "router");
    dev.check(api.moe(s, h, ids, gates, W(l, gptoss_tensor_mlp1), W(l, gptoss_tensor_mlp1_bias),
                      W(l, gptoss_tensor_mlp2), W(l, gptoss_tensor_mlp2_bias), T, H,
                      c.intermediate_size, top_k, c.swiglu_limit, y),
              "moe");
    dev.check(api.add(s, x, y, T * H), "residual add");
  }

  const size_t R = logit_rows.size();
  std::vector<float> logits;
  if (R > 0) {
    void* xr = buf.alloc(R * H * 4);
    for (size_t r = 0; r < R; ++r)
      dev.check(api.buffer_copy(s, xr, r * H * 4, x, logit_rows[r] * H * 4, H * 4), "row copy");
    void* hr = buf.alloc(R * H * 4);
    dev.check(api.rmsnorm(s, xr, model.final_norm(), R, H, c.rms_norm_eps, hr), "final rmsnorm");
    void* out = buf.alloc(R * c.vocab_size * 4);
    dev.check(api.linear(s, hr, model.unembedding(), nullptr, R, H, c.vocab_size, out), "unembedding");
    logits.resize(R * c.vocab_size);
    dev.check(api.buffer_read(s, out, 0, logits.data(), logits.size() * 4), "logits read");
  } else {
    dev.check(api.stream_synchronize(s), "stream synchronize");
  }

  size_t r = 0;
  for (const auto& ch : chunks) {
    Context& ctx = *ch.context;
    ctx.n_processed_ = ch.end;
    if (ch.want_logits) {
      ctx.logits_.assign(logits.begin() + std::ptrdiff_t(r * c.vocab_size),
                         logits.begin() + std::ptrdiff_t((r + 1) * c.vocab_size));
      ctx.logits_valid_ = true;
      ++r;
    } else {
      ctx.logits_valid_ = false;
    }
  }
}

void run_forward_step(KvPool& pool, std::span<const SequenceChunk> chunks) {
  ForwardStep::run(pool, chunks);
}

}  // namespace gptoss
