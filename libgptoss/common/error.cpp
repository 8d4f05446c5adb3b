#include "libgptoss/common/error.hpp"

namespace gptoss {

const char* status_name(gptoss_status status) {
  switch (status) {
    case gptoss_status_success: return "success";
    case gptoss_status_invalid_argument: return "invalid_argument";
    case gptoss_status_unsupported_argument: return "unsupported_argument";
    case gptoss_status_invalid_state: return "invalid_state";
    case gptoss_status_io: return "io";
    case gptoss_status_insufficient_memory: return "insufficient_memory";
    case gptoss_status_insufficient_resources: return "insufficient_resources";
    case gptoss_status_unsupported_system: return "unsupported_system";
    case gptoss_status_context_overflow: return "context_overflow";
    case gptoss_status_buffer_too_small: return "buffer_too_small";
    case gptoss_status_internal: return "internal";
  }
  return "unknown_status";
}

}  // namespace gptoss
