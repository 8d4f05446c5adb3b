// Whether a request's client is still there, on real loopback sockets: open, closed (FIN),
// reset mid-request, and reset before the handler looked the connection up.
#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "http/client_connection.hpp"

using namespace gptoss_server;

namespace {

int port_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  REQUIRE((peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)) == 0);
  return ntohs(a.sin_port);
}

// A listening socket on 127.0.0.1, a client connected to it and the server's accepted end.
struct Connection {
  int listener = -1, client = -1, server = -1;
  int server_port = 0, client_port = 0;

  Connection() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(listener, 4) == 0);
    server_port = port_of(listener, false);
    client = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons(uint16_t(server_port));
    REQUIRE(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    client_port = port_of(client, false);
    server = accept(listener, nullptr, nullptr);
    REQUIRE(server >= 0);
  }
  ~Connection() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
  ClientConnection lookup() const { return ClientConnection("127.0.0.1", client_port, server_port); }
  void client_closes(bool reset) {
    if (reset) {
      const linger l{1, 0};  // close() sends RST
      REQUIRE(setsockopt(client, SOL_SOCKET, SO_LINGER, &l, sizeof l) == 0);
    }
    close(client);
    client = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
};

}  // namespace

TEST_CASE("client connection: open until the client closes it", "[server][connection]") {
  Connection c;
  const ClientConnection seen = c.lookup();
  CHECK_FALSE(seen.closed());
  // Bytes the handler has not read (a pipelined request) are not a close.
  REQUIRE(send(c.client, "x", 1, 0) == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(seen.closed());
  c.client_closes(false);
  CHECK(seen.closed());
}

TEST_CASE("client connection: a reset during the request is a close", "[server][connection]") {
  Connection c;
  const ClientConnection seen = c.lookup();
  CHECK_FALSE(seen.closed());
  c.client_closes(true);
  CHECK(seen.closed());
}

TEST_CASE("client connection: reset before the handler looked it up", "[server][connection]") {
  // A client that sends its request and resets at once: by the time the handler runs, its
  // socket has no peer any more and matches no address.
  Connection c;
  c.client_closes(true);
  CHECK(c.lookup().closed());
}

TEST_CASE("client connection: an unknown connection reads as open", "[server][connection]") {
  // Nothing on this port lost its peer (the listening socket has none either, and is no sign).
  Connection c;
  CHECK_FALSE(ClientConnection("127.0.0.1", c.client_port + 1, c.server_port).closed());
  CHECK_FALSE(ClientConnection("127.0.0.1", c.client_port, c.server_port + 1).closed());
}
