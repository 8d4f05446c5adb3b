// Flag parsing: `--flag value` or `--flag=value`; numbers must parse completely and lie in
// the range the library accepts, so a typo is a clear error here rather than deep inside.
#include "cli_options.hpp"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include <gptoss.hpp>

#include "closest_flag.hpp"

namespace gptoss_cli {
namespace {

template <typename T>
T parse_number(const std::string& flag, const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    throw UsageError(flag + ": not a valid number: '" + text + "'");
  }
  return value;
}

float parse_float(const std::string& flag, const std::string& text, float lo, float hi,
                  bool lo_open, const char* range) {
  float v = parse_number<float>(flag, text);
  if (!(v >= lo) || v > hi || (lo_open && v == lo)) {
    throw UsageError(flag + " must be in " + range + ", got " + text);
  }
  return v;
}

template <typename T>
T parse_count(const std::string& flag, const std::string& text, T min) {
  if (!text.empty() && text[0] == '-') throw UsageError(flag + " must not be negative: " + text);
  T v = parse_number<T>(flag, text);
  if (v < min) throw UsageError(flag + " must be at least " + std::to_string(min) + ", got " + text);
  return v;
}

using Setter = std::function<void(Options&, const std::string&)>;

// Flags that take a value.
const std::map<std::string, Setter>& value_flags() {
  static const std::map<std::string, Setter> flags = {
      {"--model", [](Options& o, const std::string& v) { o.model_path = v; }},
      {"-m", [](Options& o, const std::string& v) { o.model_path = v; }},
      {"--tokenizer", [](Options& o, const std::string& v) { o.tokenizer_path = v; }},
      {"--backend",
       [](Options& o, const std::string& v) {
         if (v != "auto" && v != "cpu" && v != "cuda" && v != "hip")
           throw UsageError("--backend must be auto, cpu, cuda or hip, got '" + v + "'");
         o.backend = v;
       }},
      {"--threads",
       [](Options& o, const std::string& v) {
         o.threads = parse_count<uint32_t>("--threads", v, 0);
       }},
      {"--precision",
       [](Options& o, const std::string& v) {
         if (v != "fast" && v != "exact")
           throw UsageError("--precision must be fast or exact, got '" + v + "'");
         o.exact = v == "exact";
       }},
      {"--layers",
       [](Options& o, const std::string& v) {
         o.layers = parse_count<uint32_t>("--layers", v, 1);
       }},
      {"--context",
       [](Options& o, const std::string& v) {
         o.context_length = parse_count<size_t>("--context", v, 0);
       }},
      {"--max-kv",
       [](Options& o, const std::string& v) { o.max_kv = parse_count<size_t>("--max-kv", v, 1); }},
      {"--kv",
       [](Options& o, const std::string& v) {
         if (v != "f32" && v != "bf16")
           throw UsageError("--kv must be f32 or bf16, got '" + v + "'");
         o.kv_bf16 = v == "bf16";
       }},
      {"--temperature",
       [](Options& o, const std::string& v) {
         o.temperature = parse_float("--temperature", v, 0.0f, 1e6f, false, "[0, inf)");
       }},
      {"--top-p",
       [](Options& o, const std::string& v) {
         o.top_p = parse_float("--top-p", v, 0.0f, 1.0f, true, "(0, 1]");
       }},
      {"--top-k",
       [](Options& o, const std::string& v) { o.top_k = parse_count<uint32_t>("--top-k", v, 0); }},
      {"--min-p",
       [](Options& o, const std::string& v) {
         o.min_p = parse_float("--min-p", v, 0.0f, 1.0f, false, "[0, 1)");
         if (o.min_p >= 1.0f) throw UsageError("--min-p must be in [0, 1), got " + v);
       }},
      {"--seed",
       [](Options& o, const std::string& v) { o.seed = parse_count<uint64_t>("--seed", v, 0); }},
      {"--max-tokens",
       [](Options& o, const std::string& v) {
         o.max_tokens = parse_count<size_t>("--max-tokens", v, 1);
         o.max_tokens_given = true;
       }},
      {"--reasoning-effort",
       [](Options& o, const std::string& v) {
         if (v != "low" && v != "medium" && v != "high")
           throw UsageError("--reasoning-effort must be low, medium or high, got '" + v + "'");
         o.reasoning_effort = v;
       }},
      {"--system", [](Options& o, const std::string& v) { o.system = v; }},
      {"--developer", [](Options& o, const std::string& v) { o.developer = v; }},
      {"-i", [](Options& o, const std::string& v) { o.input = v; }},
      {"--input", [](Options& o, const std::string& v) { o.input = v; }},
      {"-o", [](Options& o, const std::string& v) { o.output = v; }},
      {"--output", [](Options& o, const std::string& v) { o.output = v; }},
      {"--format",
       [](Options& o, const std::string& v) {
         if (v == "text") o.format = OutputFormat::text;
         else if (v == "ids") o.format = OutputFormat::ids;
         else if (v == "json") o.format = OutputFormat::json;
         else throw UsageError("--format must be text, ids or json, got '" + v + "'");
       }},
      {"--batch",
       [](Options& o, const std::string& v) { o.batch = parse_count<size_t>("--batch", v, 1); }},
      {"--json-schema", [](Options& o, const std::string& v) { o.json_schema_path = v; }},
      {"--max-reasoning-tokens",
       [](Options& o, const std::string& v) {
         o.max_reasoning_tokens = parse_count<int64_t>("--max-reasoning-tokens", v, 0);
       }},
      {"--draft",
       [](Options& o, const std::string& v) {
         if (v.empty()) throw UsageError("--draft must be none, ngram or a model path");
         o.draft = v;
       }},
      {"--draft-max",
       [](Options& o, const std::string& v) {
         o.draft_max = parse_count<uint32_t>("--draft-max", v, 1);
       }},
  };
  return flags;
}

// Flags without a value.
const std::map<std::string, std::function<void(Options&)>>& switch_flags() {
  static const std::map<std::string, std::function<void(Options&)>> flags = {
      {"--raw", [](Options& o) { o.harmony = false; }},
      {"--no-constrain", [](Options& o) { o.constrain = false; }},
      {"--no-harmony", [](Options& o) { o.harmony = false; }},
      {"--no-memory-check", [](Options& o) { o.memory_check = false; }},
      {"--hide-reasoning", [](Options& o) { o.show_reasoning = false; }},
      {"--show-reasoning", [](Options& o) { o.show_reasoning = true; }},
      {"--verbose", [](Options& o) { o.verbose = true; }},
      {"-v", [](Options& o) { o.verbose = true; }},
      {"--quiet", [](Options& o) { o.quiet = true; }},
      {"-q", [](Options& o) { o.quiet = true; }},
  };
  return flags;
}

// Every flag, for the suggestion after an unknown one.
std::vector<std::string> known_flags() {
  std::vector<std::string> names = {"--help", "--version"};
  for (const auto& [name, setter] : value_flags()) names.push_back(name);
  for (const auto& [name, setter] : switch_flags()) names.push_back(name);
  return names;
}

}  // namespace

void print_usage(std::FILE* out) {
  std::fputs(
      "usage: gptoss [chat|generate|getp] [flags]\n"
      "\n"
      "modes:\n"
      "  chat                      interactive Harmony conversation (default); reads stdin\n"
      "                            line by line; commands /reset, /save FILE, /load FILE, /quit\n"
      "  generate -i PROMPT        one prompt ('-' reads stdin), prints the answer\n"
      "  getp -i FILE [-o FILE]    one prompt per line, processed in batched contexts;\n"
      "                            one output line per prompt, newlines escaped as \\n\n"
      "\n"
      "model:\n"
      "  -m, --model PATH          HF directory or .gguf (default: the tiny random model,\n"
      "                            made on first use in $GPTOSS_HOME/models/tiny or\n"
      "                            ~/.cache/gptoss/models/tiny)\n"
      "  --tokenizer PATH          tokenizer.json to use instead of the model's\n"
      "  --backend NAME            auto (default), cpu, cuda, hip\n"
      "  --threads N               CPU threads (0 = all cores)\n"
      "  --precision fast|exact    fast (default) may quantize activations to int8;\n"
      "                            exact keeps fp32 activations\n"
      "  --layers N                use only the first N layers\n"
      "  --context N               tokens per context (default 8192; 0 = model maximum)\n"
      "  --max-kv N                share one KV pool of N tokens between contexts\n"
      "  --kv f32|bf16             KV cache element type (default f32; bf16 halves its\n"
      "                            memory, and with fast precision uses bf16 dot products)\n"
      "  --no-memory-check         load even when the weights and KV cache exceed the\n"
      "                            available memory (refused by default, before loading)\n"
      "sampling:\n"
      "  --temperature T (1.0; 0 = greedy)  --top-p P (1.0)  --top-k K (0 = off)\n"
      "  --min-p P (0)  --seed N (random)  --max-tokens N (1024)\n"
      "conversation:\n"
      "  --system TEXT             model identity line of the system message\n"
      "  --developer TEXT          developer instructions\n"
      "  --reasoning-effort E      low, medium (default) or high\n"
      "  --raw, --no-harmony       send the text as is, print the raw completion\n"
      "constrained decoding (Harmony structure enforced by default):\n"
      "  --json-schema FILE        the answer is JSON valid against this JSON Schema (with\n"
      "                            --raw: the whole output), complete within --max-tokens\n"
      "  --max-reasoning-tokens N  close the analysis channel after N tokens, then answer\n"
      "  --no-constrain            sample freely: nothing enforced\n"
      "  --hide-reasoning          do not show reasoning: analysis and preambles (chat\n"
      "                            shows them dimmed)\n"
      "  --show-reasoning          show it in generate too\n"
      "speculative decoding (same tokens, fewer forward steps; docs/speculative.md):\n"
      "  --draft none|ngram|PATH   draft by prompt lookup or with a smaller model of the\n"
      "                            same tokenizer (default ngram)\n"
      "  --draft-max K             most drafted tokens per step (default 8)\n"
      "output:\n"
      "  --format text|ids|json    generate/getp: answer text, token ids, or a JSON object\n"
      "  --batch N                 getp: prompts processed together (default 32)\n"
      "  -v, --verbose             per-token diagnostics, drafted/accepted counts (stderr)\n"
      "  -q, --quiet               no notices and no stats line\n"
      "  -h, --help    --version\n"
      "\n"
      "first steps:\n"
      "  gptoss generate -i \"Hello\"                 one answer from the default tiny model\n"
      "  gptoss chat --model models/gpt-oss-20b     chat with real weights (docs/models.md)\n"
      "  gptoss-server --model models/gpt-oss-20b   the OpenAI API on 127.0.0.1:8000\n",
      out);
}

std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  bool mode_seen = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      print_usage(stdout);
      return std::nullopt;
    }
    if (arg == "--version") {
      std::printf("gptoss %s\n", gptoss_get_version());
      return std::nullopt;
    }
    if (!arg.empty() && arg[0] == '-' && arg != "-") {
      std::string value;
      bool has_inline_value = false;
      if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline_value = true;
      }
      if (auto s = switch_flags().find(arg); s != switch_flags().end()) {
        if (has_inline_value) throw UsageError(arg + " takes no value");
        s->second(options);
        continue;
      }
      auto f = value_flags().find(arg);
      if (f == value_flags().end())
        throw UsageError("unknown option " + arg + gptoss_flags::suggestion(arg, known_flags()));
      if (!has_inline_value) {
        if (i + 1 >= argc) throw UsageError(arg + " needs a value");
        value = argv[++i];
      }
      f->second(options, value);
      continue;
    }
    if (mode_seen) throw UsageError("unexpected argument '" + arg + "' (see --help)");
    mode_seen = true;
    if (arg == "chat") options.mode = Mode::chat;
    else if (arg == "generate") options.mode = Mode::generate;
    else if (arg == "getp") options.mode = Mode::getp;
    else if (auto mode = gptoss_flags::closest_flag(arg, {"chat", "generate", "getp"});
             !mode.empty())
      throw UsageError("unknown mode '" + arg + "'; did you mean " + mode + "?");
    else throw UsageError("unknown mode '" + arg + "': expected chat, generate or getp");
  }
  if (!options.json_schema_path.empty()) {
    std::ifstream in(options.json_schema_path);
    if (!in) throw UsageError("--json-schema: cannot read " + options.json_schema_path);
    std::stringstream text;
    text << in.rdbuf();
    options.json_schema = text.str();
    if (!nlohmann::json::accept(options.json_schema))
      throw UsageError("--json-schema: " + options.json_schema_path + " is not valid JSON");
  }
  if (!options.constrain && (!options.json_schema.empty() || options.max_reasoning_tokens))
    throw UsageError("--json-schema and --max-reasoning-tokens need constrained decoding (drop --no-constrain)");
  if (!options.harmony && options.max_reasoning_tokens)
    throw UsageError("--max-reasoning-tokens needs Harmony (drop --raw)");
  if (options.mode != Mode::chat && !options.input) {
    throw UsageError(std::string(options.mode == Mode::getp ? "getp" : "generate") +
                     " needs -i " + (options.mode == Mode::getp ? "PROMPTS_FILE" : "PROMPT"));
  }
  return options;
}

}  // namespace gptoss_cli
