// gptoss-bench --read-probe: where a decode token stands against pure loads of its bytes, timed
// in turn after every token so that all see the same minutes of a machine whose bandwidth
// drifts 2x within minutes: over a 1 GiB anonymous buffer read round and round (the read test's
// footprint), over the model's own files read on and on, and over the very tensors a token
// reads in the checkpoint's files, its experts drawn at random (TokenReplay: for safetensors
// the memory the kernels read, for a GGUF, whose experts are converted at load, the same bytes
// in the file). Public C API for the decode; the files are mapped again by ReadPasses
// (bench.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"

namespace gptoss::bench {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int run_read_probe(const Options& o) {
  const gptoss_model_options mo = model_options(o);
  const gptoss::model model = gptoss::model::load(o.model, &mo, "loading the model");
  gptoss_sampler_options so;
  gptoss_sampler_options_init(&so);
  so.temperature = 0.0f;
  const gptoss_model_info info = model.info();
  gptoss_context_t raw_context = nullptr;
  gptoss::check(gptoss_context_create(model.get(), o.n_gen + 16, &raw_context),
                "creating a context");
  const gptoss::context context(raw_context);
  const gptoss_context_t ctx = context.get();
  const gptoss::sampler greedy = gptoss::sampler::create(&so, "creating a sampler");
  const gptoss_sampler_t sampler = greedy.get();
  // The weights a decode token reads (its KV, a few tokens long, is negligible here).
  const size_t bytes = size_t(info.decode_weight_bytes);
  const size_t threads = threads_or_all(o.threads);

  ReadPasses ring(kReadTestBytes, unsigned(threads));
  ReadPasses onward(o.model, unsigned(threads));
  for (const ReadPasses* r : {&ring, &onward})
    if (!r->ok()) {
      std::fprintf(stderr, "gptoss-bench: --read-probe: %s\n", r->error().c_str());
      return 1;
    }
  uint32_t tok = 1000;
  gptoss::check(gptoss_context_append_tokens(ctx, 1, &tok), "append");
  gptoss::check(gptoss_context_sample(ctx, sampler, &tok), "prefill");
  // After a first token, which brings into the page cache what the load left out (a GGUF's
  // unembedding, read in place).
  TokenReplay replay(onward, unsigned(info.num_active_experts), unsigned(threads));
  if (replay.ok()) replay.pass();  // once untimed, as the others were
  // Before each pass, a pause in which the library's pool threads stop spinning and leave the
  // cores to the pass's threads.
  auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
  std::vector<double> t[4];  // decode, ring, files, replay
  for (size_t i = 0; i < o.n_gen; ++i) {
    const auto t0 = Clock::now();
    gptoss::check(gptoss_context_append_tokens(ctx, 1, &tok), "append");
    gptoss::check(gptoss_context_sample(ctx, sampler, &tok), "decode");
    t[0].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    pause();
    t[1].push_back(ring.pass(bytes));
    pause();
    t[2].push_back(onward.pass(bytes));
    if (replay.ok()) {
      pause();
      t[3].push_back(replay.pass());
    }
  }
  double gbs[4] = {0, 0, 0, 0};
  for (int k = 0; k < 3; ++k) gbs[k] = double(bytes) / median(t[k]) / 1e9;
  if (replay.ok()) gbs[3] = double(replay.bytes_per_pass()) / median(t[3]) / 1e9;
  std::string name = o.model;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  if (const auto slash = name.find_last_of('/'); slash != std::string::npos)
    name = name.substr(slash + 1);
  if (o.json) {
    char r[32] = "null";
    if (replay.ok()) std::snprintf(r, sizeof r, "%.3f", gbs[3]);
    const std::string replay_gbs = r;
    std::printf("{\"model\": \"%s\", \"threads\": %zu, \"n_gen\": %zu, \"bytes_per_token\": %zu, "
                "\"decode_gbs\": %.3f, \"buffer_gbs\": %.3f, \"model_files_gbs\": %.3f, "
                "\"token_replay_gbs\": %s, \"token_replay_bytes\": %zu}\n",
                name.c_str(), threads, o.n_gen, bytes, gbs[0], gbs[1], gbs[2],
                replay_gbs.c_str(), replay.bytes_per_pass());
  } else {
    const char* what[4] = {"decode", "1 GiB buffer, round and round (the read test's footprint)",
                           "the model's files, on and on through them",
                           "a token's own tensors in the checkpoint's files, random experts"};
    std::printf("| %s, %zu threads, %zu tokens, %.1f MB per token | GB/s (median) "
                "| decode as %% of it |\n",
                name.c_str(), threads, o.n_gen, double(bytes) / 1e6);
    std::printf("| --- | ---: | ---: |\n");
    for (int k = 0; k < 4; ++k) {
      if (k == 3 && !replay.ok()) {
        std::printf("| %s | n/a: %s | |\n", what[k], replay.error().c_str());
        continue;
      }
      const std::string pct =
          k == 0 ? "" : std::to_string(int(100.0 * gbs[0] / gbs[k] + 0.5)) + " %";
      std::printf("| %s | %.2f | %s |\n", what[k], gbs[k], pct.c_str());
    }
    std::printf("\n(after every decode token, one pass of pure loads of its weight bytes over "
                "each memory,\n in the read test's best pattern; medians over the tokens)\n");
  }
  return 0;
}

}  // namespace gptoss::bench
