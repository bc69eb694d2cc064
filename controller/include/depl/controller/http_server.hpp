// A small HTTP/1.1 server for the controller's own endpoints (progress reports, Prometheus
// metrics, health probes), asynchronous on an I/O thread of its own, so that no client can starve
// it: a request must arrive whole (headers and body) within a deadline of the moment the server
// starts waiting for it, which also closes idle connections; each remote address may hold only a
// share of the connections; past the global cap the connection that has waited longest for its
// request is closed to make room. Handlers that block (API calls) run on a bounded pool of their
// own. Each endpoint gets its own server, so load on one never touches another's capacity.
// Beast stays inside the .cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
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

// docs/operations.md ("Endpoints") quotes these defaults.
struct HttpServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;  // 0: any free port
  std::size_t max_body_bytes = 64 * 1024;
  std::size_t max_header_bytes = 16 * 1024;
  // Open connections in all. Past it, the connection that has waited longest for a request is
  // closed to let the new one in (one whose request is being handled or answered is kept); when
  // every connection is busy the new one is answered 503.
  int max_connections = 256;
  // Open connections per remote address; past it the address's new connections are answered 503
  // and closed. Below max_connections, so one address cannot take the whole server.
  int max_connections_per_peer = 32;
  // From the moment the server waits for a request (a new connection, or the previous answer
  // written) until the request's last byte: an idle or slow connection is closed at this deadline.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
  // Writing one answer; a client that does not read it is closed.
  std::chrono::milliseconds write_timeout{std::chrono::seconds(10)};
  // 0: the handler runs on the I/O thread and must not block (health, metrics). Otherwise a pool
  // of this many threads runs it (the progress endpoint reads and writes the API server), and
  // requests beyond max_queued_requests waiting for a thread are answered 503 at once.
  int handler_threads = 0;
  std::size_t max_queued_requests = 64;
};

// What the server has done, for tests and metrics.
struct HttpServerCounts {
  std::size_t open = 0;                // connections open now
  std::uint64_t accepted = 0;          // connections accepted
  std::uint64_t refused_per_peer = 0;  // answered 503: the address held its share
  std::uint64_t refused_busy = 0;      // answered 503: every connection busy, or queue full
  std::uint64_t evicted = 0;           // closed while waiting, to make room past the cap
  std::uint64_t timed_out = 0;         // closed at the request or write deadline
  std::uint64_t requests = 0;          // requests handed to the handler
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
  HttpServerCounts counts() const;
  // Stops accepting, lets handlers already running finish (their answers are not written),
  // closes every connection and joins the threads. Idempotent.
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ":8080" -> ("0.0.0.0", 8080); "127.0.0.1:0" -> ("127.0.0.1", 0). Errors name the flag value.
Expected<std::pair<std::string, int>> parse_listen_address(const std::string& text);

}  // namespace depl::controller
