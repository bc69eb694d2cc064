// A small HTTP/1.1 server for the controller's own endpoints (progress reports, Prometheus
// metrics, health probes). One acceptor thread; each connection is served on a thread of its
// own, with a cap on concurrent connections, a request-size limit and read timeouts, so a slow or
// hostile client cannot hold the controller up. Beast stays inside the .cpp.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "depl/common/expected.hpp"

namespace depl::controller {

struct HttpRequestView {
  std::string method;
  std::string target;                          // path and query
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string peer;  // remote address
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra response headers (Retry-After, ...), written as given. The server sets Content-Type,
  // Content-Length and Connection itself.
  std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<HttpReply(const HttpRequestView& request)>;

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;  // 0: any free port
  std::size_t max_body_bytes = 64 * 1024;
  int max_connections = 64;
  std::chrono::seconds read_timeout{10};
};

class HttpServer {
 public:
  // Binds and starts serving; the error names the address when binding fails.
  static Expected<std::unique_ptr<HttpServer>> start(HttpServerOptions options,
                                                     HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  // Stops accepting, closes open connections and joins every thread. Idempotent.
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ":8080" -> ("0.0.0.0", 8080); "127.0.0.1:0" -> ("127.0.0.1", 0). Errors name the flag value.
Expected<std::pair<std::string, int>> parse_listen_address(const std::string& text);

}  // namespace depl::controller
