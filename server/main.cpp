// gptoss-server: binds first (so /health answers 503 while the model loads), loads the model,
// serves until SIGTERM or SIGINT, then drains: running requests finish, new ones get 503, and
// it exits 0. A second signal (or --drain-timeout) cancels what is left. SIGHUP reopens
// --log-file (logrotate).
#include <fmt/format.h>
#include <httplib.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <thread>

#include "http/app.hpp"
#include "http/elastic_task_queue.hpp"
#include "http/http_server.hpp"
#include "logging.hpp"
#include "server_options.hpp"

using namespace gptoss_server;

namespace {

// SIGINT and SIGTERM (counted) and SIGHUP (reopens the log file), received by one thread
// (blocked everywhere else, so no handler runs inside a request thread).
class Signals {
 public:
  Signals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGHUP);
    sigaddset(&set_, SIGUSR1);  // stops the watcher
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    watcher_ = std::thread([this] {
      for (;;) {
        int sig = 0;
        if (sigwait(&set_, &sig) != 0 || sig == SIGUSR1) return;
        if (sig == SIGHUP) {
          reopen_log_file();
          continue;
        }
        {
          std::lock_guard lock(mutex_);
          ++count_;
        }
        changed_.notify_all();
      }
    });
  }
  ~Signals() {
    pthread_kill(watcher_.native_handle(), SIGUSR1);
    watcher_.join();
  }
  // Waits until `n` signals arrived or `until` holds (checked every `poll`).
  template <typename Pred>
  int wait(int n, std::chrono::milliseconds poll, Pred until) {
    std::unique_lock lock(mutex_);
    while (count_ < n && !until()) changed_.wait_for(lock, poll);
    return count_;
  }
  int count() {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  sigset_t set_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
  std::thread watcher_;
};

// Why the KV cache could not be created, with the numbers: what it needs and from which
// options, and the address-space limit (ulimit -v) when there is one.
std::string kv_cache_refusal(gptoss_model_t model, const ServerOptions& o,
                             const std::string& error) {
  size_t per_token = 0;
  if (gptoss_model_get_kv_bytes_per_token(model, o.engine.kv_dtype, &per_token) !=
      gptoss_status_success)
    return "cannot create the KV cache: " + error;
  std::string message = fmt::format(
      "cannot create the KV cache of {} tokens x {} bytes = {} MiB (--kv-tokens{}; --context {}, "
      "--max-running {})",
      o.engine.kv_tokens, per_token, (o.engine.kv_tokens * per_token) >> 20,
      o.kv_tokens_given ? "" : ": by default the larger of 4 x --context and --max-running x 16",
      o.engine.context_length, o.engine.max_running);
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    message +=
        fmt::format(" under an address-space limit (ulimit -v) of {} MiB", limit.rlim_cur >> 20);
  return message + ": " + error + ". Lower --kv-tokens or --max-running, or use --kv-dtype bf16.";
}

std::unique_ptr<Engine> load_engine(const ServerOptions& o, Metrics& metrics) {
  gptoss_model_options mo;
  gptoss::check(gptoss_model_options_init(&mo), "gptoss_model_options_init");
  mo.backend = o.backend.c_str();
  mo.num_threads = o.threads;
  mo.precision = o.exact ? gptoss_precision_exact : gptoss_precision_fast;
  if (!o.tokenizer_path.empty()) mo.tokenizer_path = o.tokenizer_path.c_str();
  auto engine = std::make_unique<Engine>();
  engine->model = gptoss::model::load(o.model_path, &mo, "loading the model");
  const gptoss_model_t model = engine->model.get();
  const gptoss_model_info info = engine->model.info();
  if (o.engine.context_length > info.max_context_length)
    throw UsageError("--context " + std::to_string(o.engine.context_length) + " exceeds the model's maximum of " +
                     std::to_string(info.max_context_length) + " tokens");
  engine->backend = info.backend;
  engine->vocab_size = info.vocab_size;
  engine->batch_invariant = info.batch_invariant != 0;
  engine->kernels = info.kernels != nullptr ? info.kernels : "";
  engine->tokenizer = engine->model.get_tokenizer();
  engine->grammars = std::make_unique<GrammarCache>(engine->tokenizer.get(), 64);
  SchedulerConfig config = o.engine;
  if (!o.draft_model_path.empty()) {
    engine->draft_model = gptoss::model::load(o.draft_model_path, &mo, "loading the draft model");
    const gptoss_model_info draft = engine->draft_model.info();
    if (draft.vocab_size != info.vocab_size)
      throw UsageError("--draft-model " + o.draft_model_path + " has a vocabulary of " +
                       std::to_string(draft.vocab_size) + " tokens; the model's has " +
                       std::to_string(info.vocab_size) +
                       ": a draft model must share the tokenizer");
    config.speculation.draft_model = engine->draft_model.get();
  }
  try {
    engine->scheduler = std::make_unique<Scheduler>(model, config, metrics);
  } catch (const gptoss::error& e) {
    if (e.status() != gptoss_status_insufficient_memory) throw;
    throw std::runtime_error(kv_cache_refusal(model, o, e.what()));
  }
  return engine;
}

// Connections served at once (a thread and a descriptor each) before more wait for a thread.
constexpr size_t kMaxHttpThreads = 4096;

// Each connection is a descriptor: the soft limit (often 1,024) raised to the hard one, so that
// accept does not fail first.
void raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
    spdlog::warn("cannot raise the open-file limit to {}", limit.rlim_max);
}

int serve(const ServerOptions& o) {
  setup_logging(o);
  std::signal(SIGPIPE, SIG_IGN);
  raise_descriptor_limit();
  Signals signals;

  const std::string store_spec = o.store.empty() ? default_store_path(o) : o.store;
  std::unique_ptr<ResponseStore> store;
  try {
    store = open_response_store(store_spec);
  } catch (const StoreError& e) {
    spdlog::error("{}", e.what());
    std::fprintf(stderr, "gptoss-server: %s\n", e.what());
    return 1;
  }
  spdlog::info("response store: {} (schema version {})", store->describe(), store->schema_version());

  App app(o, std::move(store));
  HttpServer server(
      {o.read_timeout_s, o.write_timeout_s, o.keep_alive_timeout_s, o.header_timeout_s});
  // --http-threads kept, more started while connections wait (idle keep-alive connections
  // hold a thread each; http/elastic_task_queue.hpp).
  server.new_task_queue = [n = o.http_threads] {
    return new ElasticTaskQueue(n, std::max<size_t>(n, kMaxHttpThreads), std::chrono::seconds(10));
  };
  server.set_payload_max_length(o.max_body_bytes);
  app.register_routes(server);
  const int port = server.bind(o.host, o.port);
  if (port < 0) {
    std::fprintf(stderr, "gptoss-server: cannot listen on %s:%d (address in use, or not an address of this machine)\n",
                 o.host.c_str(), o.port);
    return 1;
  }
  std::thread http([&] { server.listen_after_bind(); });
  const std::string url = "http://" + (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host) + ":" +
                          std::to_string(port);
  std::fprintf(stderr, "gptoss-server: listening on %s (model '%s' loading)\n", url.c_str(), o.model_name.c_str());
  spdlog::info("listening on {}; loading {}", url, o.model_path);

  int status = 0;
  try {
    const auto start = std::chrono::steady_clock::now();
    app.set_engine(load_engine(o, app.metrics()));
    spdlog::info("model '{}' ready in {:.1f} s ({} running, {} queued, context {}, KV {} tokens)", o.model_name,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), o.engine.max_running,
                 o.engine.max_queue, o.engine.context_length, o.engine.kv_tokens);
    const auto& spec = o.engine.speculation;
    spdlog::info("speculative decoding: {}",
                 !spec.on
                     ? std::string("off (--draft none)")
                     : fmt::format("jump-forward and {}, up to {} drafted tokens a step",
                                   o.draft_model_path.empty() ? "prompt lookup"
                                                              : "draft model " + o.draft_model_path,
                                   spec.draft_max));
    std::fprintf(stderr, "gptoss-server: ready on %s\n", url.c_str());
  } catch (const std::exception& e) {
    spdlog::error("cannot start: {}", e.what());
    std::fprintf(stderr, "gptoss-server: %s\n", e.what());
    status = 1;
  }

  if (status == 0) {
    signals.wait(1, std::chrono::milliseconds(1000), [] { return false; });
    spdlog::info("shutting down: draining (a second signal cancels what is running)");
    app.begin_drain();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.drain_timeout_s);
    signals.wait(2, std::chrono::milliseconds(50),
                 [&] { return app.drained() || std::chrono::steady_clock::now() >= deadline; });
    if (!app.drained()) {
      spdlog::warn("cancelling the requests still running");
      app.cancel_all();
      signals.wait(1 << 30, std::chrono::milliseconds(50), [&] { return app.drained(); });
    }
  }
  server.stop_serving();
  http.join();
  spdlog::info("stopped");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto options = parse_server_options(argc, argv);
    if (!options) return 0;
    return serve(*options);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gptoss-server: %s\n", e.what());
    return 2;
  }
}
