// Whether a request's client is still there, on real loopback sockets: open, closed (FIN),
// reset mid-request, reset before the handler looked, and no socket.
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

int local_port_of(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  return ntohs(a.sin_port);
}

// A listening socket on 127.0.0.1, a client connected to it and the server's accepted end.
struct Connection {
  int listener = -1, client = -1, server = -1;

  Connection() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(listener, 4) == 0);
    const int server_port = local_port_of(listener);
    client = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons(uint16_t(server_port));
    REQUIRE(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    server = accept(listener, nullptr, nullptr);
    REQUIRE(server >= 0);
  }
  ~Connection() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
  ClientConnection watch() const { return ClientConnection(server); }
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
  const ClientConnection seen = c.watch();
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
  const ClientConnection seen = c.watch();
  CHECK_FALSE(seen.closed());
  c.client_closes(true);
  CHECK(seen.closed());
}

TEST_CASE("client connection: reset before the handler looked", "[server][connection]") {
  // A client that sends its request and resets at once: by the time the handler runs, its
  // socket has no peer any more.
  Connection c;
  REQUIRE(send(c.client, "GET / HTTP/1.1\r\n\r\n", 18, 0) == 18);
  c.client_closes(true);
  CHECK(c.watch().closed());
}

TEST_CASE("client connection: a FIN after the request, its bytes unread, is a close",
          "[server][connection]") {
  Connection c;
  REQUIRE(send(c.client, "GET / HTTP/1.1\r\n\r\n", 18, 0) == 18);
  c.client_closes(false);
  CHECK(c.watch().closed());
}

TEST_CASE("client connection: no socket reads as open", "[server][connection]") {
  CHECK_FALSE(ClientConnection(-1).closed());
}
