// The HTTP server's connection loop (server/http/http_server.hpp): idle keep-alive connections
// cost no CPU, stopping ends them at once, the keep-alive timeout still closes them, pipelined
// requests are answered in order, a response that says "Connection: close" ends its
// connection, a request's addresses are the connection's, a burst of connections fits the
// listen queue before any is accepted, and a request's headers must arrive within the header
// timeout.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "http/elastic_task_queue.hpp"
#include "http/http_server.hpp"
#include "support/loopback.hpp"

using namespace gptoss_server;
using gptoss::test::connect_loopback;
using namespace std::chrono_literals;

namespace {

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

void send_all(int s, const std::string& data) {
  REQUIRE(::send(s, data.data(), data.size(), MSG_NOSIGNAL) == ssize_t(data.size()));
}

// How many whole final responses `data` holds (each with a Content-Length, as every answer
// here).
size_t whole_responses(const std::string& data) {
  size_t n = 0;
  size_t at = 0;
  for (;;) {
    const size_t head_end = data.find("\r\n\r\n", at);
    if (head_end == std::string::npos) return n;
    if (data.compare(at, 10, "HTTP/1.1 1") == 0) {  // an interim response: no body, not counted
      at = head_end + 4;
      continue;
    }
    const size_t length_at = data.find("Content-Length: ", at);
    if (length_at == std::string::npos || length_at > head_end) return n;
    const size_t end = head_end + 4 + std::stoul(data.substr(length_at + 16));
    if (data.size() < end) return n;
    ++n;
    at = end;
  }
}

// Reads until `count` whole responses arrived, the peer closed, or 10 s.
std::string read_responses(int s, size_t count) {
  std::string data;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (whole_responses(data) < count && std::chrono::steady_clock::now() < deadline) {
    pollfd p{s, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(s, buf, sizeof(buf), 0);
    if (n <= 0) break;
    data.append(buf, size_t(n));
  }
  return data;
}

std::string get(const std::string& path, bool keep_alive = true) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
         (keep_alive ? "" : "Connection: close\r\n") + "\r\n";
}

// `count` connections left waiting: half after one request (for the next), half before any.
std::vector<int> open_idle_connections(int port, int count) {
  std::vector<int> sockets;
  for (int i = 0; i < count; ++i) {
    sockets.push_back(connect_loopback(port));
    if (i % 2) {
      send_all(sockets.back(), get("/echo"));
      REQUIRE(read_responses(sockets.back(), 1).find("200 OK") != std::string::npos);
    }
  }
  return sockets;
}

// A server on a free loopback port answering GET /echo with the request's addresses.
struct EchoServer {
  HttpServer server;
  std::thread thread;
  int port;

  explicit EchoServer(int keep_alive_s, bool serve = true, int header_s = 10)
      : server({5, 5, keep_alive_s, header_s}) {
    server.new_task_queue = [] { return new ElasticTaskQueue(4, 1024, 10s); };
    server.Get("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.remote_addr + " " + std::to_string(req.remote_port) + " " +
                          req.local_addr + " " + std::to_string(req.local_port),
                      "text/plain");
    });
    auto close = [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Connection", "close");
      res.set_content("bye", "text/plain");
    };
    server.Get("/close", close);
    server.Post("/close", close);
    server.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body, "text/plain");
    });
    port = server.bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    if (serve) thread = std::thread([this] { server.listen_after_bind(); });
  }
  ~EchoServer() { stop(); }
  void stop() {
    server.stop_serving();
    if (thread.joinable()) thread.join();
  }
};

}  // namespace

TEST_CASE("http server: idle keep-alive connections cost no CPU", "[server][http]") {
  EchoServer echo(30);
  const std::vector<int> sockets = open_idle_connections(echo.port, 200);
  std::this_thread::sleep_for(300ms);  // every connection on its thread, waiting
  const double cpu0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1s);
  const double cores = (process_cpu_seconds() - cpu0) /
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("200 idle connections used " << cores << " of a core");
  CHECK(cores < 0.02);
  // Still served, on a connection of its own and on one that waited.
  const int fresh = connect_loopback(echo.port);
  send_all(fresh, get("/echo", false));
  CHECK(read_responses(fresh, 1).find("200 OK") != std::string::npos);
  send_all(sockets[1], get("/echo", false));
  CHECK(read_responses(sockets[1], 1).find("200 OK") != std::string::npos);
  ::close(fresh);
  for (int s : sockets) ::close(s);
}

TEST_CASE("http server: stopping ends connections waiting for a request at once",
          "[server][http]") {
  EchoServer echo(60);
  const std::vector<int> sockets = open_idle_connections(echo.port, 20);
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  echo.stop();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("stopped in " << seconds << " s with a keep-alive timeout of 60 s");
  CHECK(seconds < 2.0);
  for (int s : sockets) {
    char byte;
    CHECK(::recv(s, &byte, 1, 0) == 0);  // closed by the server
    ::close(s);
  }
}

TEST_CASE("http server: the keep-alive timeout closes an idle connection", "[server][http]") {
  EchoServer echo(1);
  const int before = connect_loopback(echo.port);
  const int after = connect_loopback(echo.port);
  send_all(after, get("/echo"));
  REQUIRE(read_responses(after, 1).find("200 OK") != std::string::npos);
  for (int s : {before, after}) {
    const auto t0 = std::chrono::steady_clock::now();
    pollfd p{s, POLLIN, 0};
    REQUIRE(::poll(&p, 1, 5000) == 1);
    char byte;
    CHECK(::recv(s, &byte, 1, 0) == 0);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(seconds < 3.0);
    ::close(s);
  }
}

TEST_CASE("http server: pipelined requests are answered in order on their connection",
          "[server][http]") {
  EchoServer echo(5);
  const int s = connect_loopback(echo.port);
  send_all(s, get("/echo") + get("/nothing-here") + get("/echo", false));
  const std::string data = read_responses(s, 3);
  const auto first = data.find("HTTP/1.1 200");
  const auto second = data.find("HTTP/1.1 404");
  const auto third = data.find("HTTP/1.1 200", first + 1);
  INFO(data);
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(third != std::string::npos);
  CHECK((first < second && second < third));
  ::close(s);
}

TEST_CASE("http server: a response that says Connection: close ends its connection",
          "[server][http]") {
  EchoServer echo(5);
  const int s = connect_loopback(echo.port);
  send_all(s, get("/close") + get("/echo"));
  const std::string data = read_responses(s, 2);  // returns at the close
  INFO(data);
  CHECK(whole_responses(data) == 1);
  CHECK(data.find("bye") != std::string::npos);
  char byte;
  CHECK(::recv(s, &byte, 1, 0) == 0);
  ::close(s);
  // After an interim "100 Continue" too.
  const int t = connect_loopback(echo.port);
  send_all(t,
           "POST /close HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: "
           "2\r\n\r\nhi" +
               get("/echo"));
  const std::string continued = read_responses(t, 2);
  INFO(continued);
  CHECK(continued.find("HTTP/1.1 100 Continue") != std::string::npos);
  CHECK(whole_responses(continued) == 1);
  CHECK(::recv(t, &byte, 1, 0) == 0);
  ::close(t);
}

TEST_CASE("http server: a request carries its connection's addresses", "[server][http]") {
  EchoServer echo(5);
  const int s = connect_loopback(echo.port);
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  REQUIRE(::getsockname(s, reinterpret_cast<sockaddr*>(&local), &len) == 0);
  send_all(s, get("/echo"));
  const std::string first = read_responses(s, 1);
  send_all(s, get("/echo", false));
  const std::string second = read_responses(s, 1);
  const std::string expected = "127.0.0.1 " + std::to_string(ntohs(local.sin_port)) +
                               " 127.0.0.1 " + std::to_string(echo.port);
  CHECK(first.substr(first.size() - expected.size()) == expected);
  CHECK(second.substr(second.size() - expected.size()) == expected);
  ::close(s);
}

TEST_CASE("http server: a burst of connections fits the listen queue before any is accepted",
          "[server][http]") {
  EchoServer echo(5, /*serve=*/false);  // bound and listening, nothing accepting
  std::vector<int> sockets;
  for (int i = 0; i < 64; ++i) sockets.push_back(connect_loopback(echo.port, /*blocking=*/false));
  // A handshake completes only where the queue has room; a SYN past it is dropped.
  int established = 0;
  const auto deadline = std::chrono::steady_clock::now() + 500ms;
  for (int s : sockets) {
    pollfd p{s, POLLOUT, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int error = 0;
    socklen_t len = sizeof(error);
    if (::poll(&p, 1, int(std::max<long long>(0, left.count()))) == 1 &&
        ::getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0)
      ++established;
  }
  CHECK(established == 64);
  for (int s : sockets) ::close(s);
}

namespace {

struct Trickled {
  bool closed = false;
  double seconds = 0;  // from the first byte to the close (or to giving up, at 5 s)
  std::string answer;
};

// Sends `start`, then a byte every 100 ms (each read well within the 5 s read timeout) until
// the server closes the connection.
Trickled trickle(int port, const std::string& start) {
  const int s = connect_loopback(port);
  const auto t0 = std::chrono::steady_clock::now();
  send_all(s, start);
  Trickled t;
  while (!t.closed && std::chrono::steady_clock::now() - t0 < 5s) {
    ::send(s, "x", 1, MSG_NOSIGNAL);
    pollfd p{s, POLLIN, 0};
    if (::poll(&p, 1, 100) != 1) continue;
    char buf[4096];
    const ssize_t n = ::recv(s, buf, sizeof(buf), 0);
    if (n <= 0) t.closed = true;
    else t.answer.append(buf, size_t(n));
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(s);
  return t;
}

}  // namespace

TEST_CASE("http server: a request's headers must arrive within the header timeout",
          "[server][http]") {
  EchoServer echo(30, /*serve=*/true, /*header_s=*/1);
  // Cut off at 1 s, in its headers (cpp-httplib answers, the 400 of a request it could not
  // read) or in its request line (the server answers 408 itself: cpp-httplib has no request).
  for (const std::string start : {"GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", "GET /ec"}) {
    const Trickled slow = trickle(echo.port, start);
    INFO(start << ": closed after " << slow.seconds << " s: " << slow.answer);
    CHECK(slow.closed);
    CHECK(slow.seconds >= 0.9);
    CHECK(slow.seconds < 2.5);
    if (start == "GET /ec") {
      CHECK(slow.answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"));
      CHECK(slow.answer.find("\r\nConnection: close\r\n") != std::string::npos);
      CHECK(slow.answer.ends_with("\r\nContent-Length: 0\r\n\r\n"));
    }
  }

  // The timeout is the head's: a body may take longer, and so may the wait between requests.
  const int body = connect_loopback(echo.port);
  send_all(body, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\n\r\nab");
  std::this_thread::sleep_for(1500ms);
  send_all(body, "cd");
  const std::string echoed = read_responses(body, 1);
  INFO(echoed);
  CHECK(echoed.find("200 OK") != std::string::npos);
  CHECK(echoed.substr(echoed.size() - 4) == "abcd");
  std::this_thread::sleep_for(1500ms);
  send_all(body, get("/echo", false));
  CHECK(read_responses(body, 1).find("200 OK") != std::string::npos);
  ::close(body);
}

TEST_CASE("http server: a request line cut off at the header timeout gets the set answer",
          "[server][http]") {
  EchoServer echo(30, /*serve=*/false, /*header_s=*/1);
  echo.server.set_head_timeout_answer([](const std::string& remote_addr) {
    httplib::Response res;
    res.status = 500;                            // the answer is a 408 whatever the status set here
    res.set_header("Connection", "keep-alive");  // and it ends the connection
    res.set_header("X-From", remote_addr);
    res.body = R"({"error":"late"})";
    return res;
  });
  echo.thread = std::thread([&] { echo.server.listen_after_bind(); });
  const Trickled slow = trickle(echo.port, "POST /echo HTT");
  INFO("closed after " << slow.seconds << " s: " << slow.answer);
  CHECK(slow.closed);
  CHECK(slow.seconds < 2.5);
  CHECK(slow.answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"));
  CHECK(slow.answer.find("\r\nX-From: 127.0.0.1\r\n") != std::string::npos);
  CHECK(slow.answer.find("keep-alive") == std::string::npos);
  CHECK(slow.answer.find("\r\nConnection: close\r\n") != std::string::npos);
  CHECK(slow.answer.ends_with("\r\nContent-Length: 16\r\n\r\n{\"error\":\"late\"}"));
  // A request in time on a new connection is served as before.
  const int s = connect_loopback(echo.port);
  send_all(s, get("/echo", false));
  CHECK(read_responses(s, 1).find("200 OK") != std::string::npos);
  ::close(s);
}
