// The forward pass, written once as backend op calls (docs/architecture.md, "One forward step"):
//   x = embed(tokens); h = rmsnorm(x)
//   per layer: q, k, v = qkv(h); rope; KV write; a = attention; x += o_proj(a); h = rmsnorm(x)
//              ids, gates = router top-4 of h; x += moe(h); h = rmsnorm(x) (next layer's norm)
//   logits = unembed(rmsnorm(x)) for the last token of each sequence that asks, optionally
//   sampled on the device.
// A step first writes every per-step input to the step arena, then enqueues its ops, then
// synchronises once. Layers on another device than the last one receive x through a copy;
// with the experts split, each device runs its share of the MoE and device 0 sums the parts.
#include "libgptoss/runtime/forward.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "libgptoss/common/error.hpp"
#include "libgptoss/runtime/context.hpp"
#include "libgptoss/runtime/device_ops.hpp"
#include "libgptoss/runtime/step_runner.hpp"

namespace gptoss {

gptoss_sample_row sample_row_for(const Sampler& s, double uniform) {
  const SamplerParams& p = s.params();
  gptoss_sample_row r{};
  r.temperature = p.temperature;
  r.top_k = p.top_k;
  r.top_p = p.top_p;
  r.min_p = p.min_p;
  r.uniform = p.temperature > 0.0f ? uniform : 0.0;
  r.top_n = p.top_logprobs;
  return r;
}

gptoss_sample_shape sample_shape_of(std::span<const gptoss_sample_row> rows, uint32_t vocab) {
  gptoss_sample_shape s{};
  s.struct_size = sizeof s;
  s.n_rows = uint32_t(rows.size());
  s.vocab = vocab;
  s.all_greedy = 1;
  for (const gptoss_sample_row& row : rows) {
    s.max_top_k = std::max(s.max_top_k, row.top_k);
    s.max_top_n = std::max(s.max_top_n, row.top_n);
    s.all_greedy &= row.temperature == 0.0f ? 1u : 0u;
  }
  return s;
}

// Reaches into Context for its pages, tokens and logits buffer; a friend of Context.
class ForwardStep {
 public:
  ForwardStep(KvPool& pool, std::span<const SequenceChunk> chunks)
      : pool_(pool), m_(pool.model()), c_(m_.config()), p_(m_.placement()),
        runner_(pool.runner()), chunks_(chunks) {}
  void run();

 private:
  void plan();
  void write_inputs() const;
  void layers() const;
  void moe_split(uint32_t l) const;
  void output() const;
  DeviceOps ops(uint32_t d) const { return DeviceOps(m_.device(d), runner_.stream(d)); }

  KvPool& pool_;
  const Model& m_;
  const ModelConfig& c_;
  const Placement& p_;
  StepRunner& runner_;
  std::span<const SequenceChunk> chunks_;

  // Host-side metadata of the step.
  size_t T_ = 0;
  std::vector<int32_t> tokens_, positions_, slots_[2], pages_[2];
  std::vector<gptoss_attn_seq> seqs_[2];
  gptoss_attn_shape shape_[2] = {};
  // Each logit row: its chunk and its token's row in the step; sampled rows first.
  struct LogitRow {
    const SequenceChunk* chunk;
    size_t token;
  };
  std::vector<LogitRow> rows_;
  std::vector<size_t> first_row_;  // of each chunk in rows_ (its rows are consecutive)
  size_t n_sampled_ = 0;
  std::vector<gptoss_sample_row> sample_rows_;
  std::vector<uint32_t> masks_;  // n_sampled_ rows of mask words, or empty
  gptoss_step_hints hints_ = {};
  StepShape shape_need_;
};

void ForwardStep::plan() {
  const size_t P = KvPool::kPageSize;
  for (const SequenceChunk& ch : chunks_) {
    const Context& ctx = *ch.context;
    const int32_t q_begin = int32_t(tokens_.size());
    for (int g = 0; g < 2; ++g) {
      seqs_[g].push_back({q_begin, int32_t(ch.end - ch.begin), int32_t(ch.begin), int32_t(pages_[g].size())});
      pages_[g].insert(pages_[g].end(), ctx.pages_[g].begin(), ctx.pages_[g].end());
    }
    for (size_t pos = ch.begin; pos < ch.end; ++pos) {
      tokens_.push_back(int32_t(ctx.tokens_[pos]));
      positions_.push_back(int32_t(pos));
      for (int g = 0; g < 2; ++g)
        slots_[g].push_back(int32_t(size_t(ctx.page_at(PageGroup(g), pos)) * P + pos % P));
    }
    hints_.max_q = std::max<uint32_t>(hints_.max_q, uint32_t(ch.end - ch.begin));
    hints_.max_keys = std::max<uint32_t>(hints_.max_keys, uint32_t(ch.end));
  }
  T_ = tokens_.size();
  for (int g = 0; g < 2; ++g) {
    gptoss_attn_shape& s = shape_[g];
    s.struct_size = sizeof s;
    s.n_tokens = uint32_t(T_);
    s.n_seqs = uint32_t(chunks_.size());
    s.n_heads = c_.num_heads;
    s.window = g == int(PageGroup::sliding) ? c_.sliding_window : 0;
    s.scale = 1.0f / std::sqrt(float(c_.head_dim));
    s.max_q = hints_.max_q;
    s.max_keys = s.window ? std::min(s.window, hints_.max_keys) : hints_.max_keys;
  }
  // Logit rows: those sampled on the device first, so one sample call covers them.
  std::vector<size_t> end_token(chunks_.size());  // of each chunk, in the step's tokens
  for (size_t i = 0, end = 0; i < chunks_.size(); ++i)
    end_token[i] = end += chunks_[i].end - chunks_[i].begin;
  first_row_.assign(chunks_.size(), 0);
  for (size_t i = 0; i < chunks_.size(); ++i)
    if (chunks_[i].want_logits && chunks_[i].sample) {
      first_row_[i] = rows_.size();
      rows_.push_back({&chunks_[i], end_token[i] - 1});
    }
  n_sampled_ = rows_.size();
  for (size_t i = 0; i < chunks_.size(); ++i) {
    const SequenceChunk& ch = chunks_[i];
    if (!ch.want_logits || ch.sample) continue;
    const size_t n = std::clamp<size_t>(ch.logit_rows, 1, ch.end - ch.begin);
    first_row_[i] = rows_.size();
    for (size_t t = end_token[i] - n; t < end_token[i]; ++t) rows_.push_back({&ch, t});
  }
  const size_t words = (size_t(c_.vocab_size) + 31) / 32;
  bool any_mask = false;
  for (size_t r = 0; r < n_sampled_; ++r) any_mask |= !rows_[r].chunk->sample->mask.empty();
  for (size_t r = 0; r < n_sampled_; ++r) {
    const SampleRequest& s = *rows_[r].chunk->sample;
    sample_rows_.push_back(sample_row_for(*s.sampler, s.sampler->peek_uniform()));
    if (any_mask) {
      if (s.mask.empty()) masks_.insert(masks_.end(), words, ~0u);
      else masks_.insert(masks_.end(), s.mask.begin(), s.mask.end());
    }
  }
  hints_.struct_size = sizeof hints_;
  hints_.n_tokens = uint32_t(T_);
  hints_.n_seqs = uint32_t(chunks_.size());
  hints_.n_logit_rows = uint32_t(rows_.size());
  hints_.n_sample_rows = uint32_t(n_sampled_);
  shape_need_.tokens = T_;
  shape_need_.seqs = chunks_.size();
  shape_need_.logit_rows = rows_.size();
  for (int g = 0; g < 2; ++g) shape_need_.page_entries[g] = pages_[g].size();
}

void ForwardStep::write_inputs() const {
  for (uint32_t d = 0; d < m_.num_devices(); ++d) {
    const ArenaViews& v = runner_.views(d);
    const DeviceOps o = ops(d);
    if (v.tokens) o.write(v.tokens, tokens_.data(), T_ * 4);
    if (v.positions) {
      o.write(v.positions, positions_.data(), T_ * 4);
      for (int g = 0; g < 2; ++g) {
        o.write(v.slots[g], slots_[g].data(), T_ * 4);
        o.write(v.seqs[g], seqs_[g].data(), seqs_[g].size() * sizeof(gptoss_attn_seq));
        o.write(v.pages[g], pages_[g].data(), pages_[g].size() * 4);
      }
    }
    if (d == p_.output_device() && n_sampled_ > 0) {
      o.write(v.sample_rows, sample_rows_.data(), n_sampled_ * sizeof(gptoss_sample_row));
      o.write(v.mask, masks_.data(), masks_.size() * 4);
    }
  }
}

void ForwardStep::layers() const {
  const size_t H = c_.hidden_size, nh = c_.num_heads, nkv = c_.num_kv_heads, hd = c_.head_dim;
  const size_t q_dim = nh * hd, kv_dim = nkv * hd, K = c_.experts_per_token, T = T_;
  const float eps = c_.rms_norm_eps;
  const gptoss_rope_params rope = {c_.rope_theta,     c_.rope_scaling_factor, c_.rope_original_context,
                                   c_.rope_beta_fast, c_.rope_beta_slow,      c_.rope_truncate ? 1 : 0};
  auto W = [&](uint32_t l, gptoss_tensor_role r) { return m_.layer_weight(l, r); };

  ops(0).embedding(m_.embedding(), runner_.views(0).tokens, T, runner_.views(0).x);
  uint32_t cur = 0;       // the device holding x
  bool pending = false;   // y (the last block's output) not yet added to x
  for (uint32_t l = 0; l < m_.num_layers(); ++l) {
    const uint32_t d = p_.layer_device[l];
    const ArenaViews& v = runner_.views(d);
    const DeviceOps o = ops(d);
    if (pending && d == cur) {
      o.add_rmsnorm(v.x, v.y, W(l, gptoss_tensor_attn_norm), T, H, eps, v.h);
    } else {
      if (pending) ops(cur).add(runner_.views(cur).x, runner_.views(cur).y, T * H);
      if (d != cur) runner_.copy(cur, runner_.views(cur).x, d, v.x, T * H * 4);
      cur = d;
      o.rmsnorm(v.x, W(l, gptoss_tensor_attn_norm), T, H, eps, v.h);
    }
    const int g = int(pool_.group_of(l));
    const KvPool::LayerKv& kv = pool_.layer(l);
    o.qkv(v.h, W(l, gptoss_tensor_attn_q), W(l, gptoss_tensor_attn_q_bias), W(l, gptoss_tensor_attn_k),
          W(l, gptoss_tensor_attn_k_bias), W(l, gptoss_tensor_attn_v), W(l, gptoss_tensor_attn_v_bias),
          T, H, q_dim, kv_dim, v.q, v.k, v.v);
    o.rope_kv_write(v.q, v.k, v.v, v.positions, T, nh, nkv, hd, rope, kv.kv, kv.index, v.slots[g]);
    o.attention(v.q, kv.kv, kv.index, W(l, gptoss_tensor_attn_sinks), v.seqs[g], v.pages[g],
                shape_[g], v.a);
    o.linear(v.a, W(l, gptoss_tensor_attn_out), W(l, gptoss_tensor_attn_out_bias), T, q_dim, H, v.y);
    o.add_rmsnorm(v.x, v.y, W(l, gptoss_tensor_mlp_norm), T, H, eps, v.h);
    o.router(v.h, W(l, gptoss_tensor_router), W(l, gptoss_tensor_router_bias), T, H, c_.num_experts,
             K, v.ids, v.gates);
    if (p_.experts_split())
      moe_split(l);
    else
      o.moe(v.h, v.ids, v.gates, W(l, gptoss_tensor_mlp1), W(l, gptoss_tensor_mlp1_bias),
            W(l, gptoss_tensor_mlp2), W(l, gptoss_tensor_mlp2_bias), T, H, c_.intermediate_size, K,
            c_.swiglu_limit, v.y);
    pending = true;
  }
  if (pending) ops(cur).add(runner_.views(cur).x, runner_.views(cur).y, T * H);
}

// Expert parallelism: device 0 (which ran attention and the router) sends h and the routing to
// every other device, each runs the MoE over its own experts, and device 0 adds the parts.
void ForwardStep::moe_split(uint32_t l) const {
  const size_t T = T_, H = c_.hidden_size, K = c_.experts_per_token;
  const ArenaViews& home = runner_.views(0);
  for (uint32_t d = 1; d < p_.n_devices; ++d) {
    const ArenaViews& v = runner_.views(d);
    runner_.copy(0, home.h, d, v.h, T * H * 4);
    runner_.copy(0, home.ids, d, v.ids, T * K * 4);
    runner_.copy(0, home.gates, d, v.gates, T * K * 4);
  }
  for (uint32_t d = 0; d < p_.n_devices; ++d) {
    const ArenaViews& v = runner_.views(d);
    auto E = [&](gptoss_tensor_role r) { return m_.expert_weight(l, r, d); };
    ops(d).moe(v.h, v.ids, v.gates, E(gptoss_tensor_mlp1), E(gptoss_tensor_mlp1_bias),
               E(gptoss_tensor_mlp2), E(gptoss_tensor_mlp2_bias), T, H, c_.intermediate_size, K,
               c_.swiglu_limit, v.y);
  }
  for (uint32_t d = 1; d < p_.n_devices; ++d) {
    runner_.copy(d, runner_.views(d).y, 0, home.y_parts[d - 1], T * H * 4);
    ops(0).add(home.y, home.y_parts[d - 1], T * H);
  }
}

// Logit rows: copy the wanted rows of x, norm, unembed; keep each context's row on the device
// and sample the rows that asked.
void ForwardStep::output() const {
  const size_t R = rows_.size(), H = c_.hidden_size, V = c_.vocab_size;
  if (R == 0) return;
  const uint32_t out = p_.output_device();
  const ArenaViews& v = runner_.views(out);
  const DeviceOps o = ops(out);
  // Decode usually wants every row, in order: then x itself is the rows to norm.
  bool every_row = R == T_;
  for (size_t r = 0; r < R && every_row; ++r) every_row = rows_[r].token == r;
  if (!every_row)
    for (size_t r = 0; r < R; ++r) o.copy(v.xr, r * H * 4, v.x, rows_[r].token * H * 4, H * 4);
  o.rmsnorm(every_row ? v.x : v.xr, m_.final_norm(), R, H, c_.rms_norm_eps, v.hr);
  o.linear(v.hr, m_.unembedding(), nullptr, R, H, V, v.logits);
  // Each context keeps the logits of its last position (a chunk's last row).
  for (size_t r = 0; r < R; ++r)
    if (r + 1 == R || rows_[r + 1].chunk != rows_[r].chunk)
      o.copy(rows_[r].chunk->context->logits_buf_, 0, v.logits, r * V * 4, V * 4);
  if (n_sampled_ == 0) return;
  o.sample(v.logits, v.sample_rows, masks_.empty() ? nullptr : v.mask,
           sample_shape_of(sample_rows_, uint32_t(V)), v.results);
}

void ForwardStep::run() {
  for (const auto& ch : chunks_) ch.context->prepare_pages(ch.begin, ch.end);
  plan();
  runner_.reserve(shape_need_);
  const gptoss_backend_api& api = m_.api();
  const bool brackets = GPTOSS_HAS_SLOT(&api, step_begin);
  if (brackets)
    for (uint32_t d = 0; d < m_.num_devices(); ++d)
      m_.device(d).check(api.step_begin(runner_.stream(d), &hints_), "step_begin");
  std::vector<gptoss_sample_result> results(n_sampled_);
  try {
    write_inputs();
    layers();
    output();
    if (brackets)
      for (uint32_t d = 0; d < m_.num_devices(); ++d)
        m_.device(d).check(api.step_end(runner_.stream(d)), "step_end");
    if (n_sampled_ > 0) {
      const uint32_t out = p_.output_device();
      m_.device(out).check(api.buffer_read(runner_.stream(out), runner_.views(out).results, 0,
                                           results.data(), n_sampled_ * sizeof(gptoss_sample_result)),
                           "sample results read");
    }
    const uint32_t out = p_.output_device();
    const size_t V = c_.vocab_size;
    for (size_t i = 0; i < chunks_.size(); ++i) {
      const SequenceChunk& ch = chunks_[i];
      if (!ch.want_logits || ch.sample || ch.host_rows == nullptr) continue;
      const size_t n = std::clamp<size_t>(ch.logit_rows, 1, ch.end - ch.begin);
      m_.device(out).check(api.buffer_read(runner_.stream(out), runner_.views(out).logits,
                                           first_row_[i] * V * 4, ch.host_rows, n * V * 4),
                           "logits read");
    }
    runner_.synchronize();
  } catch (...) {
    runner_.drain();  // nothing of this step may still run when the arena is next written
    throw;
  }

  for (size_t r = 0; r < n_sampled_; ++r) *rows_[r].chunk->sample->result = results[r];
  for (const auto& ch : chunks_) {
    Context& ctx = *ch.context;
    ctx.n_processed_ = ch.end;
    ctx.logits_state_ = ch.want_logits ? Context::LogitsState::on_device : Context::LogitsState::none;
  }
}

void run_forward_step(KvPool& pool, std::span<const SequenceChunk> chunks) {
  ForwardStep(pool, chunks).run();
}

}  // namespace gptoss
