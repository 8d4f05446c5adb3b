#include "libgptoss/common/log.hpp"

#include <spdlog/sinks/dist_sink.h>

namespace gptoss {

std::shared_ptr<spdlog::sinks::dist_sink_mt> log_dispatch() {
  // The logger's one sink; its sink list (empty = silent) is replaced under its own lock
  // by gptoss_set_log_callback, so installing a callback is safe while other threads log.
  static auto dispatch = std::make_shared<spdlog::sinks::dist_sink_mt>();
  return dispatch;
}

spdlog::logger& log() {
  static spdlog::logger logger = [] {
    spdlog::logger l("gptoss", log_dispatch());
    l.set_level(spdlog::level::off);
    return l;
  }();
  return logger;
}

}  // namespace gptoss
