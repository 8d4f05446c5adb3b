// Status names, last-error message, version, logging hook.
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/base_sink.h>

#include "libgptoss/api/api_util.hpp"
#include "libgptoss/common/log.hpp"

namespace gptoss::api {
namespace {
thread_local std::string g_last_error;

class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  CallbackSink(gptoss_log_callback_t cb, void* user) : cb_(cb), user_(user) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    cb_(to_level(msg.level), text.c_str(), user_);
  }
  void flush_() override {}

 private:
  static gptoss_log_level to_level(spdlog::level::level_enum l) {
    switch (l) {
      case spdlog::level::trace: return gptoss_log_level_trace;
      case spdlog::level::debug: return gptoss_log_level_debug;
      case spdlog::level::info: return gptoss_log_level_info;
      case spdlog::level::warn: return gptoss_log_level_warning;
      default: return gptoss_log_level_error;
    }
  }
  gptoss_log_callback_t cb_;
  void* user_;
};
}  // namespace

void set_last_error(std::string message) { g_last_error = std::move(message); }
void clear_last_error() { g_last_error.clear(); }

}  // namespace gptoss::api

using namespace gptoss;

extern "C" {

GPTOSS_API const char* gptoss_status_to_string(enum gptoss_status status) {
  return status_name(status);
}

GPTOSS_API const char* gptoss_get_last_error_message(void) { return api::g_last_error.c_str(); }

GPTOSS_API const char* gptoss_get_version(void) { return GPTOSS_VERSION_STRING; }

GPTOSS_API enum gptoss_status gptoss_set_log_callback(gptoss_log_callback_t callback,
                                                      enum gptoss_log_level min_level,
                                                      void* user_data) {
  return api::guard([&] {
    spdlog::level::level_enum level;
    switch (min_level) {
      case gptoss_log_level_trace: level = spdlog::level::trace; break;
      case gptoss_log_level_debug: level = spdlog::level::debug; break;
      case gptoss_log_level_info: level = spdlog::level::info; break;
      case gptoss_log_level_warning: level = spdlog::level::warn; break;
      case gptoss_log_level_error: level = spdlog::level::err; break;
      case gptoss_log_level_off: level = spdlog::level::off; break;
      default: fail(gptoss_status_invalid_argument, "unknown log level {}", int(min_level));
    }
    std::vector<spdlog::sink_ptr> sinks;
    if (callback != nullptr) sinks.push_back(std::make_shared<api::CallbackSink>(callback, user_data));
    log_dispatch()->set_sinks(std::move(sinks));
    log().set_level(callback != nullptr ? level : spdlog::level::off);
  });
}

}  // extern "C"
