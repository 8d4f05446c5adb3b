#include "logging.hpp"

#include <spdlog/details/file_helper.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <memory>
#include <mutex>

#include <gptoss.h>

namespace gptoss_server {
namespace {

// {"time": "2025-06-28T10:00:00.123Z", "level": "info", "message": "..."}
class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    const std::time_t secs = std::time_t(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    const nlohmann::json line = {{"time", std::string(stamp) + "." + std::to_string(1000 + ms % 1000).substr(1) + "Z"},
                                 {"level", std::string(spdlog::level::to_string_view(msg.level).data(),
                                                       spdlog::level::to_string_view(msg.level).size())},
                                 {"message", std::string(msg.payload.data(), msg.payload.size())}};
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

// --log-file, reopened by name on SIGHUP: logrotate renames the file, then the server writes a
// new one under the old name. The new file is opened before the old one is let go, so a failed
// reopen (a directory gone) keeps logging to the old file.
class ReopenableFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ReopenableFileSink(const std::string& path) : path_(path) { file_->open(path, false); }

  bool reopen(std::string& error) {
    auto fresh = std::make_unique<spdlog::details::file_helper>();
    try {
      fresh->open(path_, false);
    } catch (const spdlog::spdlog_ex& e) {
      error = e.what();
      return false;
    }
    std::lock_guard lock(mutex_);
    file_->flush();
    file_ = std::move(fresh);
    return true;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    file_->write(formatted);
  }
  void flush_() override { file_->flush(); }

 private:
  const std::string path_;
  std::unique_ptr<spdlog::details::file_helper> file_ =
      std::make_unique<spdlog::details::file_helper>();
};

std::shared_ptr<ReopenableFileSink> log_file_sink;

void library_log(gptoss_log_level level, const char* message, void*) {
  const auto l = level >= gptoss_log_level_error     ? spdlog::level::err
                 : level >= gptoss_log_level_warning ? spdlog::level::warn
                 : level >= gptoss_log_level_info    ? spdlog::level::info
                                                     : spdlog::level::debug;
  spdlog::log(l, "libgptoss: {}", message);
}

}  // namespace

void setup_logging(const ServerOptions& options) {
  spdlog::sink_ptr sink;
  try {
    if (options.log_file.empty()) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    else sink = log_file_sink = std::make_shared<ReopenableFileSink>(options.log_file);
  } catch (const spdlog::spdlog_ex& e) {
    throw UsageError("--log-file: cannot open " + options.log_file + ": " + e.what());
  }
  auto logger = std::make_shared<spdlog::logger>("gptoss-server", sink);
  if (options.log_json) logger->set_formatter(std::make_unique<JsonFormatter>());
  else logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
  logger->set_level(spdlog::level::from_str(options.log_level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  const gptoss_log_level library_level = options.log_level == "trace" || options.log_level == "debug"
                                             ? gptoss_log_level_debug
                                             : gptoss_log_level_warning;
  gptoss_set_log_callback(library_log, library_level, nullptr);
}

void reopen_log_file() {
  if (!log_file_sink) return;
  std::string error;
  if (log_file_sink->reopen(error)) spdlog::info("log file reopened");
  else spdlog::error("cannot reopen the log file (still writing to the old one): {}", error);
}

}  // namespace gptoss_server
