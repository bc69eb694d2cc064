// The controller's HttpServer over a loopback socket: what a handler's reply becomes on the wire.
#include "depl/controller/http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace depl::controller {
namespace {

// Sends `request` to 127.0.0.1:port and reads the answer until the server closes.
std::string round_trip(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) {
      response.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return response;
}

std::string get(int port, const std::string& target) {
  return round_trip(port, "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

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

// Past max_connections a connection is answered 503 at once, with a Retry-After for the client
// (the reference worker waits it out).
TEST(HttpServer, TooManyConnectionsAreToldWhenToComeBack) {
  HttpServerOptions options;
  options.max_connections = 1;
  auto server = HttpServer::start(options, [](const HttpRequestView&) -> HttpReply {
    return {200, "text/plain", "ok\n", {}};
  });
  ASSERT_TRUE(server) << server.error().message;
  // The first connection is accepted (connections are accepted in order) and holds the only
  // slot while it sends nothing.
  const int idle = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(idle, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>((*server)->port()));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  ASSERT_EQ(::connect(idle, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);

  const std::string refused = get((*server)->port(), "/healthz");
  EXPECT_EQ(refused.rfind("HTTP/1.1 503 ", 0), 0u) << refused;
  EXPECT_NE(refused.find("\r\nRetry-After: 1\r\n"), std::string::npos) << refused;
  EXPECT_NE(refused.find("too many connections"), std::string::npos) << refused;
  ::close(idle);
}

}  // namespace
}  // namespace depl::controller
