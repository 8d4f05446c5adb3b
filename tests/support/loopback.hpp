#pragma once
// A TCP connection to a server the test runs on 127.0.0.1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdint>

namespace gptoss::test {

// Connected (blocking), or connecting (non-blocking: the handshake may still be under way).
inline int connect_loopback(int port, bool blocking = true) {
  const int s = ::socket(AF_INET, SOCK_STREAM | (blocking ? 0 : SOCK_NONBLOCK), 0);
  REQUIRE(s >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  REQUIRE((rc == 0 || (!blocking && errno == EINPROGRESS)));
  return s;
}

}  // namespace gptoss::test
