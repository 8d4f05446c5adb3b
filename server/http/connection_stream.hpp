#pragma once
// One accepted connection as cpp-httplib's Stream, for all the requests it carries. Bytes read
// past the end of one request (a pipelining client's next one) stay buffered for the next;
// cpp-httplib 0.11's own stream is made per request and drops them. A request's line and
// headers must arrive within a deadline: cpp-httplib's read timeout bounds each read, so a
// client trickling a byte per interval (slowloris) would hold the connection's thread until
// the header size limit.
#include <httplib.h>

#include <array>
#include <chrono>
#include <string>

namespace gptoss_server {

class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(int sock, int read_timeout_s, int write_timeout_s, int header_timeout_s);

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
  // Before each request, once its first byte is here: its line and headers must end (an empty
  // line) within the header timeout; its response's head is the next write but interim (1xx)
  // ones.
  void begin_request();
  // A read of the request's line and headers would have waited past the header timeout: it
  // failed, and so do the reads after it.
  bool head_timed_out() const { return head_timed_out_; }
  // The response said "Connection: close": the server must close the connection after it
  // (RFC 9112 9.6). cpp-httplib 0.11 honours only the request's own.
  bool close_announced() const { return close_announced_; }
  // The current request's response has begun (its head, not an interim 1xx, was written).
  bool response_started() const { return !awaiting_head_; }

 private:
  // How long a read may wait: the read timeout, or what is left of the head's deadline.
  int read_wait_ms() const;
  // Follows the bytes handed to cpp-httplib to the empty line that ends the head.
  void scan_head(const char* data, size_t size);

  int sock_;
  int read_timeout_ms_;
  int write_timeout_ms_;
  std::chrono::milliseconds header_timeout_;
  std::array<char, 4096> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool reading_head_ = false;
  bool head_timed_out_ = false;
  size_t head_end_matched_ = 0;  // bytes of "\r\n\r\n" matched so far
  std::chrono::steady_clock::time_point head_deadline_;
  bool awaiting_head_ = false;
  bool close_announced_ = false;
};

}  // namespace gptoss_server
