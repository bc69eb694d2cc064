// The controller's HttpServer over loopback sockets: what a handler's reply becomes on the wire,
// and what idle, slow and numerous clients can (not) do to it. Hostile clients connect from other
// loopback addresses (127.0.0.2 and up: Linux routes all of 127/8 to lo), so the per-address cap
// tells them from the well-behaved client on 127.0.0.1.
#include "depl/controller/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace depl::controller {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A TCP connection to 127.0.0.1:port from `local` (another loopback address for a stranger).
int connect_from(const std::string& local, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, local.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until the peer closes or `timeout` passes; what was read.
std::string read_all(int fd, std::chrono::milliseconds timeout) {
  std::string out;
  const auto until = Clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left <= 0ms) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

// Whether the server has closed `fd` (EOF or reset) within `timeout`.
bool closed_within(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

std::string get_from(const std::string& local, int port, const std::string& target) {
  const int fd = connect_from(local, port);
  if (fd < 0) return "connect failed";
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string response;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    response = read_all(fd, 10s);
  }
  ::close(fd);
  return response;
}

std::string get(int port, const std::string& target) {
  return get_from("127.0.0.1", port, target);
}

std::string fmt_address(int last) {
  return "127.0.0." + std::to_string(last);
}

HttpHandler ok_handler() {
  return [](const HttpRequestView&) -> HttpReply { return {200, "text/plain", "ok\n", {}}; };
}

struct Sockets {
  std::vector<int> fds;
  ~Sockets() {
    for (int fd : fds) ::close(fd);
  }
};

TEST(HttpServer, WritesTheReplysExtraHeaders) {
  auto server = HttpServer::start({}, [](const HttpRequestView& r) -> HttpReply {
    if (r.target == "/limited") {
      return {429, "application/json", R"({"error":"slow down"})", {{"Retry-After", "7"}}};
    }
    return {200, "text/plain", "ok\n", {}};
  });
  ASSERT_TRUE(server) << server.error().message;

  const std::string limited = get((*server)->port(), "/limited");
  EXPECT_EQ(limited.rfind("HTTP/1.1 429 ", 0), 0u) << limited;
  EXPECT_NE(limited.find("\r\nRetry-After: 7\r\n"), std::string::npos) << limited;
  EXPECT_NE(limited.find("\r\nContent-Type: application/json\r\n"), std::string::npos) << limited;
  EXPECT_EQ(limited.substr(limited.find("\r\n\r\n") + 4), R"({"error":"slow down"})");

  // A reply without extra headers is written as before.
  const std::string plain = get((*server)->port(), "/healthz");
  EXPECT_EQ(plain.rfind("HTTP/1.1 200 ", 0), 0u) << plain;
  EXPECT_EQ(plain.find("Retry-After"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\r\nContent-Type: text/plain\r\n"), std::string::npos) << plain;
  EXPECT_EQ(plain.substr(plain.find("\r\n\r\n") + 4), "ok\n");
}

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  auto server = HttpServer::start({}, ok_handler());
  ASSERT_TRUE(server) << server.error().message;
  const int fd = connect_from("127.0.0.1", (*server)->port());
  ASSERT_GE(fd, 0);
  const std::string request = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    std::string answer;
    while (answer.find("ok\n") == std::string::npos) {
      char buffer[512];
      pollfd p{fd, POLLIN, 0};
      ASSERT_GT(::poll(&p, 1, 10000), 0) << "no answer to request " << i;
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      ASSERT_GT(n, 0) << "closed before answering request " << i;
      answer.append(buffer, static_cast<std::size_t>(n));
    }
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0u) << answer;
  }
  ::close(fd);
}

// Past an address's share a connection is answered 503 at once, with a Retry-After for the client
// (the reference worker waits it out); other addresses are still served.
TEST(HttpServer, AnAddressOverItsShareIsToldWhenToComeBack) {
  HttpServerOptions options;
  options.max_connections_per_peer = 1;
  auto server = HttpServer::start(options, ok_handler());
  ASSERT_TRUE(server) << server.error().message;
  Sockets idle;
  idle.fds.push_back(connect_from("127.0.0.2", (*server)->port()));
  ASSERT_GE(idle.fds.back(), 0);

  const std::string refused = get_from("127.0.0.2", (*server)->port(), "/healthz");
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 ", 0), 0u) << refused;
  EXPECT_NE(refused.find("\r\nRetry-After: 1\r\n"), std::string::npos) << refused;
  EXPECT_NE(refused.find("too many connections from this address"), std::string::npos) << refused;

  const std::string served = get((*server)->port(), "/healthz");
  EXPECT_EQ(served.rfind("HTTP/1.1 200 ", 0), 0u) << served;
  EXPECT_EQ((*server)->counts().refused_per_peer, 1u);
}

// An idle connection is closed at the request deadline. The old server set SO_RCVTIMEO, which
// Asio's blocking read ignores, and kept it open for ever.
TEST(HttpServer, IdleConnectionsAreClosedAtTheDeadline) {
  HttpServerOptions options;
  options.request_timeout = 300ms;
  auto server = HttpServer::start(options, ok_handler());
  ASSERT_TRUE(server) << server.error().message;
  const int fd = connect_from("127.0.0.1", (*server)->port());
  ASSERT_GE(fd, 0);
  const auto opened = Clock::now();
  EXPECT_TRUE(closed_within(fd, 10s)) << "an idle connection stayed open";
  EXPECT_GE(Clock::now() - opened, 250ms);
  ::close(fd);
  // The server counts it once its I/O thread has seen the deadline (maybe just after the close).
  const auto until = Clock::now() + 10s;
  while ((*server)->counts().timed_out == 0 && Clock::now() < until) std::this_thread::yield();
  EXPECT_EQ((*server)->counts().timed_out, 1u);
}

// A client that sends one byte at a time never finishes its request: the deadline covers the
// whole request (headers and body), not each read.
TEST(HttpServer, SlowClientsAreClosedAtTheRequestDeadline) {
  HttpServerOptions options;
  options.request_timeout = 500ms;
  auto server = HttpServer::start(options, ok_handler());
  ASSERT_TRUE(server) << server.error().message;
  for (const std::string body : {"", "0123456789"}) {
    const int fd = connect_from("127.0.0.1", (*server)->port());
    ASSERT_GE(fd, 0);
    // Headers dribbled out when `body` is empty; else whole headers and a dribbled body.
    std::string head = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
    std::string dribble = head;
    if (!body.empty()) {
      ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(head.size()));
      dribble = std::string(1000, 'b');
    }
    const auto started = Clock::now();
    bool closed = false;
    for (std::size_t i = 0; i < dribble.size() && Clock::now() - started < 10s; ++i) {
      if (::send(fd, &dribble[i], 1, MSG_NOSIGNAL) != 1 || closed_within(fd, 100ms)) {
        closed = true;
        break;
      }
    }
    EXPECT_TRUE(closed) << "a slow client kept its connection for 10 s"
                        << (body.empty() ? " (headers)" : " (body)");
    EXPECT_LT(Clock::now() - started, 5s);
    ::close(fd);
  }
}

// Many idle connections from other addresses, more than the server holds in all, do not lock a
// client out: each address gets its share, and past the global cap the connection that has waited
// longest makes room. Before, 64 idle connections took a server down.
TEST(HttpServer, IdleSocketsBeyondTheCapsDoNotLockOthersOut) {
  HttpServerOptions options;
  options.max_connections = 40;
  options.max_connections_per_peer = 8;
  auto server = HttpServer::start(options, ok_handler());
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  Sockets idle;
  // 25 addresses x 8 connections: 200 connections, five times the server's cap.
  for (int a = 2; a < 27; ++a) {
    for (int i = 0; i < 12; ++i) {
      const int fd = connect_from(fmt_address(a), port);
      if (fd >= 0) idle.fds.push_back(fd);
    }
  }
  ASSERT_GE(idle.fds.size(), 200u);
  for (int i = 0; i < 5; ++i) {
    const auto asked = Clock::now();
    const std::string answer = get(port, "/healthz");
    EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0u) << answer;
    EXPECT_LT(Clock::now() - asked, 1s);
  }
  const HttpServerCounts counts = (*server)->counts();
  EXPECT_LE(counts.open, 40u);
  EXPECT_GT(counts.refused_per_peer, 0u);
  EXPECT_GT(counts.evicted, 0u);
}

// A handler that blocks (an API call) holds one pool thread: other requests are answered by the
// others, and when every thread and the queue are taken, at once with 503.
TEST(HttpServer, ABlockedHandlerHoldsOnlyItsThread) {
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> blocked{0};
  HttpServerOptions options;
  options.handler_threads = 2;
  options.max_queued_requests = 1;
  auto server = HttpServer::start(options, [&](const HttpRequestView& r) -> HttpReply {
    if (r.target == "/block") {
      ++blocked;
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return release; });
    }
    return {200, "text/plain", "ok\n", {}};
  });
  ASSERT_TRUE(server) << server.error().message;
  const int port = (*server)->port();
  std::jthread first([&] { get(port, "/block"); });
  while (blocked < 1) std::this_thread::yield();
  EXPECT_EQ(get(port, "/quick").rfind("HTTP/1.1 200 ", 0), 0u);

  std::jthread second([&] { get(port, "/block"); });
  while (blocked < 2) std::this_thread::yield();
  // Both threads blocked: one request may wait in the queue, the next is refused at once.
  std::jthread queued([&] { EXPECT_EQ(get(port, "/quick").rfind("HTTP/1.1 200 ", 0), 0u); });
  while ((*server)->counts().requests < 4) std::this_thread::yield();
  const std::string refused = get_from("127.0.0.2", port, "/quick");
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 ", 0), 0u) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
}

// Stopping does not wait for idle or slow clients.
TEST(HttpServer, StopClosesIdleAndSlowConnectionsAtOnce) {
  auto server = HttpServer::start({}, ok_handler());
  ASSERT_TRUE(server) << server.error().message;
  Sockets clients;
  for (int i = 0; i < 20; ++i) clients.fds.push_back(connect_from("127.0.0.1", (*server)->port()));
  const std::string partial = "GET / HTTP/1.1\r\nHo";
  ::send(clients.fds[0], partial.data(), partial.size(), MSG_NOSIGNAL);
  while ((*server)->counts().accepted < 20) std::this_thread::yield();
  const auto asked = Clock::now();
  (*server)->stop();
  EXPECT_LT(Clock::now() - asked, 2s);
  for (int fd : clients.fds) EXPECT_TRUE(closed_within(fd, 1s));
}

}  // namespace
}  // namespace depl::controller
