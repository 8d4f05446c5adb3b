#pragma once
// The command line of gptoss-server (docs/server.md lists every flag).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/scheduler.hpp"

namespace gptoss_server {

// A bad command line: one line on stderr, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ServerOptions {
  // Model.
  std::string model_path;
  std::string model_name;       // empty: the checkpoint's directory or file name
  std::string tokenizer_path;   // empty: the model's own
  std::string backend = "auto";
  uint32_t threads = 0;         // 0: every core
  bool exact = false;           // --precision exact

  // Engine.
  SchedulerConfig engine;
  bool kv_tokens_given = false; // else 4 contexts' worth (at least max_running pages)
  bool constrain = true;        // --no-constrain: no grammar (structure, tools, formats unenforced)
  // --draft-model: a second model with the same tokenizer drafts instead of prompt lookup.
  std::string draft_model_path;
  // Default max_reasoning_tokens per reasoning effort (low, medium, high); < 0: no limit.
  int64_t reasoning_budget[3] = {-1, -1, -1};
  // --date: the "Current date" every prompt's system message states (YYYY-MM-DD); empty: today
  // in UTC. Fixing it makes seeded generations reproducible from one day to the next.
  std::string conversation_date;

  // HTTP.
  std::string host = "127.0.0.1";
  int port = 8000;              // 0: any free port (printed)
  std::string api_key;
  bool insecure_no_auth = false;
  size_t max_body_bytes = 16u << 20;
  int read_timeout_s = 30;
  int write_timeout_s = 30;
  int keep_alive_timeout_s = 5;
  int header_timeout_s = 10;    // a request's line and headers, from its first byte
  size_t http_threads = 0;      // 0: max_running + max_queue + 8
  bool enable_bench = false;
  int drain_timeout_s = 600;

  // Store and logs.
  std::string store;            // empty: DATA_DIR/responses.sqlite3
  std::string data_dir;         // empty: $GPTOSS_HOME, else ~/.local/share/gptoss
  std::string log_file;
  bool log_json = false;
  std::string log_level = "info";
};

// Throws UsageError; nullopt after --help / --version was printed.
std::optional<ServerOptions> parse_server_options(int argc, char** argv);
void print_server_usage(std::FILE* out);
// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool is_loopback_host(const std::string& host);
// The store's default location: DATA_DIR/responses.sqlite3.
std::string default_store_path(const ServerOptions& options);

}  // namespace gptoss_server
