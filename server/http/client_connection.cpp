#include "http/client_connection.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>

namespace gptoss_server {
namespace {

// Numeric address and port of a socket address; IPv4-mapped IPv6 addresses as IPv4.
bool address_of(const sockaddr_storage& ss, std::string& addr, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
    port = ntohs(a.sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf);
    port = ntohs(a.sin6_port);
  } else {
    return false;
  }
  addr = buf;
  if (addr.rfind("::ffff:", 0) == 0 && addr.find('.') != std::string::npos) addr = addr.substr(7);
  return true;
}

std::string normalized(std::string addr) {
  if (addr.rfind("::ffff:", 0) == 0 && addr.find('.') != std::string::npos) addr = addr.substr(7);
  return addr;
}

}  // namespace

ClientConnection::ClientConnection(const std::string& remote_addr, int remote_port, int local_port)
    : remote_addr_(normalized(remote_addr)), remote_port_(remote_port), local_port_(local_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  bool reset_seen = false;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    if (matches(int(fd))) {
      fd_ = int(fd);
      break;
    }
    reset_seen = reset_seen || reset_on_local_port(int(fd));
  }
  closedir(dir);
  // The handler's socket is open while it runs, so when none matches it is one that lost its
  // peer already: a client that sent its request and reset the connection at once.
  gone_ = fd_ < 0 && reset_seen;
}

bool ClientConnection::reset_on_local_port(int fd) const {
  sockaddr_storage peer{}, local{};
  socklen_t peer_len = sizeof peer, local_len = sizeof local;
  int listening = 0;
  socklen_t flag_len = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &flag_len) != 0 || listening) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  std::string local_addr;
  int local_port = 0;
  if (!address_of(local, local_addr, local_port) || local_port != local_port_) return false;
  return getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 && errno == ENOTCONN;
}

bool ClientConnection::matches(int fd) const {
  sockaddr_storage peer{}, local{};
  socklen_t peer_len = sizeof peer, local_len = sizeof local;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  std::string peer_addr, local_addr;
  int peer_port = 0, local_port = 0;
  if (!address_of(peer, peer_addr, peer_port) || !address_of(local, local_addr, local_port)) return false;
  return peer_port == remote_port_ && local_port == local_port_ && peer_addr == remote_addr_;
}

bool ClientConnection::closed() const {
  if (gone_) return true;
  if (fd_ < 0) return false;
  // The descriptor now belongs to another connection: this one is gone.
  if (!matches(fd_)) return true;
  pollfd p{fd_, short(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  char byte;
  return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // orderly shutdown
}

}  // namespace gptoss_server
