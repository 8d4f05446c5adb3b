#include "http/poll_within.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace gptoss_server {

int poll_within(pollfd* fds, nfds_t count, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    const int n = ::poll(fds, count, static_cast<int>(std::max<long long>(0, left)));
    if (n >= 0 || errno != EINTR) return n;
  }
}

}  // namespace gptoss_server
