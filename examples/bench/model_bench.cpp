// The model benchmark: load time, prefill and decode tok/s over repetitions, time to first
// token, achieved bandwidth against a read test of the same run, peak RSS. Public C API only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"

namespace gptoss::bench {
namespace {

// Bytes a decode step reads: the weights as the checkpoint stores them (the library counts
// them: every dense tensor, the active experts' share, one embedding row; BF16, F16 or Q8_0
// dense matrices alike) and the KV cache (f32 or bf16) at the mean context position of the
// generation.
double decode_bytes_per_token(const gptoss_model_info& m, double mean_pos, double kv_elem_bytes) {
  double bytes = double(m.decode_weight_bytes);
  // KV: half the layers full attention, half a sliding window.
  const double kv_per_pos = 2 * double(m.num_kv_heads * m.head_dim) * kv_elem_bytes;
  const double full = double(m.num_layers) / 2, sliding = double(m.num_layers) - full;
  bytes += kv_per_pos * (full * mean_pos + sliding * std::min(mean_pos, double(m.sliding_window)));
  return bytes;
}

}  // namespace

int run_model_bench(const Options& o) {
  // Read bandwidth drifts on a shared machine (by 2x within minutes): it is measured around
  // every repetition, and each repetition's decode is compared with the higher of the two
  // measurements beside it. The test buffer is kept out of the peak RSS (reset_peak_rss).
  size_t peak_rss = 0;
  // A GPU's decode reads its own memory: the host read test says nothing of it, so without
  // --peak-gbps there is no ceiling to compare with (known once the model says its backend).
  bool no_ceiling = false;
  auto bandwidth = [&] {
    peak_rss = std::max(peak_rss, peak_rss_bytes());
    if (o.peak_gbps > 0) return o.peak_gbps;  // a device's: no host read test
    if (no_ceiling) return 0.0;
    const double bw = measure_read_bandwidth(o.threads);
    reset_peak_rss();
    return bw;
  };
  const double read_bw_first = bandwidth();

  const gptoss_model_options mo = model_options(o);
  const auto t_load = Clock::now();
  const gptoss::model loaded = gptoss::model::load(o.model, &mo, "loading the model");
  const double load_s = seconds_since(t_load);
  const gptoss_model_t model = loaded.get();
  const gptoss_model_info info = loaded.info();
  const std::string backend = info.backend;
  if (o.peak_gbps <= 0 && backend != "cpu" && backend.rfind("strict", 0) != 0) {
    no_ceiling = true;
    std::fprintf(stderr,
                 "gptoss-bench: the %s backend reads device memory; pass --peak-gbps G "
                 "(gptoss-%s-info prints it) for decode's share of its bandwidth\n",
                 backend.c_str(), backend.c_str());
  }

  const gptoss_context_options co =
      decode_context_options(o, o.n_prompt + o.n_gen + 8, std::max<size_t>(o.n_prompt, 1));
  const gptoss::context context = gptoss::context::create(model, &co, "creating a context");
  const gptoss_context_t ctx = context.get();
  const gptoss::sampler greedy = greedy_sampler();
  const gptoss_sampler_t sampler = greedy.get();
  const std::vector<uint32_t> prompt = bench_prompt(o.n_prompt, info.vocab_size);
  const size_t id_range = text_id_range(info.vocab_size);

  // One repetition.
  auto run = [&](size_t n_prompt, size_t n_gen, double* prefill_s, double* ttft_s,
                 double* decode_s) {
    gptoss::check(gptoss_context_reset(ctx), "reset");
    gptoss::check(gptoss_context_append_tokens(ctx, n_prompt, prompt.data()), "append");
    const auto t0 = Clock::now();
    gptoss::check(gptoss_context_process(ctx), "prefill");
    *prefill_s = seconds_since(t0);
    uint32_t tok = 0;
    gptoss::check(gptoss_context_sample(ctx, sampler, &tok), "sample");
    *ttft_s = seconds_since(t0);
    const auto t1 = Clock::now();
    for (size_t i = 0; i < n_gen; ++i) {
      gptoss::check(gptoss_context_append_tokens(ctx, 1, &tok), "append");
      gptoss::check(gptoss_context_sample(ctx, sampler, &tok), "decode");
    }
    *decode_s = seconds_since(t1);
  };

  // Warm-up (pages the weights in, starts the threads); not counted.
  double a, b, c;
  run(std::min<size_t>(o.n_prompt, 32), std::min<size_t>(o.n_gen, 2), &a, &b, &c);
  const double bytes_tok = decode_bytes_per_token(info, double(o.n_prompt) + double(o.n_gen) / 2,
                                                o.kv_bf16 ? 2.0 : 4.0);
  std::vector<double> pp, tg, ttft, bws, pcts;
  double bw_prev = bandwidth();
  for (size_t r = 0; r < o.reps; ++r) {
    run(o.n_prompt, o.n_gen, &a, &b, &c);
    const double bw_next = bandwidth();
    pp.push_back(double(o.n_prompt) / a);
    ttft.push_back(b);
    if (o.n_gen > 0) {
      tg.push_back(double(o.n_gen) / c);
      const double ceiling = std::max(bw_prev, bw_next);
      bws.push_back(ceiling);
      if (ceiling > 0) pcts.push_back(100.0 * tg.back() * bytes_tok / 1e9 / ceiling);
    }
    bw_prev = bw_next;
  }
  // Peak RSS of the model with one context (before -b adds its contexts' KV pool).
  const size_t rss = std::max(peak_rss, peak_rss_bytes());
  // -b N: N sequences with the prompt decode together, one gptoss_contexts_process per step
  // (what a server does for N users at once; contexts batch when they share a KV pool);
  // aggregate tokens per second.
  double batch_tok_s = 0, batch_ms_step = 0;
  if (o.batch > 1 && o.n_gen > 0) {
    gptoss_kvcache_options ko;
    gptoss_kvcache_options_init(&ko);
    // Each sequence holds whole pages.
    const size_t pages = (co.context_length + GPTOSS_KV_PAGE_SIZE - 1) / GPTOSS_KV_PAGE_SIZE;
    ko.capacity_tokens = o.batch * pages * GPTOSS_KV_PAGE_SIZE;
    ko.max_sequences = o.batch;
    ko.dtype = co.kv_dtype;
    const gptoss::kvcache pool = gptoss::kvcache::create(model, ko, "creating a KV pool");
    gptoss_context_options bo = co;
    bo.kvcache = pool.get();
    std::vector<gptoss::context> contexts(o.batch);
    std::vector<gptoss_context_t> cs(o.batch, nullptr);
    for (size_t i = 0; i < o.batch; ++i) {
      contexts[i] = gptoss::context::create(model, &bo, "creating a context");
      cs[i] = contexts[i].get();
    }
    // Each sequence gets its own prompt (the same one shifted through the token range): with
    // one shared prompt, greedy decoding would give every sequence the same tokens, hence the
    // same experts, and measure a step far cheaper than N users with different requests.
    std::vector<uint32_t> next(o.batch, 0), own(o.n_prompt);
    for (size_t i = 0; i < o.batch; ++i) {
      for (size_t j = 0; j < own.size(); ++j) own[j] = uint32_t(1000 + (prompt[j] - 1000 + i * 104729) % id_range);
      gptoss::check(gptoss_context_reset(cs[i]), "reset");
      gptoss::check(gptoss_context_append_tokens(cs[i], o.n_prompt, own.data()), "append");
      gptoss::check(gptoss_context_sample(cs[i], sampler, &next[i]), "prefill");
    }
    const auto t0 = Clock::now();
    for (size_t step = 0; step < o.n_gen; ++step) {
      for (size_t i = 0; i < o.batch; ++i)
        gptoss::check(gptoss_context_append_tokens(cs[i], 1, &next[i]), "append");
      gptoss::check(gptoss_contexts_process(cs.data(), cs.size()), "batched decode");
      for (size_t i = 0; i < o.batch; ++i)
        gptoss::check(gptoss_context_sample(cs[i], sampler, &next[i]), "sample");
    }
    const double s = seconds_since(t0);
    batch_tok_s = double(o.batch * o.n_gen) / s;
    batch_ms_step = 1e3 * s / double(o.n_gen);
  }
  const Stat spp = stat_of(pp), stg = stat_of(tg), sttft = stat_of(ttft);
  const Stat sbw = stat_of(bws), spct = stat_of(pcts);
  const double read_bw = o.n_gen > 0 ? sbw.mean : std::max(read_bw_first, bw_prev);
  const double gbs = stg.mean * bytes_tok / 1e9;
  const unsigned threads = threads_or_all(o.threads);
  std::string name = o.model;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  if (const auto slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);

  const char* prec = o.exact ? "exact" : "fast";
  const char* kv = o.kv_bf16 ? "bf16" : "f32";
  // Without a ceiling the share is unknown: JSON null, "n/a" in the table.
  char pct_json[64] = "null", pct_text[64] = "n/a";
  if (!pcts.empty()) {
    std::snprintf(pct_json, sizeof pct_json, "{\"mean\": %.2f, \"std\": %.2f}", spct.mean,
                  spct.std);
    std::snprintf(pct_text, sizeof pct_text, "%.1f ± %.1f %%", spct.mean, spct.std);
  }
  if (o.json) {
    std::printf(
        "{\"model\": \"%s\", \"backend\": \"%s\", \"precision\": \"%s\", \"kv\": \"%s\", \"mmap\": "
        "%d, "
        "\"threads\": %u, \"n_prompt\": %zu, \"n_gen\": %zu, \"repetitions\": %zu, "
        "\"prefill_tok_s\": {\"mean\": %.4f, \"std\": %.4f}, "
        "\"decode_tok_s\": {\"mean\": %.4f, \"std\": %.4f}, \"ttft_s\": {\"mean\": %.6f, \"std\": "
        "%.6f}, "
        "\"load_s\": %.4f, \"peak_rss_bytes\": %zu, \"decode_bytes_per_token\": %.0f, "
        "\"achieved_gbs\": %.3f, \"bandwidth_gbs\": %.3f, \"bandwidth_pct\": %s, "
        "\"batch\": %zu, \"batched_decode_tok_s\": %.4f, \"batched_ms_per_step\": %.4f}\n",
        name.c_str(), info.backend, prec, kv, o.use_mmap ? 1 : 0, threads, o.n_prompt, o.n_gen,
        o.reps, spp.mean, spp.std, stg.mean, stg.std, sttft.mean, sttft.std, load_s, rss, bytes_tok,
        gbs, read_bw, pct_json, o.batch, batch_tok_s, batch_ms_step);
  } else {
    const char* against = o.peak_gbps > 0 ? "peak BW" : "read BW";
    std::printf("| model | backend | precision | threads | test | t/s | ms/tok | GB/s | %% of %s |\n", against);
    std::printf("| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: |\n");
    std::printf("| %s | %s | %s | %u | pp%zu | %.2f ± %.2f | %.2f | | |\n", name.c_str(), info.backend,
                prec, threads, o.n_prompt, spp.mean, spp.std, 1e3 / spp.mean);
    if (o.n_gen > 0)
      std::printf("| %s | %s | %s | %u | tg%zu | %.2f ± %.2f | %.2f | %.2f | %s |\n", name.c_str(),
                  info.backend, prec, threads, o.n_gen, stg.mean, stg.std, 1e3 / stg.mean, gbs,
                  pct_text);
    if (batch_tok_s > 0)
      std::printf("| %s | %s | %s | %u | tg%zu x %zu sequences | %.2f | %.2f per step | | |\n",
                  name.c_str(), info.backend, prec, threads, o.n_gen, o.batch, batch_tok_s,
                  batch_ms_step);
    std::printf("\n| load | time to first token | peak RSS | %s | bytes/decode token |\n",
                o.peak_gbps > 0 ? "device peak bandwidth" : "read bandwidth");
    std::printf("| ---: | ---: | ---: | ---: | ---: |\n");
    std::printf("| %.2f s | %.1f ± %.1f ms | %.1f MiB | %.2f ± %.2f GB/s | %.1f MB |\n", load_s,
                1e3 * sttft.mean, 1e3 * sttft.std, double(rss) / (1 << 20), read_bw, sbw.std,
                bytes_tok / 1e6);
    std::printf(
        "\n(%zu repetitions after one warm-up; bytes/token: the weights a decode token reads as "
        "stored, plus %s KV;\n %s)\n",
        o.reps, kv,
        o.peak_gbps > 0 ? "% of peak BW: decode GB/s against --peak-gbps"
                        : "% of read BW: each repetition's decode against the higher of the "
                          "read-bandwidth measurements taken just before and just after it;\n "
                          "where the bandwidth swings within a run, --read-probe holds each "
                          "token against pure loads of its bytes right after it");
  }
  return 0;
}

}  // namespace gptoss::bench
