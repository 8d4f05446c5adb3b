// gptoss-make-model: writes a synthetic gpt-oss checkpoint (seeded random weights at the real
// shapes) as a Hugging Face directory and/or a GGUF file holding identical weights.
//
//   gptoss-make-model --preset tiny|conformance|wide|20b|120b|micro --out DIR [--format hf|gguf|both]
//                     [--seed N] [--tokenizer-json PATH] [--layers N] [--shard-mb N]
//                     [--gguf-dense bf16|f16|q8_0]
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "libgptoss/common/error.hpp"
#include "tools/make_model/gguf_writer.hpp"
#include "tools/make_model/hf_writer.hpp"
#include "tools/make_model/presets.hpp"

namespace {

void usage(std::FILE* to) {
  std::fputs(
      "usage: gptoss-make-model --preset tiny|conformance|wide|20b|120b|micro --out DIR\n"
      "                         [--format hf|gguf|both] [--seed N] [--tokenizer-json PATH]\n"
      "                         [--layers N] [--shard-mb N] [--gguf-dense bf16|f16|q8_0]\n"
      "Writes DIR/model-hf/ (config.json, safetensors, tokenizer.json) and/or DIR/model.gguf with\n"
      "identical seeded random weights. --shard-mb splits the safetensors into shards of at\n"
      "most N MiB with an index (default: 4096 for 20b/120b, unsharded otherwise).\n"
      "--gguf-dense stores the GGUF's 2-D dense tensors (embedding, output, attention) as BF16\n"
      "(default), F16 or Q8_0 like llama.cpp's releases: the same values rounded to that type.\n",
      to);
}

uint64_t parse_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || text[0] == '-')
    gptoss::fail(gptoss_status_invalid_argument, "{} needs a non-negative integer, got \"{}\"", flag, text);
  return v;
}

int run(int argc, char** argv) {
  std::string preset_name, out, format = "both", tokenizer_json, gguf_dense = "bf16";
  uint64_t seed = 0, layers = 0, shard_mb = 0;
  bool shard_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      usage(stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      usage(stderr);
      gptoss::fail(gptoss_status_invalid_argument, "{} needs a value (or is unknown)", flag);
    }
    const std::string value = argv[++i];
    if (flag == "--preset") preset_name = value;
    else if (flag == "--out") out = value;
    else if (flag == "--format") format = value;
    else if (flag == "--seed") seed = parse_number(flag, value);
    else if (flag == "--tokenizer-json") tokenizer_json = value;
    else if (flag == "--layers") layers = parse_number(flag, value);
    else if (flag == "--shard-mb") shard_mb = parse_number(flag, value), shard_given = true;
    else if (flag == "--gguf-dense") gguf_dense = value;
    else {
      usage(stderr);
      gptoss::fail(gptoss_status_invalid_argument, "unknown option {}", flag);
    }
  }
  if (preset_name.empty() || out.empty()) {
    usage(stderr);
    gptoss::fail(gptoss_status_invalid_argument, "--preset and --out are required");
  }
  if (format != "hf" && format != "gguf" && format != "both")
    gptoss::fail(gptoss_status_invalid_argument, "--format must be hf, gguf or both");
  if (gguf_dense != "bf16" && gguf_dense != "f16" && gguf_dense != "q8_0")
    gptoss::fail(gptoss_status_invalid_argument, "--gguf-dense must be bf16, f16 or q8_0");
  if (gguf_dense != "bf16" && format == "hf")
    gptoss::fail(gptoss_status_invalid_argument, "--gguf-dense applies to the GGUF only (--format gguf or both)");
  if (layers > 1024) gptoss::fail(gptoss_status_invalid_argument, "--layers {} is too many", layers);
  if (!tokenizer_json.empty() && !std::filesystem::is_regular_file(tokenizer_json))
    gptoss::fail(gptoss_status_io, "tokenizer {} not found", tokenizer_json);
  if (tokenizer_json.empty())
    std::fprintf(stderr, "note: no --tokenizer-json: no tokenizer.json in the HF directory and no "
                         "tokenizer metadata in the GGUF\n");

  const auto preset = gptoss::make_model::preset(preset_name, static_cast<uint32_t>(layers));
  if (!shard_given) shard_mb = preset.sharded ? 4096 : 0;
  std::filesystem::create_directories(out);
  const auto start = std::chrono::steady_clock::now();
  if (format != "gguf") {
    gptoss::make_model::write_hf(preset.config, {(std::filesystem::path(out) / "model-hf").string(), seed,
                                                 shard_mb << 20, tokenizer_json});
    std::printf("wrote %s/model-hf\n", out.c_str());
  }
  if (format != "hf") {
    const std::string name = "gptoss-make-model " + preset_name + " seed " + std::to_string(seed);
    gptoss::make_model::write_gguf(preset.config, {(std::filesystem::path(out) / "model.gguf").string(),
                                                   seed, name, tokenizer_json, gguf_dense});
    std::printf("wrote %s/model.gguf\n", out.c_str());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("done in %.1f s\n", seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const gptoss::Error& e) {
    std::fprintf(stderr, "gptoss-make-model: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gptoss-make-model: %s\n", e.what());
  }
  return 1;
}
