// The default model is generated, not downloaded: gptoss-make-model writes a tiny checkpoint
// with random weights, so `gptoss` works out of the box and its output is honest noise.
#include "model_loader.hpp"

#include "memory_check.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

extern char** environ;

namespace gptoss_cli {
namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : self.parent_path();
}

// $GPTOSS_TOKENIZER_JSON, else the installed copy (share/gptoss/ beside bin/), else the one
// of the checkout the CLI was built in.
std::string default_tokenizer_json() {
  std::string path = env("GPTOSS_TOKENIZER_JSON");
  if (!path.empty()) return path;
  const fs::path installed = executable_dir() / GPTOSS_CLI_DATA_FROM_BIN / "tokenizer.json";
  std::error_code ec;
  if (fs::exists(installed, ec)) return installed.string();
  return GPTOSS_CLI_TOKENIZER_JSON;
}

// Runs argv[0] quietly: its stdout (what it wrote) is dropped, its stderr (why it failed) is
// ours. Our stdout carries only answers.
int run_tool(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// "\r⠋ loading model ... 2.3 s" until stopped; nothing if stderr is not a terminal.
class LoadingSpinner {
 public:
  explicit LoadingSpinner(bool enabled) {
    if (enabled) thread_ = std::thread([this] { spin(); });
  }
  ~LoadingSpinner() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void spin() {
    static const char* frames[] = {"|", "/", "-", "\\"};
    auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    bool shown = false;
    for (unsigned frame = 0;; ++frame) {
      if (wake_.wait_for(lock, std::chrono::milliseconds(120), [this] { return done_; })) break;
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (s < 0.3) continue;  // fast loads show nothing
      std::fprintf(stderr, "\r%s loading model ... %.1f s", frames[frame % 4], s);
      std::fflush(stderr);
      shown = true;
    }
    if (shown) std::fputs("\r\033[K", stderr);
  }
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

std::string default_model_dir() {
  std::string home = env("GPTOSS_HOME");
  if (!home.empty()) return (fs::path(home) / "models" / "tiny").string();
  std::string user_home = env("HOME");
  if (user_home.empty()) user_home = ".";
  return (fs::path(user_home) / ".cache" / "gptoss" / "models" / "tiny").string();
}

std::string ensure_default_model(bool quiet) {
  fs::path dir = default_model_dir();
  if (fs::exists(dir / "config.json")) return dir.string();

  fs::path tool = executable_dir() / "gptoss-make-model";
  if (!fs::exists(tool)) {
    throw UsageError("no --model given and the default model generator " + tool.string() +
                     " is missing (build it, or pass --model PATH)");
  }
  fs::path tokenizer = default_tokenizer_json();
  if (!fs::exists(tokenizer)) {
    throw UsageError("no --model given and tokenizer.json not found at " + tokenizer.string() +
                     " (run scripts/setup.sh or set GPTOSS_TOKENIZER_JSON)");
  }
  if (!quiet) std::fprintf(stderr, "gptoss: generating the tiny synthetic model in %s\n", dir.c_str());
  // Written beside its final place and renamed, so an interrupted run leaves no half model.
  fs::path staging = dir.string() + ".tmp-" + std::to_string(getpid());
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  fs::remove_all(staging, ec);
  int rc = run_tool({tool.string(), "--preset", "tiny", "--out", staging.string(), "--format",
                     "hf", "--tokenizer-json", tokenizer.string()});
  if (rc != 0) {
    fs::remove_all(staging, ec);
    throw UsageError("generating the default model failed: " + tool.string() + " exited with " +
                     std::to_string(rc));
  }
  // The generator writes DIR/model-hf/; the default model is that directory.
  fs::path generated = staging / "model-hf";
  if (!fs::exists(generated / "config.json")) {
    fs::remove_all(staging, ec);
    throw UsageError(tool.string() + " wrote no " + generated.string() + "/config.json");
  }
  if (!fs::exists(generated / "tokenizer.json")) {
    fs::copy_file(tokenizer, generated / "tokenizer.json", ec);
  }
  fs::rename(generated, dir, ec);
  if (ec && !fs::exists(dir / "config.json")) {  // another process may have won the race
    fs::remove_all(staging, ec);
    throw UsageError("cannot move the generated model to " + dir.string() + ": " + ec.message());
  }
  fs::remove_all(staging, ec);
  return dir.string();
}

gptoss::model load_model(const Options& options) {
  std::string path = options.model_path;
  if (path.empty()) {
    path = ensure_default_model(options.quiet);
    if (!options.quiet) {
      std::fprintf(stderr, "gptoss: using the tiny synthetic model (random weights, output is noise): %s\n",
                   path.c_str());
    }
  } else if (!fs::exists(path)) {
    throw UsageError("model not found: " + path);
  }
  if (!options.tokenizer_path.empty() && !fs::exists(options.tokenizer_path)) {
    throw UsageError("tokenizer not found: " + options.tokenizer_path);
  }

  gptoss_model_options model_options;
  gptoss::check(gptoss_model_options_init(&model_options), "gptoss_model_options_init");
  model_options.backend = options.backend.c_str();
  model_options.num_threads = options.threads;
  model_options.precision = options.exact ? gptoss_precision_exact : gptoss_precision_fast;
  model_options.num_layers = options.layers;
  if (!options.tokenizer_path.empty()) model_options.tokenizer_path = options.tokenizer_path.c_str();

  // Measured once: after the load, the weights' own pages would count against the model.
  AvailableMemory available;
  if (options.memory_check) {
    available = available_memory();
    check_weights_fit(path, available);
  }
  gptoss_model_t model = nullptr;
  gptoss_status status;
  {
    LoadingSpinner spinner(!options.quiet && isatty(STDERR_FILENO));
    status = gptoss_model_create_with_options(path.c_str(), &model_options, &model);
  }
  gptoss::check(status, "loading the model");
  gptoss::model loaded(model);
  if (options.memory_check) check_model_fits(loaded.get(), path, options, available);
  return loaded;
}

}  // namespace gptoss_cli
