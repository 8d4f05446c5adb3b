#include "logging.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <ctime>

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
    else sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.log_file, false);
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

}  // namespace gptoss_server
