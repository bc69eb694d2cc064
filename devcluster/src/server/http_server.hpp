// The dev cluster's HTTP/1.1 listener: Beast over Asio on 127.0.0.1, keep-alive, optional TLS,
// chunked streaming responses. It knows nothing of Kubernetes: every request goes to one
// RequestHandler. Beast stays inside http_server.cpp (pimpl) so includers don't pay for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "depl/common/expected.hpp"
#include "server/http_types.hpp"

namespace depl::devcluster {

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: the system picks one; see HttpServer::port()
  int threads = 2;
  // PEM serving certificate chain and key; both empty means plain HTTP.
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

class HttpServer {
 public:
  // Binds and starts serving on a private thread pool. Fails with a message naming the address
  // when the socket cannot be bound.
  static Expected<std::unique_ptr<HttpServer>> start(HttpServerOptions options,
                                                     RequestHandler handler);
  ~HttpServer();  // stops: closes the listener and every connection, joins the threads

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::uint16_t port() const;
  bool tls() const;

  // Fault injection. Ends every open streaming response at once (the client sees the chunked
  // body end, as when an API server restarts a watch).
  void drop_streams();
  // Closes the listener and every connection; new connections are refused until `resume`.
  void refuse_connections();
  // Listens again on the same port. Fails if the port was taken in the meantime.
  Expected<void> resume();
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace depl::devcluster
