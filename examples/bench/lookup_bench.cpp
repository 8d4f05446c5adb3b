// gptoss-bench --prompt-lookup: prompt lookup (docs/speculative.md) where it is meant to pay,
// and where it finds little.
//  1. A restated file: the prompt holds a source file and asks for it back with one line
//     changed; the answer (the file with that edit, its first N_GEN tokens) is forced as the
//     continuation, since random weights will not write it. The library's prompt lookup,
//     adaptive draft length and cost bound (libgptoss/speculative) draft from the sequence so
//     far, as the speculator does (the bound learning from each step verified and timed as it
//     is chosen), and keep the draft's longest prefix that agrees with the answer: that gives
//     the steps, their drafts and the acceptance. Each step is then timed again as what it
//     costs, a verification (gptoss_context_sample_draft) of its draft, against one decode step
//     per answer token. Every timed step starts at the end of the prompt, so both cases attend
//     over the same KV (the answer's own positions are not in it); and the model keeps what it
//     keeps of the draft rather than what the answer would, which changes only how many rows
//     are sampled after the forward pass (0.1 ms each on the 20b). The same for an answer in
//     prose that restates nothing of the prompt: what prompt lookup costs where it finds only
//     chance matches. And the prose again with a drafter that is never right (every drafted
//     token differs from the answer's), which the draft length's cost bound is for.
//  2. Free generation: the model's own greedy tokens after the bench prompt, plain decoding
//     against gptoss_speculator_step with prompt lookup (what `gptoss --draft ngram` runs),
//     whatever it finds to draft there.
// Each repetition alternates the cases.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "lookup_drafter.hpp"

namespace gptoss::bench {
namespace {

// A source file of the kind an agent is asked to edit (its line with kTimeoutSeconds is the
// one edited).
const char* kFile = R"(#include "http_client.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

namespace net {

namespace {
constexpr int kMaxRetries = 3;
constexpr int kTimeoutSeconds = 30;
constexpr const char* kUserAgent = "example-client/1.4";

bool retryable(int status) { return status == 429 || status == 502 || status == 503; }
}  // namespace

HttpClient::HttpClient(std::string base_url) : base_url_(std::move(base_url)) {
  if (base_url_.empty()) throw std::invalid_argument("HttpClient: empty base URL");
  if (base_url_.back() == '/') base_url_.pop_back();
}

Response HttpClient::get(const std::string& path, const Headers& headers) {
  Request request;
  request.method = "GET";
  request.url = base_url_ + path;
  request.headers = headers;
  request.headers["User-Agent"] = kUserAgent;
  request.timeout = std::chrono::seconds(kTimeoutSeconds);
  return send_with_retries(request);
}

Response HttpClient::post(const std::string& path, const std::string& body,
                          const Headers& headers) {
  Request request;
  request.method = "POST";
  request.url = base_url_ + path;
  request.body = body;
  request.headers = headers;
  request.headers["User-Agent"] = kUserAgent;
  request.headers["Content-Type"] = "application/json";
  request.timeout = std::chrono::seconds(kTimeoutSeconds);
  return send_with_retries(request);
}

Response HttpClient::send_with_retries(const Request& request) {
  Response response;
  for (int attempt = 0; attempt <= kMaxRetries; ++attempt) {
    response = transport_.send(request);
    if (!retryable(response.status)) return response;
    const auto backoff = std::chrono::milliseconds(100 << attempt);
    sleep_for(backoff);
  }
  return response;
}

}  // namespace net
)";

// An answer that restates nothing of the prompt.
const char* kProse =
    "Before changing the timeout, it is worth asking why requests take long enough to hit it. "
    "A slow upstream, a saturated connection pool or retries that pile up behind one another "
    "all look the same from the outside: a call that waits. Measure first: log how long each "
    "attempt takes, how many attempts a request needs and which status codes come back. If most "
    "of the time goes to a few slow endpoints, give those their own limit instead of raising "
    "it for every call, and keep the default short so that a stuck server is noticed quickly. "
    "Longer timeouts hide problems; they do not solve them.";

const char* kEditFrom = "kTimeoutSeconds = 30;";
const char* kEditTo = "kTimeoutSeconds = 45;";

// The forced answer's steps: what prompt lookup drafts and how much of it the answer keeps.
struct Step {
  std::vector<uint32_t> draft;
  size_t kept = 0;
};

// `time_step` verifies a draft where every timed step starts and returns its seconds: the
// draft length's cost bound learns from them as the speculator does. `never_right`: instead of
// prompt lookup's proposal, tokens that differ from the answer's (a drafter that is never
// right, the bound's worst case).
std::vector<Step> lookup_schedule(
    const std::vector<uint32_t>& prompt, const std::vector<uint32_t>& answer, size_t max_draft,
    bool never_right, const std::function<double(const std::vector<uint32_t>&)>& time_step) {
  LookupDrafter drafter(max_draft);
  std::vector<uint32_t> sequence = prompt;
  std::vector<Step> steps;
  for (size_t pos = 0; pos < answer.size();) {
    Step step;
    const size_t ask = std::min(drafter.length(), answer.size() - pos - 1);
    if (ask > 0 && never_right) step.draft.assign(ask, answer[pos] + 1);
    else if (ask > 0) drafter.propose(sequence, ask, step.draft);
    while (step.kept < step.draft.size() && step.draft[step.kept] == answer[pos + step.kept])
      ++step.kept;
    // As the speculator does after every step.
    drafter.update(step.draft.size(), step.kept, time_step(step.draft));
    // The kept tokens and the one the step samples after them (the answer's).
    sequence.insert(sequence.end(), answer.begin() + std::ptrdiff_t(pos),
                    answer.begin() + std::ptrdiff_t(pos + step.kept + 1));
    pos += step.kept + 1;
    steps.push_back(std::move(step));
  }
  return steps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int run_lookup_bench(const Options& o) {
  const gptoss_model_options mo = model_options(o);
  const gptoss::model loaded = gptoss::model::load(o.model, &mo, "loading the model");
  const gptoss_model_info info = loaded.info();
  gptoss_tokenizer_t tok_raw = nullptr;
  gptoss::check(gptoss_model_get_tokenizer(loaded.get(), &tok_raw), "the model's tokenizer");
  const gptoss::tokenizer tok(tok_raw);

  const std::string file = kFile;
  std::string edited = file;
  edited.replace(edited.find(kEditFrom), std::string(kEditFrom).size(), kEditTo);
  const std::string prompt_text =
      "<|start|>system<|message|>You are a careful code editor.<|end|><|start|>user<|message|>"
      "Here is src/http_client.cpp:\n\n```cpp\n" +
      file +
      "```\n\nRaise the request timeout to 45 seconds and return the whole file, changed only "
      "there.<|end|><|start|>assistant<|channel|>final<|message|>";
  const std::vector<uint32_t> prompt = tok.encode(prompt_text, GPTOSS_ENCODE_ALLOW_SPECIAL);
  std::vector<uint32_t> answer = tok.encode("```cpp\n" + edited + "```");
  if (o.n_gen > 0 && o.n_gen < answer.size()) answer.resize(o.n_gen);
  std::vector<uint32_t> prose = tok.encode(kProse);
  if (o.n_gen > 0 && o.n_gen < prose.size()) prose.resize(o.n_gen);

  const size_t K = o.draft_max;
  const size_t n_free = o.n_gen;
  const size_t longest =
      std::max({prompt.size() + answer.size(), prompt.size() + prose.size(), o.n_prompt + n_free}) +
      K + 8;
  const gptoss_context_options co =
      decode_context_options(o, longest, std::max<size_t>({prompt.size(), o.n_prompt, K + 1}));
  const gptoss::context context = gptoss::context::create(loaded.get(), &co, "creating a context");
  const gptoss_context_t ctx = context.get();
  const gptoss::sampler greedy = greedy_sampler();
  const gptoss_sampler_t sampler = greedy.get();

  // Each run starts from `p` processed, its last token pending again; the checkpoint keeps the
  // sliding window there, so going back costs no prefill.
  auto start = [&](const std::vector<uint32_t>& p) {
    gptoss::check(gptoss_context_reset(ctx), "reset");
    gptoss::check(gptoss_context_append_tokens(ctx, p.size(), p.data()), "append");
    gptoss::check(gptoss_context_process(ctx), "prefill");
    gptoss::check(gptoss_context_set_checkpoint(ctx, p.size() - 1), "checkpoint");
  };
  auto restart = [&](const std::vector<uint32_t>& p) {
    const uint32_t any = p.back();
    gptoss::check(gptoss_context_append_tokens(ctx, 1, &any), "append");
    gptoss::check(gptoss_context_truncate(ctx, p.size()), "truncate");
  };

  // 1. Forced answers after the file's prompt: the file restated, and an answer in prose that
  // restates nothing (what prompt lookup costs where it finds only chance matches).
  struct Forced {
    size_t tokens = 0, steps = 0, drafted = 0, kept = 0;
    double plain_tps = 0, lookup_tps = 0;
  };
  std::vector<uint32_t> out(K + 1);
  start(prompt);
  size_t n = 0;
  // A verification of `draft` (none: a decode step) where every timed step starts.
  auto timed_step = [&](const std::vector<uint32_t>& draft) {
    restart(prompt);
    const auto t0 = Clock::now();
    gptoss::check(gptoss_context_sample_draft(ctx, sampler, draft.data(), draft.size(), nullptr,
                                              out.data(), out.size(), &n),
                  "verify");
    return seconds_since(t0);
  };
  // Warm-up, not counted (it pages the weights in and starts the threads): a decode step and
  // the longest verification.
  timed_step({});
  timed_step(std::vector<uint32_t>(K, prompt.back()));
  auto forced = [&](const std::vector<uint32_t>& ans, bool never_right) {
    Forced f;
    f.tokens = ans.size();
    const std::vector<Step> steps = lookup_schedule(prompt, ans, K, never_right, timed_step);
    f.steps = steps.size();
    for (const Step& st : steps) f.drafted += st.draft.size(), f.kept += st.kept;
    uint32_t t = 0;
    std::vector<double> plain_tps, lookup_tps;
    for (size_t r = 0; r < o.reps; ++r) {
      // Alternated step by step: each verification, then the decode steps of the tokens it
      // gives, so that the machine's drift reaches both alike.
      double plain_s = 0, lookup_s = 0;
      for (const Step& st : steps) {
        lookup_s += timed_step(st.draft);
        for (size_t i = 0; i <= st.kept; ++i) {
          restart(prompt);
          const auto t0 = Clock::now();
          gptoss::check(gptoss_context_sample(ctx, sampler, &t), "decode");
          plain_s += seconds_since(t0);
        }
      }
      plain_tps.push_back(double(ans.size()) / plain_s);
      lookup_tps.push_back(double(ans.size()) / lookup_s);
    }
    f.plain_tps = median(plain_tps);
    f.lookup_tps = median(lookup_tps);
    return f;
  };
  const Forced restated = forced(answer, false);
  const Forced unrelated = forced(prose, false);
  const Forced never_right = forced(prose, true);

  // 2. Free generation through the library's speculator.
  const std::vector<uint32_t> free_prompt = bench_prompt(o.n_prompt, info.vocab_size);
  std::vector<double> free_plain, free_spec;
  gptoss_speculator_stats free_stats{};
  size_t same = 0;
  if (n_free > 0) {
    start(free_prompt);
    gptoss_speculator_options so;
    gptoss_speculator_options_init(&so);
    so.max_draft = K;
    // Plain decoding on a second context, alternated step by step with the speculator's: each
    // speculative step, then as many plain decode steps as it gave tokens.
    const gptoss::context plain_context =
        gptoss::context::create(loaded.get(), &co, "creating a context");
    const gptoss_context_t pctx = plain_context.get();
    gptoss::check(gptoss_context_append_tokens(pctx, free_prompt.size(), free_prompt.data()),
                  "append");
    gptoss::check(gptoss_context_process(pctx), "prefill");
    gptoss::check(gptoss_context_set_checkpoint(pctx, free_prompt.size() - 1), "checkpoint");
    for (size_t r = 0; r < o.reps; ++r) {  // warm from the forced answers' runs
      restart(free_prompt);
      const uint32_t any = free_prompt.back();
      gptoss::check(gptoss_context_append_tokens(pctx, 1, &any), "append");
      gptoss::check(gptoss_context_truncate(pctx, free_prompt.size()), "truncate");
      const gptoss::speculator spec = gptoss::speculator::create(&so);
      std::vector<uint32_t> plain_out, spec_out;
      double p = 0, s = 0;
      while (spec_out.size() < n_free) {
        auto t0 = Clock::now();
        const std::vector<uint32_t> got = spec.step(ctx, sampler, n_free - spec_out.size());
        spec_out.insert(spec_out.end(), got.begin(), got.end());
        gptoss::check(gptoss_context_append_tokens(ctx, 1, &got.back()), "append");
        s += seconds_since(t0);
        t0 = Clock::now();
        while (plain_out.size() < spec_out.size()) {
          uint32_t t = 0;
          gptoss::check(gptoss_context_sample(pctx, sampler, &t), "decode");
          gptoss::check(gptoss_context_append_tokens(pctx, 1, &t), "append");
          plain_out.push_back(t);
        }
        p += seconds_since(t0);
      }
      free_plain.push_back(double(n_free) / p);
      free_spec.push_back(double(n_free) / s);
      free_stats = spec.stats();
      same += spec_out == plain_out ? 1 : 0;
    }
  }
  const double p2 = median(free_plain), s2 = median(free_spec);
  const double acc2 =
      free_stats.drafted ? double(free_stats.accepted) / double(free_stats.drafted) : 0.0;

  auto acceptance = [](size_t kept, size_t drafted) {
    return drafted ? double(kept) / double(drafted) : 0.0;
  };
  if (o.json) {
    for (const auto& [name, f] : {std::pair{"lookup_restated_file", restated},
                                  std::pair{"lookup_unrelated_answer", unrelated},
                                  std::pair{"never_right_drafter", never_right}})
      std::printf(
          "{\"bench\":\"%s\",\"prompt_tokens\":%zu,\"answer_tokens\":%zu,\"draft_max\":%zu,"
          "\"plain_tps\":%.3f,\"lookup_tps\":%.3f,\"speedup\":%.3f,\"steps\":%zu,"
          "\"drafted\":%zu,\"accepted\":%zu,\"acceptance\":%.3f}\n",
          name, prompt.size(), f.tokens, K, f.plain_tps, f.lookup_tps, f.lookup_tps / f.plain_tps,
          f.steps, f.drafted, f.kept, acceptance(f.kept, f.drafted));
    if (n_free > 0)
      std::printf(
          "{\"bench\":\"lookup_free_generation\",\"tokens\":%zu,\"plain_tps\":%.3f,"
          "\"lookup_tps\":%.3f,\"speedup\":%.3f,\"steps\":%llu,\"drafted\":%llu,"
          "\"accepted\":%llu,\"acceptance\":%.3f,\"identical_runs\":%zu}\n",
          n_free, p2, s2, s2 / p2, (unsigned long long)free_stats.steps,
          (unsigned long long)free_stats.drafted, (unsigned long long)free_stats.accepted, acc2,
          same);
    return 0;
  }
  std::printf("## Prompt lookup, draft at most %zu (median of %zu, alternated)\n\n", K, o.reps);
  std::printf(
      "model %s, %s precision, the forced answers after a %zu-token prompt (a file of "
      "code and the request to return it with one edit)\n\n",
      o.model.c_str(), o.exact ? "exact" : "fast", prompt.size());
  std::printf("| task | decode | tok/s | x plain | steps | drafted | accepted |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& [name, f] :
       {std::pair{"the file restated with its edit (forced)", restated},
        std::pair{"an answer in prose that restates nothing (forced)", unrelated},
        std::pair{"the prose, a drafter that is never right (forced)", never_right}}) {
    std::printf("| %s, %zu tokens | plain | %.2f | 1.00 | %zu | | |\n", name, f.tokens, f.plain_tps,
                f.tokens);
    std::printf("| | prompt lookup | %.2f | %.2f | %zu | %zu | %zu (%.1f %%) |\n", f.lookup_tps,
                f.lookup_tps / f.plain_tps, f.steps, f.drafted, f.kept,
                100.0 * acceptance(f.kept, f.drafted));
  }
  if (n_free > 0) {
    std::printf(
        "| free generation (%zu-token prompt, %zu tokens, the model's own) | plain | %.2f "
        "| 1.00 | %zu | | |\n",
        o.n_prompt, n_free, p2, n_free);
    std::printf("| | speculator, prompt lookup | %.2f | %.2f | %llu | %llu | %llu (%.1f %%) |\n",
                s2, s2 / p2, (unsigned long long)free_stats.steps,
                (unsigned long long)free_stats.drafted, (unsigned long long)free_stats.accepted,
                100.0 * acc2);
    std::printf("\nfree generation: speculative runs identical to plain: %zu of %zu\n", same,
                o.reps);
  }
  return 0;
}

}  // namespace gptoss::bench
