// gptoss-bench --speculative: what speculative decoding costs and gains, through the public C
// API (docs/speculative.md).
//  1. Verify cost: one step that processes k tokens (the pending one and k - 1 drafted) against
//     one plain decode step, k = 1, 2, 4, 8, 16, alternated in each repetition. Beside the
//     time, the distinct experts a step of k tokens reads per layer when each token's top-4 is
//     uniform over E experts (the synthetic models' random routers): E (1 - (1 - 4/E)^k).
//  2. The ceiling: an oracle drafter replaying an earlier greedy run of the same prompt,
//     drafting K tokens per step, against plain decoding, alternated step by step. Kernels
//     whose result for a token depends on the step's size (a backend that does not declare
//     batch invariance) make plain greedy decoding a poor oracle on random weights, whose
//     near-flat logits flip on a rounding: the earlier run is then the greedy run of the same
//     step schedule (each step of K + 1 tokens iterated to its fixed point), which the timed
//     run replays whole. Both are reported.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "bench.hpp"

namespace gptoss::bench {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int run_speculative_bench(const Options& o) {
  const gptoss_model_options mo = model_options(o);
  const gptoss::model loaded = gptoss::model::load(o.model, &mo, "loading the model");
  const gptoss_model_info info = loaded.info();

  const size_t K = o.draft_max;
  const gptoss_context_options co = decode_context_options(
      o, o.n_prompt + o.n_gen + K + 32, std::max<size_t>({o.n_prompt, K + 1, 17}));
  const gptoss::context context = gptoss::context::create(loaded.get(), &co, "creating a context");
  const gptoss_context_t ctx = context.get();
  const gptoss::sampler greedy = greedy_sampler();
  const gptoss_sampler_t sampler = greedy.get();
  const std::vector<uint32_t> prompt = bench_prompt(o.n_prompt, info.vocab_size);
  gptoss::check(gptoss_context_append_tokens(ctx, prompt.size(), prompt.data()), "append");
  gptoss::check(gptoss_context_process(ctx), "prefill");

  // Back to the prompt with its last token pending (processed again by the next step).
  auto restart = [&] {
    const uint32_t any = prompt.back();
    gptoss::check(gptoss_context_append_tokens(ctx, 1, &any), "append");
    gptoss::check(gptoss_context_truncate(ctx, prompt.size()), "truncate");
  };

  // 1. Verify cost. Each step starts from the prompt.
  const std::vector<size_t> ks = {1, 2, 4, 8, 16};
  std::vector<std::vector<double>> step_s(ks.size()), forward_s(ks.size());
  std::vector<uint32_t> draft(16), out(std::max<size_t>(17, K + 1));
  for (size_t i = 0; i < draft.size(); ++i) draft[i] = uint32_t(2000 + i * 31);  // rarely kept
  for (size_t r = 0; r <= o.reps; ++r) {  // repetition 0 warms up
    for (size_t j = 0; j < ks.size(); ++j) {
      restart();
      size_t n = 0;
      auto t0 = Clock::now();
      gptoss::check(gptoss_context_sample_draft(ctx, sampler, draft.data(), ks[j] - 1, nullptr,
                                                out.data(), out.size(), &n),
                    "verify");
      if (r > 0) step_s[j].push_back(seconds_since(t0));
      if (!o.logit_rows) continue;
      // The same k tokens as a plain forward pass: the last position's logits, one sample.
      restart();
      t0 = Clock::now();
      if (ks[j] > 1)
        gptoss::check(gptoss_context_append_tokens(ctx, ks[j] - 1, draft.data()), "append");
      uint32_t t = 0;
      gptoss::check(gptoss_context_sample(ctx, sampler, &t), "forward");
      if (r > 0) forward_s[j].push_back(seconds_since(t0));
    }
  }
  const double E = double(info.num_experts), A = double(info.num_active_experts);
  if (!o.json) {
    std::printf("## Verify cost: one step of k tokens against one plain decode step\n\n");
    std::printf("model %s, %zu-token prompt, %s precision, median of %zu\n\n", o.model.c_str(),
                o.n_prompt, o.exact ? "exact" : "fast", o.reps);
    std::printf(
        "| k | step ms | x plain step | ms per token | distinct experts per layer (uniform "
        "routing) |%s\n",
        o.logit_rows ? " forward of k, last row only, ms | logit rows: step - forward, ms |" : "");
    std::printf("| ---: | ---: | ---: | ---: | ---: |%s\n", o.logit_rows ? " ---: | ---: |" : "");
  }
  const double plain_ms = 1e3 * median(step_s[0]);
  for (size_t j = 0; j < ks.size(); ++j) {
    const double ms = 1e3 * median(step_s[j]);
    const double fwd = o.logit_rows ? 1e3 * median(forward_s[j]) : 0.0;
    const double experts = E * (1.0 - std::pow(1.0 - A / E, double(ks[j])));
    if (o.json) {
      std::printf(
          "{\"bench\":\"verify\",\"k\":%zu,\"step_ms\":%.2f,\"ratio\":%.3f,\"experts\":%.1f", ks[j],
          ms, ms / plain_ms, experts);
      if (o.logit_rows) std::printf(",\"forward_ms\":%.2f", fwd);
      std::printf("}\n");
    } else {
      std::printf("| %zu | %.1f | %.2f | %.1f | %.1f of %.0f |", ks[j], ms, ms / plain_ms,
                  ms / double(ks[j]), experts, E);
      if (o.logit_rows) std::printf(" %.1f | %.1f |", fwd, ms - fwd);
      std::printf("\n");
    }
  }

  // 2. The oracle drafter's ceiling: an earlier greedy run, replayed K tokens per step.
  if (o.n_gen == 0) return 0;
  std::vector<uint32_t> plain_greedy;
  restart();
  for (size_t i = 0; i < o.n_gen; ++i) {
    uint32_t t = 0;
    gptoss::check(gptoss_context_sample(ctx, sampler, &t), "sample");
    gptoss::check(gptoss_context_append_tokens(ctx, 1, &t), "append");
    plain_greedy.push_back(t);
  }
  // The greedy run of the step schedule: each step's draft is corrected until all of it is
  // kept (a step's logits depend only on its size and the tokens before each position, so
  // every round fixes at least one more position).
  std::vector<uint32_t> oracle;
  restart();
  while (oracle.size() < o.n_gen) {
    const size_t k = std::min(K, o.n_gen - oracle.size() - 1);
    std::vector<uint32_t> d(plain_greedy.begin() + std::ptrdiff_t(oracle.size()),
                            plain_greedy.begin() + std::ptrdiff_t(oracle.size() + k));
    size_t n = 0;
    // Each round fixes a position unless the kernels are not even deterministic run to run
    // (they are, for a given shape): the cap keeps the bench finite either way.
    for (size_t round = 0;; ++round) {
      size_t before = 0;
      gptoss::check(gptoss_context_get_num_tokens(ctx, &before), "tokens");
      gptoss::check(gptoss_context_sample_draft(ctx, sampler, d.data(), d.size(), nullptr,
                                                out.data(), out.size(), &n),
                    "verify");
      if (n == d.size() + 1 || round == 2 * (k + 1)) break;
      std::copy(out.begin(), out.begin() + std::ptrdiff_t(n), d.begin());  // kept + corrected
      // Back to the step's start, its first token pending again.
      const uint32_t any = d[0];
      gptoss::check(gptoss_context_append_tokens(ctx, 1, &any), "append");
      gptoss::check(gptoss_context_truncate(ctx, before), "truncate");
    }
    oracle.insert(oracle.end(), out.begin(), out.begin() + std::ptrdiff_t(n));
    gptoss::check(gptoss_context_append_tokens(ctx, 1, &out[n - 1]), "append");
  }
  oracle.resize(o.n_gen);
  size_t same = 0;
  while (same < o.n_gen && oracle[same] == plain_greedy[same]) ++same;
  // Plain decoding on a second context, alternated step by step with the oracle's: each
  // verification step, then as many plain decode steps as it gave tokens, so that the
  // machine's drift reaches both alike.
  const gptoss::context plain_context =
      gptoss::context::create(loaded.get(), &co, "creating a context");
  const gptoss_context_t pctx = plain_context.get();
  gptoss::check(gptoss_context_append_tokens(pctx, prompt.size(), prompt.data()), "append");
  gptoss::check(gptoss_context_process(pctx), "prefill");
  std::vector<double> plain_tps, oracle_tps;
  size_t drafted = 0, kept = 0, steps = 0, matched = 0;
  for (size_t r = 0; r < o.reps; ++r) {
    restart();
    const uint32_t any = prompt.back();
    gptoss::check(gptoss_context_append_tokens(pctx, 1, &any), "append");
    gptoss::check(gptoss_context_truncate(pctx, prompt.size()), "truncate");
    std::vector<uint32_t> got;
    size_t plain_n = 0;
    double plain_s = 0, oracle_s = 0;
    while (got.size() < o.n_gen) {
      const size_t k = std::min(K, o.n_gen - got.size() - 1);
      std::vector<uint32_t> d;
      for (size_t i = 0; i < k && got.size() + i < oracle.size(); ++i)
        d.push_back(oracle[got.size() + i]);
      size_t n = 0;
      auto t0 = Clock::now();
      gptoss::check(gptoss_context_sample_draft(ctx, sampler, d.data(), d.size(), nullptr,
                                                out.data(), out.size(), &n),
                    "verify");
      gptoss::check(gptoss_context_append_tokens(ctx, 1, &out[n - 1]), "append");
      oracle_s += seconds_since(t0);
      drafted += d.size();
      kept += n - 1;
      ++steps;
      got.insert(got.end(), out.begin(), out.begin() + std::ptrdiff_t(n));
      t0 = Clock::now();
      for (; plain_n < std::min(got.size(), o.n_gen); ++plain_n) {
        uint32_t t = 0;
        gptoss::check(gptoss_context_sample(pctx, sampler, &t), "sample");
        gptoss::check(gptoss_context_append_tokens(pctx, 1, &t), "append");
      }
      plain_s += seconds_since(t0);
    }
    plain_tps.push_back(double(o.n_gen) / plain_s);
    oracle_tps.push_back(double(o.n_gen) / oracle_s);
    got.resize(o.n_gen);
    matched += got == oracle ? 1 : 0;
  }
  const double p = median(plain_tps), s = median(oracle_tps);
  const double acceptance = drafted ? double(kept) / double(drafted) : 0.0;
  if (o.json) {
    std::printf(
        "{\"bench\":\"oracle\",\"draft\":%zu,\"plain_tps\":%.3f,\"oracle_tps\":%.3f,"
        "\"speedup\":%.3f,\"acceptance\":%.3f,\"identical_runs\":%zu,"
        "\"same_as_plain_greedy\":%zu}\n",
        K, p, s, s / p, acceptance, matched, same);
  } else {
    std::printf(
        "\n## Oracle drafter (replays an earlier greedy run), %zu tokens drafted per step\n\n", K);
    std::printf("| decode | tok/s (median of %zu, alternated) | x plain |\n| --- | ---: | ---: |\n",
                o.reps);
    std::printf("| plain | %.2f | 1.00 |\n| oracle, draft %zu | %.2f | %.2f |\n", p, K, s, s / p);
    std::printf(
        "\nacceptance %.1f %% (%zu of %zu drafted, %zu steps for %zu tokens); runs identical "
        "to the oracle: %zu of %zu; the oracle (the greedy run of this step schedule) "
        "agrees with plain greedy decoding on its first %zu of %zu tokens\n",
        100.0 * acceptance, kept, drafted, steps, o.n_gen * o.reps, matched, o.reps, same, o.n_gen);
  }
  return 0;
}

}  // namespace gptoss::bench
