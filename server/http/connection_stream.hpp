#pragma once
// One accepted connection as cpp-httplib's Stream, for all the requests it carries. Bytes read
// past the end of one request (a pipelining client's next one) stay buffered for the next;
// cpp-httplib 0.11's own stream is made per request and drops them.
#include <httplib.h>

#include <array>
#include <string>

namespace gptoss_server {

class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(int sock, int read_timeout_s, int write_timeout_s);

  // Buffered bytes, or the socket readable within the read timeout.
  bool is_readable() const override;
  // The socket writable within the write timeout, and the client not gone (closed or reset).
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return sock_; }

  bool has_buffered_input() const { return begin_ < end_; }
  // Before each request: its response's head is the next write but interim (1xx) ones.
  void begin_request() { awaiting_head_ = true; }
  // The response said "Connection: close": the server must close the connection after it
  // (RFC 9112 9.6). cpp-httplib 0.11 honours only the request's own.
  bool close_announced() const { return close_announced_; }

 private:
  int sock_;
  int read_timeout_ms_;
  int write_timeout_ms_;
  std::array<char, 4096> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool awaiting_head_ = false;
  bool close_announced_ = false;
};

}  // namespace gptoss_server
