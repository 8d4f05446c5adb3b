#include "http/client_connection.hpp"

#include <poll.h>
#include <sys/socket.h>

namespace gptoss_server {

bool ClientConnection::closed() const {
  if (socket_ < 0) return false;
  pollfd p{socket_, short(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  char byte;
  return recv(socket_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // orderly shutdown
}

}  // namespace gptoss_server
