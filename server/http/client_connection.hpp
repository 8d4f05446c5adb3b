#pragma once
// Whether the client of a request is still connected, so an abandoned generation is cancelled
// within a step even while nothing is written to it (a long prefill, a non-streaming wait).
// The socket is the connection HttpServer is serving on the handler's thread
// (HttpServer::current_socket()). Pinned by tests/server/client_connection_test.cpp (open,
// FIN, reset mid-request, reset before the handler looked, no socket) and end to end by
// tests/server/sdk/cancel.test.mjs (a non-streaming client that disconnects, a client that
// resets right after its request: both cancel their generation).

namespace gptoss_server {

class ClientConnection {
 public:
  // `socket`: the accepted connection, open while the handler runs; -1 where there is none
  // (a server other than HttpServer), which reads as open.
  explicit ClientConnection(int socket) : socket_(socket) {}
  // True once the client closed (FIN) or reset the connection. Bytes waiting to be read (a
  // pipelined request) are not a close.
  bool closed() const;

 private:
  int socket_;
};

}  // namespace gptoss_server
