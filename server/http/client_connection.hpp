#pragma once
// Whether the client of a request is still connected, so an abandoned generation is cancelled
// within a step even while nothing is written to it (a long prefill, a non-streaming wait).
// cpp-httplib 0.11 does not hand handlers their socket, so the socket is found once by its
// addresses among the process's descriptors (Linux /proc/self/fd).
#include <string>

namespace gptoss_server {

class ClientConnection {
 public:
  ClientConnection(const std::string& remote_addr, int remote_port, int local_port);
  // True once the client closed or reset the connection. Unknown sockets read as open, unless
  // a socket on this port had lost its peer when the connection was looked up.
  bool closed() const;

 private:
  bool matches(int fd) const;
  // A TCP socket on this server's port whose peer is gone (reset).
  bool reset_on_local_port(int fd) const;

  std::string remote_addr_;
  int remote_port_;
  int local_port_;
  int fd_ = -1;
  bool gone_ = false;  // reset before the handler looked
};

}  // namespace gptoss_server
