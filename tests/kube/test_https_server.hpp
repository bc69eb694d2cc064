// A small HTTP/1.1 server for transport tests: 127.0.0.1 on port 0, plain or TLS (optionally
// requiring client certificates), one thread per connection, replies from a handler. Records
// what the transport did: connections accepted, SNI names, client certificate CNs, requests.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace depl::kube::test {

struct ServerRequest {
  std::string method{};
  std::string target{};
  std::map<std::string, std::string> headers{};  // lower-case names
  std::string body{};
};

struct ServerReply {
  int status = 200;
  std::string body{};
  std::string content_type = "application/json";
  // Streamed: sent as chunks of a chunked body, then the body ends (unless hang).
  std::vector<std::string> chunks{};
  bool chunked = false;
  bool hang = false;         // after the chunks (or before any reply if !chunked), go silent
  bool close = false;        // Connection: close
  bool drop_after = false;   // close the connection after replying, without saying so
  // Raw: the whole response as bytes (status line, headers, chunk framing), each piece sent
  // with one write. Before each piece but the first, `before_piece(i)` runs: a test blocks it
  // until the client has read what came before. After the last piece: hang, else close.
  std::vector<std::string> raw_pieces{};
  std::function<void(std::size_t)> before_piece{};
};

struct ServerOptions {
  bool tls = true;
  std::string certificate_pem{};
  std::string key_pem{};
  std::string client_ca_pem{};  // non-empty: require a client certificate signed by it
};

class TestHttpsServer {
 public:
  using Handler = std::function<ServerReply(const ServerRequest&)>;

  TestHttpsServer(ServerOptions options, Handler handler);
  ~TestHttpsServer();  // stops and joins every thread

  int port() const { return port_; }
  std::string url() const;  // https://127.0.0.1:<port> (or http://)

  int connections_accepted() const { return accepted_.load(); }
  // Blocks until at least `n` connections have been closed by the server (or 10 s pass).
  bool wait_for_closed_connections(int n) const;
  std::vector<std::string> sni_names() const;
  std::vector<std::string> client_common_names() const;
  std::vector<ServerRequest> requests() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_{};
  int port_ = 0;
  std::atomic<int> accepted_{0};
};

}  // namespace depl::kube::test
