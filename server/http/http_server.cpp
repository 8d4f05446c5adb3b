#include "http/http_server.hpp"

#include <poll.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "http/connection_stream.hpp"
#include "http/poll_within.hpp"

namespace gptoss_server {

namespace {

// Requests served on one connection before it is closed: cpp-httplib's default.
constexpr size_t kRequestsPerConnection = 5;

// The connection this thread is serving, for request_head_timed_out().
thread_local const ConnectionStream* current_stream = nullptr;

}  // namespace

HttpServer::HttpServer(const Timeouts& timeouts)
    : timeouts_(timeouts), stop_fd_(::eventfd(0, EFD_CLOEXEC)) {
  if (stop_fd_ < 0)
    throw std::runtime_error("cannot create the HTTP server's stop descriptor (eventfd)");
  set_read_timeout(timeouts.read_s, 0);
  set_write_timeout(timeouts.write_s, 0);
  set_keep_alive_timeout(timeouts.keep_alive_s);
}

HttpServer::~HttpServer() { ::close(stop_fd_); }

int HttpServer::bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound < 0) return -1;
  // Listening again on a listening socket sets the length of its queue.
  if (::listen(svr_sock_, SOMAXCONN) != 0) return -1;
  return bound;
}

void HttpServer::stop_serving() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof(one));
  stop();
}

bool HttpServer::request_head_timed_out() {
  return current_stream != nullptr && current_stream->head_timed_out();
}

int HttpServer::current_socket() {
  return current_stream != nullptr ? current_stream->socket() : -1;
}

bool HttpServer::wait_for_request(int sock) const {
  pollfd fds[2] = {{sock, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  if (poll_within(fds, 2, timeouts_.keep_alive_s * 1000) <= 0 || fds[1].revents != 0) return false;
  return (fds[0].revents & POLLNVAL) == 0;
}

void HttpServer::answer_head_timeout(ConnectionStream& stream) const {
  httplib::Response res;
  if (head_timeout_answer_) {
    std::string ip;
    int port = 0;
    stream.get_remote_ip_and_port(ip, port);
    res = head_timeout_answer_(ip);
  }
  std::string head = "HTTP/1.1 408 Request Timeout\r\n";
  for (const auto& [name, value] : res.headers)
    if (::strcasecmp(name.c_str(), "Connection") != 0 &&
        ::strcasecmp(name.c_str(), "Content-Length") != 0)
      head += name + ": " + value + "\r\n";
  head += "Connection: close\r\nContent-Length: " + std::to_string(res.body.size()) + "\r\n\r\n";
  const std::string bytes = head + res.body;
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = stream.write(bytes.data() + sent, bytes.size() - sent);
    if (n <= 0) return;
    sent += size_t(n);
  }
}

bool HttpServer::process_and_close_socket(int sock) {
  ConnectionStream stream(sock, timeouts_.read_s, timeouts_.write_s, timeouts_.header_s);
  current_stream = &stream;
  bool ok = false;
  for (size_t left = kRequestsPerConnection; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    if (!stream.has_buffered_input() && !wait_for_request(sock)) break;
    bool closed = false;
    stream.begin_request();
    ok = process_request(stream, left == 1, closed, nullptr);
    // Cut off after its request line, the request was answered (the error handler's 408);
    // within it, cpp-httplib gave up without a word.
    if (stream.head_timed_out() && !stream.response_started()) answer_head_timeout(stream);
    if (!ok || closed || stream.close_announced() || stream.head_timed_out()) break;
  }
  current_stream = nullptr;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace gptoss_server
