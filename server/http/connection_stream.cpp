#include "http/connection_stream.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "http/poll_within.hpp"

namespace gptoss_server {

namespace {

// What a client's address reads as in Request::remote_addr: numeric, as cpp-httplib writes it.
void numeric_address(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST];
  char service[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof(host), service,
                  sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return;
  ip = host;
  port = std::atoi(service);
}

// Until `sock` has one of `events`, up to `timeout_ms`.
bool wait_for_socket(int sock, short events, int timeout_ms) {
  pollfd p{sock, events, 0};
  return poll_within(&p, 1, timeout_ms) > 0 && (p.revents & POLLNVAL) == 0;
}

// Whether `head`, a response's status line and headers (cpp-httplib writes them in one
// piece, before the body), has the header "Connection: close".
bool announces_close(std::string_view head) {
  std::string lower(head.substr(0, head.find("\r\n\r\n")));
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  return (lower + "\r\n").find("\r\nconnection: close\r\n") != std::string::npos;
}

}  // namespace

ConnectionStream::ConnectionStream(int sock, int read_timeout_s, int write_timeout_s,
                                   int header_timeout_s)
    : sock_(sock), read_timeout_ms_(read_timeout_s * 1000),
      write_timeout_ms_(write_timeout_s * 1000), header_timeout_(header_timeout_s * 1000) {}

void ConnectionStream::begin_request() {
  awaiting_head_ = true;
  reading_head_ = true;
  head_timed_out_ = false;
  head_end_matched_ = 0;
  head_deadline_ = std::chrono::steady_clock::now() + header_timeout_;
}

int ConnectionStream::read_wait_ms() const {
  if (!reading_head_) return read_timeout_ms_;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(head_deadline_ -
                                                                 std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<long long>(left.count(), 0, read_timeout_ms_));
}

void ConnectionStream::scan_head(const char* data, size_t size) {
  static constexpr std::string_view kHeadEnd = "\r\n\r\n";
  for (size_t i = 0; i < size && reading_head_; ++i) {
    if (data[i] == kHeadEnd[head_end_matched_]) ++head_end_matched_;
    else head_end_matched_ = data[i] == '\r' ? 1 : 0;
    if (head_end_matched_ == kHeadEnd.size()) reading_head_ = false;
  }
}

bool ConnectionStream::is_readable() const {
  if (has_buffered_input()) return true;
  const int wait_ms = read_wait_ms();
  return wait_ms > 0 && wait_for_socket(sock_, POLLIN, wait_ms);
}

bool ConnectionStream::is_writable() const {
  if (!wait_for_socket(sock_, POLLOUT, write_timeout_ms_)) return false;
  if (!wait_for_socket(sock_, POLLIN, 0)) return true;  // nothing to read: the client is there
  char byte;
  ssize_t n;
  do n = ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  return n > 0 || (n < 0 && errno == EAGAIN);  // 0: closed; an error: reset
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (head_timed_out_) return -1;
  if (!has_buffered_input()) {
    const int wait_ms = read_wait_ms();
    if (wait_ms <= 0 || !wait_for_socket(sock_, POLLIN, wait_ms)) {
      // What ended the wait: the head's deadline where it came before the read timeout. (Not
      // the clock read afterwards: poll's millisecond timeout may end just short of it.)
      head_timed_out_ = reading_head_ && wait_ms < read_timeout_ms_;
      return -1;
    }
    ssize_t n;
    if (size >= buffer_.size()) {
      do n = ::recv(sock_, ptr, size, 0);
      while (n < 0 && errno == EINTR);
      if (n > 0) scan_head(ptr, static_cast<size_t>(n));
      return n;
    }
    do n = ::recv(sock_, buffer_.data(), buffer_.size(), 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return n;
    begin_ = 0;
    end_ = static_cast<size_t>(n);
  }
  const size_t n = std::min(size, end_ - begin_);
  std::memcpy(ptr, buffer_.data() + begin_, n);
  begin_ += n;
  scan_head(ptr, n);
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  // An interim response ("HTTP/1.1 100 Continue", before a body is read) is not the head.
  const std::string_view data(ptr, size);
  if (awaiting_head_ && !(data.size() > 9 && data.starts_with("HTTP/") && data[9] == '1')) {
    awaiting_head_ = false;
    close_announced_ = announces_close(data);
  }
  ssize_t n;
  do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    numeric_address(addr, len, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    numeric_address(addr, len, ip, port);
}

}  // namespace gptoss_server
