// Flags are `--flag value` or `--flag=value`; numbers must parse completely and lie in range,
// so a typo fails here with the flag's name rather than deep inside.
#include "server_options.hpp"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <gptoss.h>

#include "closest_flag.hpp"

namespace gptoss_server {
namespace {

template <typename T>
T parse_number(const std::string& flag, const std::string& text, T min, T max) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw UsageError(flag + ": not a valid number: '" + text + "'");
  if (value < min || value > max)
    throw UsageError(flag + " must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + text);
  return value;
}

std::string one_of(const std::string& flag, const std::string& v, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw UsageError(flag + " must be one of " + list + ", got '" + v + "'");
}

// "N" (every effort) or "low=N,medium=N,high=N" (any of them).
void parse_reasoning_budget(ServerOptions& o, const std::string& v) {
  const char* names[] = {"low", "medium", "high"};
  size_t start = 0;
  while (start <= v.size()) {
    const size_t end = std::min(v.find(',', start), v.size());
    const std::string item = v.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      const auto n = parse_number<int64_t>("--reasoning-budget", item, 0, INT32_MAX);
      for (auto& b : o.reasoning_budget) b = n;
    } else {
      const std::string effort = item.substr(0, eq);
      int i = 0;
      while (i < 3 && effort != names[i]) ++i;
      if (i == 3) throw UsageError("--reasoning-budget: unknown effort '" + effort + "' (low, medium, high)");
      o.reasoning_budget[i] = parse_number<int64_t>("--reasoning-budget", item.substr(eq + 1), 0, INT32_MAX);
    }
    start = end + 1;
  }
}

// YYYY-MM-DD, a real calendar day.
std::string parse_date(const std::string& v) {
  const auto bad = [&] { return UsageError("--date must be a calendar date YYYY-MM-DD, got '" + v + "'"); };
  if (v.size() != 10 || v[4] != '-' || v[7] != '-') throw bad();
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (v[i] < '0' || v[i] > '9') throw bad();
  const int year = std::stoi(v.substr(0, 4)), month = std::stoi(v.substr(5, 2)), day = std::stoi(v.substr(8, 2));
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const int days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > days[month - 1]) throw bad();
  return v;
}

std::string read_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("--api-key-file: cannot read " + path);
  std::string key;
  std::getline(in, key);
  while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) key.pop_back();
  if (key.empty()) throw UsageError("--api-key-file: " + path + " holds no key on its first line");
  return key;
}

using Setter = std::function<void(ServerOptions&, const std::string&)>;
constexpr size_t kMaxCount = size_t(1) << 40;

const std::map<std::string, Setter>& value_flags() {
  using O = ServerOptions;
  using S = const std::string&;
  static const std::map<std::string, Setter> flags = {
      {"--model", [](O& o, S v) { o.model_path = v; }},
      {"-m", [](O& o, S v) { o.model_path = v; }},
      {"--model-name", [](O& o, S v) { o.model_name = v; }},
      {"--tokenizer", [](O& o, S v) { o.tokenizer_path = v; }},
      {"--backend",
       [](O& o, S v) {
         o.backend = one_of("--backend", v, {"auto", "cpu", "cuda", "hip"});
       }},
      {"--threads", [](O& o, S v) { o.threads = parse_number<uint32_t>("--threads", v, 0, 4096); }},
      {"--precision",
       [](O& o, S v) {
         o.exact = one_of("--precision", v, {"fast", "exact"}) == "exact";
       }},
      {"--max-running",
       [](O& o, S v) { o.engine.max_running = parse_number<size_t>("--max-running", v, 1, 1024); }},
      {"--max-queue",
       [](O& o, S v) { o.engine.max_queue = parse_number<size_t>("--max-queue", v, 0, 1 << 20); }},
      {"--step-tokens",
       [](O& o, S v) {
         o.engine.step_tokens = parse_number<size_t>("--step-tokens", v, 2, 1 << 16);
       }},
      {"--context",
       [](O& o, S v) {
         o.engine.context_length = parse_number<size_t>("--context", v, 16, kMaxCount);
       }},
      {"--kv-tokens",
       [](O& o, S v) {
         o.engine.kv_tokens = parse_number<size_t>("--kv-tokens", v, 16, kMaxCount);
         o.kv_tokens_given = true;
       }},
      {"--kv-dtype",
       [](O& o, S v) {
         o.engine.kv_dtype = one_of("--kv-dtype", v, {"f32", "bf16"}) == "bf16" ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32;
       }},
      {"--prefix-cache",
       [](O& o, S v) {
         o.engine.prefix_cache_entries = parse_number<size_t>("--prefix-cache", v, 0, 4096);
       }},
      {"--reasoning-budget", [](O& o, S v) { parse_reasoning_budget(o, v); }},
      {"--draft",
       [](O& o, S v) {
         o.engine.speculation.on = one_of("--draft", v, {"ngram", "none"}) == "ngram";
       }},
      {"--draft-max",
       [](O& o, S v) {
         o.engine.speculation.draft_max = parse_number<uint32_t>("--draft-max", v, 0, 256);
       }},
      {"--draft-model", [](O& o, S v) { o.draft_model_path = v; }},
      {"--draft-cost-bound",
       [](O& o, S v) {
         o.engine.speculation.cost_bound = one_of("--draft-cost-bound", v, {"on", "off"}) == "on";
       }},
      {"--date", [](O& o, S v) { o.conversation_date = parse_date(v); }},
      {"--host", [](O& o, S v) { o.host = v; }},
      {"--port", [](O& o, S v) { o.port = parse_number<int>("--port", v, 0, 65535); }},
      {"--api-key", [](O& o, S v) { o.api_key = v; }},
      {"--api-key-file", [](O& o, S v) { o.api_key = read_key_file(v); }},
      {"--max-body-bytes",
       [](O& o, S v) {
         o.max_body_bytes = parse_number<size_t>("--max-body-bytes", v, 1024, kMaxCount);
       }},
      {"--read-timeout",
       [](O& o, S v) { o.read_timeout_s = parse_number<int>("--read-timeout", v, 1, 86400); }},
      {"--write-timeout",
       [](O& o, S v) { o.write_timeout_s = parse_number<int>("--write-timeout", v, 1, 86400); }},
      {"--keep-alive-timeout",
       [](O& o, S v) {
         o.keep_alive_timeout_s = parse_number<int>("--keep-alive-timeout", v, 1, 3600);
       }},
      {"--header-timeout",
       [](O& o, S v) { o.header_timeout_s = parse_number<int>("--header-timeout", v, 1, 3600); }},
      {"--http-threads",
       [](O& o, S v) { o.http_threads = parse_number<size_t>("--http-threads", v, 4, 65536); }},
      {"--drain-timeout",
       [](O& o, S v) { o.drain_timeout_s = parse_number<int>("--drain-timeout", v, 0, 86400); }},
      {"--store", [](O& o, S v) { o.store = v; }},
      {"--data-dir", [](O& o, S v) { o.data_dir = v; }},
      {"--log-file", [](O& o, S v) { o.log_file = v; }},
      {"--log-format",
       [](O& o, S v) {
         o.log_json = one_of("--log-format", v, {"text", "json"}) == "json";
       }},
      {"--log-level",
       [](O& o, S v) {
         o.log_level = one_of("--log-level", v, {"trace", "debug", "info", "warn", "error", "off"});
       }},
  };
  return flags;
}

// Every flag, for the suggestion after an unknown one.
std::vector<std::string> known_flags() {
  std::vector<std::string> names = {"--help", "--version", "--insecure-no-auth", "--enable-bench",
                                    "--no-constrain"};
  for (const auto& [name, setter] : value_flags()) names.push_back(name);
  return names;
}

}  // namespace

void print_server_usage(std::FILE* out) {
  std::fputs(
      "usage: gptoss-server --model PATH [options]\n"
      "OpenAI Responses, Chat Completions and Completions over continuous batching "
      "(docs/server.md).\n"
      "\n"
      "model:   --model PATH  --model-name NAME  --tokenizer PATH  --backend auto|cpu|cuda|hip\n"
      "         --threads N (0 = every core)  --precision fast|exact\n"
      "engine:  --max-running N (16)  --max-queue N (64)  --step-tokens N (256)  --context N "
      "(8192)\n"
      "         --kv-tokens N (4 x context)  --kv-dtype f32|bf16  --prefix-cache N (8)\n"
      "         --reasoning-budget N | low=N,medium=N,high=N  --no-constrain\n"
      "         --draft ngram|none (ngram)  --draft-max N (8)  --draft-model PATH\n"
      "         --draft-cost-bound on|off (on)\n"
      "         --date YYYY-MM-DD (the prompts' current date; default today, UTC)\n"
      "http:    --host ADDR (127.0.0.1)  --port N (8000; 0 = any free port)\n"
      "         --api-key KEY | --api-key-file FILE  --insecure-no-auth\n"
      "         --max-body-bytes N  --read-timeout S  --write-timeout S  --keep-alive-timeout S\n"
      "         --header-timeout S (10)  --http-threads N  --drain-timeout S (600)  "
      "--enable-bench\n"
      "store:   --store PATH | postgresql://...  --data-dir DIR\n"
      "logs:    --log-file PATH  --log-format text|json  --log-level "
      "trace|debug|info|warn|error|off\n"
      "         --help  --version\n",
      out);
  // The three commands a newcomer needs, last, where the eye lands.
  // clang-format off
  std::fputs(
      "\n"
      "first steps:\n"
      "  gptoss-server --model models/gpt-oss-20b      serve on 127.0.0.1:8000 (weights: docs/models.md)\n"
      "  curl http://127.0.0.1:8000/v1/responses -H 'Content-Type: application/json' \\\n"
      "       -d '{\"model\": \"gpt-oss-20b\", \"input\": \"Hello\"}'\n"
      "  gptoss-server --model models/gpt-oss-20b --host 0.0.0.0 --api-key-file FILE   for other machines\n",
      out);
  // clang-format on
}

std::optional<ServerOptions> parse_server_options(int argc, char** argv) {
  ServerOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "--help" || arg == "-h") {
      print_server_usage(stdout);
      return std::nullopt;
    }
    if (arg == "--version") {
      std::printf("gptoss-server (libgptoss %s)\n", gptoss_get_version());
      return std::nullopt;
    }
    if (arg == "--insecure-no-auth" || arg == "--enable-bench" || arg == "--no-constrain") {
      if (has_value) throw UsageError(arg + " takes no value");
      if (arg == "--enable-bench") o.enable_bench = true;
      else if (arg == "--no-constrain") o.constrain = false;
      else o.insecure_no_auth = true;
      continue;
    }
    auto it = value_flags().find(arg);
    if (it == value_flags().end())
      throw UsageError("unknown option " + arg + gptoss_flags::suggestion(arg, known_flags()));
    if (!has_value) {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      value = argv[++i];
    }
    it->second(o, value);
  }
  if (o.model_path.empty())
    throw UsageError("no --model given (scripts/serve.sh starts the server on the default tiny model)");
  if (!o.kv_tokens_given)
    o.engine.kv_tokens = std::max(4 * o.engine.context_length, o.engine.max_running * size_t(GPTOSS_KV_PAGE_SIZE));
  if (o.engine.kv_tokens < o.engine.context_length)
    throw UsageError("--kv-tokens (" + std::to_string(o.engine.kv_tokens) + ") must hold at least one --context (" +
                     std::to_string(o.engine.context_length) + ")");
  if (o.engine.step_tokens <= o.engine.max_running)
    throw UsageError("--step-tokens must exceed --max-running (each step holds a decode token per running sequence)");
  if (!o.draft_model_path.empty()) {
    if (!o.engine.speculation.on)
      throw UsageError(
          "--draft-model drafts for speculative decoding, which --draft none turns off");
    std::error_code ec;
    if (!std::filesystem::exists(o.draft_model_path, ec))
      throw UsageError("--draft-model: no such file or directory: " + o.draft_model_path);
  }
  if (o.http_threads == 0) o.http_threads = o.engine.max_running + o.engine.max_queue + 8;
  if (o.model_name.empty()) {
    std::filesystem::path p(o.model_path);
    while (!p.empty() && p.filename().empty()) p = p.parent_path();
    o.model_name = p.filename().string();
    if (o.model_name.empty()) o.model_name = o.model_path;
  }
  if (o.api_key.empty() && !o.insecure_no_auth && !is_loopback_host(o.host))
    throw UsageError("refusing to listen on " + o.host +
                     " without authentication: give --api-key or --api-key-file (or --insecure-no-auth)");
  return o;
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string default_store_path(const ServerOptions& options) {
  std::string dir = options.data_dir;
  if (dir.empty()) {
    if (const char* home = std::getenv("GPTOSS_HOME"); home && *home) dir = home;
    else if (const char* user = std::getenv("HOME"); user && *user) dir = std::string(user) + "/.local/share/gptoss";
    else dir = ".";
  }
  return (std::filesystem::path(dir) / "responses.sqlite3").string();
}

}  // namespace gptoss_server
