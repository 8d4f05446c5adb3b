#pragma once
// Whether the client of a request is still connected, so an abandoned generation is cancelled
// within a step even while nothing is written to it (a long prefill, a non-streaming wait).
//
// Why /proc/self/fd: the socket is found once by its addresses among the process's
// descriptors because cpp-httplib 0.11 (the distribution's, which the build uses) gives a
// handler no way to its connection: Request carries addresses only, set_socket_options sees
// the listening socket, not accepted ones, and Server::process_and_close_socket, which holds
// the accepted socket, is private. A cpp-httplib with Request::is_connection_closed replaces
// this class. Pinned by tests/server/client_connection_test.cpp (open, FIN, reset mid-request,
// reset before the lookup, unknown connection) and end to end by
// tests/server/sdk/cancel.test.mjs (a non-streaming client that disconnects, a client that
// resets right after its request: both cancel their generation).
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
