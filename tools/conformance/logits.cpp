// gptoss-conformance logits DIR: runs the model of DIR (manifest.json: HF directory and GGUF
// file of one synthetic model, prompts with float64 reference logits) through the public C
// API, both loaders, in two ways — prefill in chunks that end at each listed position, and
// one token at a time — and compares every listed position against the reference.
//
// --precision exact (default): every listed position within tolerance_abs (router ties
// excepted). --precision fast: the model runs in gptoss_precision_fast and each run must do at
// least as well as llama.cpp did against the same reference (llamacpp_vs_ref_all_positions:
// top-1 agreement, mean |d| and max |d|). llama.cpp's figures cover every position of a
// prompt; ours cover the positions that have reference rows, which include the hard ones
// (sliding-window edges, router near-ties). --kv bf16 keeps the KV cache in bf16 (default
// f32): with --precision fast that is the configuration whose attention takes bf16 dot
// products on CPUs with AVX512-BF16.
//
// --reference-backend NAME replaces the reference files by the logits of backend NAME (exact
// precision, f32 cache, prompts prefilled in the same chunks) on the same model: one backend
// checked against another where the float64 rows cannot travel with the model, or on another
// model of the same shape. The tolerances stay the manifest's; router ties are the manifest's
// positions, so on another model a near-tie may fail a position that the reference would skip.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gptoss.h"
#include "tools/conformance/conformance.hpp"

namespace gptoss::conformance {
namespace {

void check(gptoss_status st, const std::string& what) {
  if (st != gptoss_status_success)
    throw std::runtime_error(what + ": " + gptoss_status_to_string(st) + ": " +
                             gptoss_get_last_error_message());
}

std::vector<uint32_t> read_ids(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::vector<uint32_t> ids;
  uint64_t v;
  while (f >> v) ids.push_back(uint32_t(v));
  return ids;
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

// llama.cpp's deviation from the reference (manifest: llamacpp_vs_ref_all_positions).
struct Baseline {
  double top1 = 0, mean_abs = 0, max_abs = 0;
};

struct Prompt {
  std::string name;
  Baseline llamacpp;
  std::vector<uint32_t> ids;
  std::vector<size_t> positions;
  std::set<size_t> ties;
  std::vector<float> ref;  // positions.size() rows of vocab
};

struct Stats {
  double max_abs = 0, sum_abs = 0;
  size_t n = 0, top1 = 0, rows = 0;
  double max_abs_checked = 0;
};

size_t argmax(const float* v, size_t n) { return size_t(std::max_element(v, v + n) - v); }

// Logits at every listed position, computed either in prefill chunks or token by token.
std::vector<std::vector<float>> run_prompt(gptoss_model_t model, const Prompt& p, bool decode,
                                           size_t vocab, gptoss_kv_dtype kv) {
  gptoss_context_options co;
  gptoss_context_options_init(&co);
  co.context_length = p.ids.size() + 1;
  co.kv_dtype = kv;
  gptoss_context_t ctx = nullptr;
  check(gptoss_context_create_with_options(model, &co, &ctx), "context_create");
  std::vector<std::vector<float>> rows;
  size_t next = 0;
  for (size_t pos : p.positions) {
    while (next <= pos) {
      const size_t end = decode ? next + 1 : pos + 1;
      check(gptoss_context_append_tokens(ctx, end - next, p.ids.data() + next), "append");
      check(gptoss_context_process(ctx), "process");
      next = end;
    }
    std::vector<float> row(vocab);
    size_t n = 0;
    check(gptoss_context_get_logits(ctx, row.data(), row.size(), &n), "get_logits");
    rows.push_back(std::move(row));
  }
  gptoss_context_release(ctx);
  return rows;
}

}  // namespace

int run_logits(const Args& args) {
  std::string formats = "both", backend = "cpu", reference_backend;
  gptoss_split_mode split = gptoss_split_mode_layer;
  bool verbose = false, fast = false;
  gptoss_kv_dtype kv = gptoss_kv_dtype_f32;
  // main() checked the options and their values (see kLogits there).
  for (size_t i = 0; i < args.extra.size(); ++i) {
    const std::string& o = args.extra[i];
    if (o == "--verbose") verbose = true;
    else if (i + 1 >= args.extra.size()) throw std::runtime_error("option " + o + " has no value");
    else if (o == "--format") formats = args.extra[++i];
    else if (o == "--precision") fast = args.extra[++i] == "fast";
    else if (o == "--kv") kv = args.extra[++i] == "bf16" ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32;
    else if (o == "--backend") backend = args.extra[++i];
    else if (o == "--reference-backend") reference_backend = args.extra[++i];
    else if (o == "--split") {
      const std::string v = args.extra[++i];
      split = v == "none" ? gptoss_split_mode_none : v == "expert" ? gptoss_split_mode_expert : gptoss_split_mode_layer;
    }
    else throw std::runtime_error("unknown option " + o);
  }
  std::ifstream mf(args.dir + "/manifest.json");
  if (!mf) throw std::runtime_error("no manifest.json in " + args.dir);
  const nlohmann::json manifest = nlohmann::json::parse(mf);
  const size_t vocab = manifest.at("vocab_size").get<size_t>();
  const double tol = manifest.at("tolerance_abs").get<double>();

  std::vector<Prompt> prompts;
  for (const auto& jp : manifest.at("prompts")) {
    Prompt p;
    p.name = jp.at("name").get<std::string>();
    p.ids = read_ids(args.dir + "/" + jp.at("ids").get<std::string>());
    p.positions = jp.at("positions").get<std::vector<size_t>>();
    for (size_t t : jp.at("router_tie_positions").get<std::vector<size_t>>()) p.ties.insert(t);
    if (fast) {
      const auto& b = jp.at("llamacpp_vs_ref_all_positions");
      p.llamacpp = {b.at("top1_agree").get<double>(), b.at("mean_abs").get<double>(),
                    b.at("max_abs").get<double>()};
    }
    if (reference_backend.empty())
      p.ref = read_f32(args.dir + "/" + jp.at("ref").get<std::string>());
    if (reference_backend.empty() && p.ref.size() != p.positions.size() * vocab)
      throw std::runtime_error(p.name + ": reference has the wrong size");
    prompts.push_back(std::move(p));
  }

  struct Model {
    std::string label, path;
    bool hf;
  };
  std::vector<Model> models;
  if (formats == "both" || formats == "hf")
    models.push_back({"hf", args.dir + "/" + manifest.at("models").at("hf").get<std::string>(), true});
  if (formats == "both" || formats == "gguf")
    models.push_back({"gguf", args.dir + "/" + manifest.at("models").at("gguf").get<std::string>(), false});

  size_t passed = 0, failed = 0;
  for (const auto& m : models) {
    gptoss_model_options opt;
    gptoss_model_options_init(&opt);
    opt.backend = backend.c_str();
    opt.split_mode = split;
    opt.precision = fast ? gptoss_precision_fast : gptoss_precision_exact;
    if (m.hf) {
      if (args.tokenizer_json.empty())
        throw std::runtime_error("the HF model has no tokenizer.json: pass --tokenizer-json PATH");
      opt.tokenizer_path = args.tokenizer_json.c_str();
    }
    if (!reference_backend.empty()) {
      gptoss_model_options ref_opt = opt;
      ref_opt.backend = reference_backend.c_str();
      ref_opt.precision = gptoss_precision_exact;
      gptoss_model_t ref_model = nullptr;
      check(gptoss_model_create_with_options(m.path.c_str(), &ref_opt, &ref_model),
            "load " + m.path + " on " + reference_backend);
      for (auto& p : prompts) {
        p.ref.clear();
        for (const auto& row : run_prompt(ref_model, p, false, vocab, gptoss_kv_dtype_f32))
          p.ref.insert(p.ref.end(), row.begin(), row.end());
      }
      gptoss_model_release(ref_model);
    }
    gptoss_model_t model = nullptr;
    check(gptoss_model_create_with_options(m.path.c_str(), &opt, &model), "load " + m.path);
    for (const auto& p : prompts) {
      for (bool decode : {false, true}) {
        const auto rows = run_prompt(model, p, decode, vocab, kv);
        Stats s;
        for (size_t r = 0; r < rows.size(); ++r) {
          const float* ref = p.ref.data() + r * vocab;
          double row_max = 0;
          for (size_t i = 0; i < vocab; ++i) {
            const double d = std::fabs(double(rows[r][i]) - double(ref[i]));
            row_max = std::max(row_max, d);
            s.sum_abs += d;
          }
          s.n += vocab;
          s.rows++;
          s.max_abs = std::max(s.max_abs, row_max);
          if (!p.ties.count(p.positions[r])) s.max_abs_checked = std::max(s.max_abs_checked, row_max);
          if (argmax(rows[r].data(), vocab) == argmax(ref, vocab)) s.top1++;
          if (verbose)
            std::printf("  %s %s %s pos %zu: max|d| %.3g%s\n", m.label.c_str(), p.name.c_str(),
                        decode ? "decode" : "prefill", p.positions[r], row_max,
                        p.ties.count(p.positions[r]) ? " (router tie, not checked)" : "");
        }
        const double mean = s.sum_abs / double(s.n), top1 = double(s.top1) / double(s.rows);
        if (fast) {
          const Baseline& b = p.llamacpp;
          const bool ok = top1 >= b.top1 && mean <= b.mean_abs && s.max_abs <= b.max_abs;
          (ok ? passed : failed)++;
          std::printf("%s %-5s %-10s %-7s fast: top-1 %.3f (llama.cpp %.3f), mean|d| %.3g (%.3g), "
                      "max|d| %.3g (%.3g)\n",
                      ok ? "PASS" : "FAIL", m.label.c_str(), p.name.c_str(),
                      decode ? "decode" : "prefill", top1, b.top1, mean, b.mean_abs, s.max_abs,
                      b.max_abs);
          continue;
        }
        const bool ok = s.max_abs_checked <= tol;
        (ok ? passed : failed)++;
        std::printf("%s %-5s %-10s %-7s max|d| %.3g (checked %.3g, tol %.3g), mean|d| %.3g, top-1 %zu/%zu\n",
                    ok ? "PASS" : "FAIL", m.label.c_str(), p.name.c_str(),
                    decode ? "decode" : "prefill", s.max_abs, s.max_abs_checked, tol,
                    mean, s.top1, s.rows);
      }
    }
    gptoss_model_release(model);
  }
  std::printf("%zu passed, %zu failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace gptoss::conformance
