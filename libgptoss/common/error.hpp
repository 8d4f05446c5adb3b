#pragma once
// One exception type for the whole core. The C ABI layer (libgptoss/api) turns it into a
// gptoss_status and the thread-local last-error message; nothing else catches it.
#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "gptoss.h"

namespace gptoss {

// "success", "invalid_argument", ... (what gptoss_status_to_string returns).
const char* status_name(gptoss_status status);

class Error : public std::runtime_error {
 public:
  Error(gptoss_status status, std::string message)
      : std::runtime_error(std::move(message)), status_(status) {}
  gptoss_status status() const noexcept { return status_; }

 private:
  gptoss_status status_;
};

template <typename... Args>
[[noreturn]] void fail(gptoss_status status, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(status, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace gptoss
