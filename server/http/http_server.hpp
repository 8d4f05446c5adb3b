#pragma once
// cpp-httplib's server with its own loop over a connection's requests. cpp-httplib 0.11
// waits for a keep-alive connection's next request by polling every 10 ms and sleeping 1 ms
// between polls, on the connection's thread: 1,000 idle connections kept both cores of a
// 2-core machine busy with nothing (perf: 60 % in the scheduler, the rest poll and nanosleep)
// and slowed every generation. Here a connection waits in one poll(2) on its socket and on a
// descriptor stop_serving() signals, so an idle connection costs no CPU. It also listens with
// the system's longest queue of connections not yet accepted; cpp-httplib's is 5, and a burst
// of clients connecting at once overflows it into SYNs that the clients retry a second later.
// A request's line and headers must arrive within the header timeout (ConnectionStream).
#include <httplib.h>

#include <functional>
#include <string>

namespace gptoss_server {

class ConnectionStream;

class HttpServer : public httplib::Server {
 public:
  struct Timeouts {
    int read_s;
    int write_s;
    int keep_alive_s;
    int header_s;  // from a request's first byte to the end of its headers
  };

  explicit HttpServer(const Timeouts& timeouts);
  ~HttpServer() override;
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens on `host`:`port` (0: a free port); the port, or -1 where it cannot.
  int bind(const std::string& host, int port);
  // Stops accepting and ends the connections waiting for their next request; what is being
  // answered finishes (the caller drains generations first).
  void stop_serving();
  // Whether the request this thread is answering was cut off at the header timeout (cpp-httplib
  // then answers 400, before routing: the error handler makes it a 408).
  static bool request_head_timed_out();
  // The socket of the connection this thread is serving; -1 outside a connection.
  static int current_socket();
  // What a client gets whose request line did not arrive within the header timeout: cpp-httplib
  // has no request to answer then, so neither its error handler nor its logger runs. Called with
  // the client's address on the connection's thread; a 408 with the response's headers and
  // body is written, with "Connection: close", and the connection ends. Unset: a bare 408.
  using HeadTimeoutAnswer = std::function<httplib::Response(const std::string& remote_addr)>;
  void set_head_timeout_answer(HeadTimeoutAnswer answer) {
    head_timeout_answer_ = std::move(answer);
  }

 private:
  // cpp-httplib calls this on a connection thread for each accepted socket.
  bool process_and_close_socket(int sock) override;
  // True once the client sent something (or closed: the read then ends the connection);
  // false after the keep-alive timeout or once stop_serving() was called.
  bool wait_for_request(int sock) const;

  // Writes the answer to a request line cut off at the header timeout.
  void answer_head_timeout(ConnectionStream& stream) const;

  Timeouts timeouts_;
  HeadTimeoutAnswer head_timeout_answer_;
  int stop_fd_;  // an eventfd, readable once stop_serving() was called
};

}  // namespace gptoss_server
