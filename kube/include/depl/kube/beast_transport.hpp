// The real Transport: HTTP/1.1 over TCP or TLS with Boost.Beast/Asio and OpenSSL. Keep-alive
// connection pool, peer verification against the configured CA (or the system roots) with SNI
// and tls-server-name, client certificates per request identity, HTTP CONNECT proxies,
// per-request timeouts and idle timeouts on streams. Beast stays behind the pimpl.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "depl/common/expected.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/connection_config.hpp"
#include "depl/kube/http.hpp"

namespace depl::kube {

struct TransportOptions {
  std::chrono::milliseconds connect_timeout{10'000};  // TCP connect + proxy + TLS handshake
  std::size_t max_idle_connections = 16;              // kept for reuse
  std::size_t max_response_bytes = 256u << 20;        // for send(); streams are unbounded
};

struct TransportStats {
  std::uint64_t connections_opened = 0;
  std::uint64_t requests = 0;  // send() and open_stream() calls that reached the wire
};

// Thread-safe. Streams hold their own connection; cancel() on a stream is thread-safe.
class BeastTransport : public Transport {
 public:
  // Validates the server URL, CA and proxy up front; errors name what is wrong.
  static Expected<std::shared_ptr<BeastTransport>> create(const ConnectionConfig& config,
                                                          TransportOptions options = {});
  ~BeastTransport() override;

  Expected<HttpResponse, ApiError> send(const HttpRequest& request,
                                        std::chrono::milliseconds timeout) override;
  Expected<std::unique_ptr<ResponseStream>, ApiError> open_stream(
      const HttpRequest& request, std::chrono::milliseconds idle_timeout) override;

  TransportStats stats() const;
  // Closes pooled idle connections (e.g. after a credential rotation).
  void close_idle_connections();

  struct Impl;

 private:
  explicit BeastTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A Client talking to `config`'s server over a BeastTransport, with its credentials and
// default namespace.
Expected<Client> make_client(const ConnectionConfig& config, ClientOptions options = {},
                             TransportOptions transport_options = {});

}  // namespace depl::kube
