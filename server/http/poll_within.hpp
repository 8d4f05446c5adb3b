#pragma once
// poll(2) with a time limit that signals do not extend: an interrupted wait resumes with what
// is left of it. The connection loop and the connection's stream wait through it.
#include <poll.h>

namespace gptoss_server {

// Waits up to `timeout_ms` for events on `fds`: the number of descriptors with events, 0 when
// the time ran out, -1 on an error other than EINTR.
int poll_within(pollfd* fds, nfds_t count, int timeout_ms);

}  // namespace gptoss_server
