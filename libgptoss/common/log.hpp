#pragma once
// The library's one logger. Silent by default; the host program installs a callback with
// gptoss_set_log_callback() (the only global mutable state besides the plugin registry).
#include <memory>

#include <spdlog/logger.h>
#include <spdlog/sinks/dist_sink.h>

namespace gptoss {
spdlog::logger& log();
std::shared_ptr<spdlog::sinks::dist_sink_mt> log_dispatch();
}  // namespace gptoss
