// Blocking calls over Asio: every connection owns an io_context; a call starts one async
// operation with the connection's deadline and runs that context until it completes. This
// keeps timeouts (tcp_stream expiry) and cross-thread cancellation (post a close) simple
// without a shared event-loop thread.
#include "depl/kube/beast_transport.hpp"

#include <openssl/ssl.h>
#include <poll.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>
#include <limits>
#include <deque>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

namespace depl::kube {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

struct Url {
  bool tls = true;
  std::string host;  // without brackets
  std::string port;
  std::string base_path;  // "" or "/prefix" (no trailing slash)
  std::string host_header() const {
    const bool ipv6 = host.find(':') != std::string::npos;
    return (ipv6 ? "[" + host + "]" : host) + ":" + port;
  }
};

Expected<Url> parse_url(std::string_view text, std::string_view field) {
  Url url;
  std::string_view rest;
  if (text.rfind("https://", 0) == 0) {
    rest = text.substr(8);
  } else if (text.rfind("http://", 0) == 0) {
    url.tls = false;
    rest = text.substr(7);
  } else {
    return error(std::string(field) + ": \"" + std::string(text) + "\" must start with https:// or http://");
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    url.base_path = std::string(path);
  }
  if (authority.empty()) return error(std::string(field) + ": \"" + std::string(text) + "\" has no host");
  if (authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return error(std::string(field) + ": unterminated [IPv6] host");
    url.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty()) {
      if (authority.front() != ':') return error(std::string(field) + ": junk after [IPv6] host");
      url.port = std::string(authority.substr(1));
    }
  } else {
    const auto colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) url.port = std::string(authority.substr(colon + 1));
  }
  if (url.port.empty()) url.port = url.tls ? "443" : "80";
  int port = 0;
  auto [end, ec] = std::from_chars(url.port.data(), url.port.data() + url.port.size(), port);
  if (ec != std::errc() || end != url.port.data() + url.port.size() || port <= 0 || port > 65535) {
    return error(std::string(field) + ": invalid port \"" + url.port + "\"");
  }
  if (url.host.empty()) return error(std::string(field) + ": \"" + std::string(text) + "\" has no host");
  return url;
}

bool is_ip_address(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

using SslStream = beast::ssl_stream<beast::tcp_stream>;

// One HTTP/1.1 connection (plain or TLS) with its own io_context.
struct Connection {
  asio::io_context ioc;
  std::optional<beast::tcp_stream> plain;
  std::optional<SslStream> tls;
  beast::flat_buffer buffer;
  std::shared_ptr<const TlsClientIdentity> identity;
  std::shared_ptr<asio::ssl::context> ssl_context;  // must outlive `tls`
  bool reused = false;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

  // Runs one async operation to completion on this connection's context.
  template <typename Start>
  error_code run(Start&& start) {
    error_code result;
    ioc.restart();
    start([&result](error_code ec, auto&&...) { result = ec; });
    ioc.run();
    return result;
  }

  void close() {
    error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().socket().close(ignored);
  }
};

ApiError transport_error(std::string_view reason, const std::string& what, const error_code& ec) {
  if (ec == beast::error::timeout) return ApiError::transport(ApiError::kTimeout, what + ": timed out");
  return ApiError::transport(reason, what + ": " + ec.message());
}

http::verb verb_of(const std::string& method) {
  return http::string_to_verb(method);
}

}  // namespace

struct BeastTransport::Impl {
  ConnectionConfig config;
  TransportOptions options;
  Url server;
  std::optional<Url> proxy;
  std::string verify_name;  // tls-server-name or the server host

  mutable std::mutex mutex;
  std::deque<std::unique_ptr<Connection>> idle;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<asio::ssl::context>> contexts;
  TransportStats stats;

  Expected<std::shared_ptr<asio::ssl::context>, ApiError> ssl_context_for(
      const std::shared_ptr<const TlsClientIdentity>& identity) {
    std::pair<std::string, std::string> key;
    if (identity) key = {identity->certificate_pem, identity->key_pem};
    std::lock_guard lock(mutex);
    if (auto it = contexts.find(key); it != contexts.end()) return it->second;
    auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    error_code ec;
    context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                             asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                             asio::ssl::context::no_tlsv1_1,
                         ec);
    if (config.insecure_skip_tls_verify) {
      context->set_verify_mode(asio::ssl::verify_none, ec);
    } else {
      context->set_verify_mode(asio::ssl::verify_peer, ec);
      if (!config.certificate_authority_pem.empty()) {
        context->add_certificate_authority(asio::buffer(config.certificate_authority_pem), ec);
        if (ec) {
          return unexpected(ApiError::transport(
              ApiError::kConfigError, "certificate authority is not a valid PEM certificate: " + ec.message()));
        }
      } else {
        context->set_default_verify_paths(ec);
      }
    }
    if (identity) {
      context->use_certificate_chain(asio::buffer(identity->certificate_pem), ec);
      if (ec) {
        return unexpected(ApiError::transport(ApiError::kConfigError,
                                              "client certificate is not a valid PEM certificate: " + ec.message()));
      }
      context->use_private_key(asio::buffer(identity->key_pem), asio::ssl::context::pem, ec);
      if (ec) {
        return unexpected(ApiError::transport(
            ApiError::kConfigError,
            "client key is not a valid PEM private key or does not match the client certificate: " +
                ec.message()));
      }
      if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
        return unexpected(ApiError::transport(ApiError::kConfigError,
                                              "client key does not match the client certificate"));
      }
      // A new identity (exec plugin rotation) retires connections made with older ones.
      for (auto& connection : idle) connection->close();
      idle.clear();
      contexts.clear();
    }
    contexts.emplace(key, context);
    return context;
  }

  std::unique_ptr<Connection> take_idle(const std::shared_ptr<const TlsClientIdentity>& identity) {
    std::lock_guard lock(mutex);
    return take_idle_locked(identity);
  }

  // An idle HTTP/1.1 connection has nothing to read; if it is readable, the server closed it
  // (FIN, or a TLS close_notify) while it sat in the pool, so it must not carry a request.
  static bool closed_by_peer(Connection& connection) {
    pollfd fd{connection.lowest().socket().native_handle(), POLLIN, 0};
    return ::poll(&fd, 1, 0) != 0;
  }

  std::unique_ptr<Connection> take_idle_locked(const std::shared_ptr<const TlsClientIdentity>& identity) {
    for (auto it = idle.begin(); it != idle.end(); ++it) {
      const auto& have = (*it)->identity;
      const bool same = (!have && !identity) || (have && identity && *have == *identity);
      if (same) {
        auto connection = std::move(*it);
        idle.erase(it);
        if (closed_by_peer(*connection)) {
          connection->close();
          return take_idle_locked(identity);
        }
        connection->reused = true;
        return connection;
      }
    }
    return nullptr;
  }

  void give_back(std::unique_ptr<Connection> connection) {
    connection->buffer.clear();
    std::lock_guard lock(mutex);
    idle.push_back(std::move(connection));
    while (idle.size() > options.max_idle_connections) {
      idle.front()->close();
      idle.pop_front();
    }
  }

  Expected<std::unique_ptr<Connection>, ApiError> connect(
      const std::shared_ptr<const TlsClientIdentity>& identity) {
    auto connection = std::make_unique<Connection>();
    connection->identity = identity;
    const Url& target = proxy ? *proxy : server;
    const std::string where = (proxy ? "proxy " : "") + target.host_header();
    tcp::resolver resolver(connection->ioc);
    error_code ec;
    auto endpoints = resolver.resolve(target.host, target.port, ec);
    if (ec) return unexpected(transport_error(ApiError::kConnectFailed, "resolving " + target.host, ec));
    beast::tcp_stream stream(connection->ioc);
    stream.expires_after(options.connect_timeout);
    connection->plain.emplace(std::move(stream));
    ec = connection->run([&](auto handler) { connection->plain->async_connect(endpoints, handler); });
    if (ec) return unexpected(transport_error(ApiError::kConnectFailed, "connecting to " + where, ec));

    if (proxy) {
      http::request<http::empty_body> request(http::verb::connect, server.host_header(), 11);
      request.set(http::field::host, server.host_header());
      ec = connection->run([&](auto handler) { http::async_write(*connection->plain, request, handler); });
      if (ec) return unexpected(transport_error(ApiError::kConnectFailed, "CONNECT via " + where, ec));
      http::response_parser<http::empty_body> parser;
      parser.skip(true);  // a CONNECT response has no body
      ec = connection->run([&](auto handler) {
        http::async_read_header(*connection->plain, connection->buffer, parser, handler);
      });
      if (ec) return unexpected(transport_error(ApiError::kConnectFailed, "CONNECT via " + where, ec));
      if (parser.get().result_int() != 200) {
        return unexpected(ApiError::transport(
            ApiError::kConnectFailed, "proxy " + where + " refused CONNECT to " + server.host_header() +
                                          ": HTTP " + std::to_string(parser.get().result_int())));
      }
    }

    if (server.tls) {
      auto context = ssl_context_for(identity);
      if (!context) return unexpected(context.error());
      connection->ssl_context = *context;
      connection->tls.emplace(std::move(*connection->plain), *connection->ssl_context);
      connection->plain.reset();
      SSL* ssl = connection->tls->native_handle();
      if (!is_ip_address(verify_name)) SSL_set_tlsext_host_name(ssl, verify_name.c_str());
      if (!config.insecure_skip_tls_verify) {
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        const int ok = is_ip_address(verify_name) ? X509_VERIFY_PARAM_set1_ip_asc(param, verify_name.c_str())
                                                  : X509_VERIFY_PARAM_set1_host(param, verify_name.c_str(), 0);
        if (ok != 1) {
          return unexpected(ApiError::transport(ApiError::kConfigError, "cannot verify name " + verify_name));
        }
      }
      connection->lowest().expires_after(options.connect_timeout);
      ec = connection->run([&](auto handler) {
        connection->tls->async_handshake(asio::ssl::stream_base::client, handler);
      });
      if (ec) {
        return unexpected(transport_error(ApiError::kConnectFailed,
                                          "TLS handshake with " + server.host_header() + " (verifying " +
                                              verify_name + ")",
                                          ec));
      }
    }
    std::lock_guard lock(mutex);
    ++stats.connections_opened;
    return connection;
  }

  http::request<http::string_body> to_beast(const HttpRequest& request) const {
    http::request<http::string_body> out(verb_of(request.method), server.base_path + request.target(), 11);
    out.set(http::field::host, server.host_header());
    for (const auto& [name, value] : request.headers) out.set(name, value);
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      out.body() = request.body;
      out.prepare_payload();
    }
    out.keep_alive(true);
    return out;
  }

  // Gets a connection and writes the request. A pooled connection the server already closed
  // fails on first use; then the request is written once more on a fresh connection.
  Expected<std::unique_ptr<Connection>, ApiError> open_and_write(const HttpRequest& request,
                                                                 std::chrono::milliseconds timeout) {
    auto beast_request = to_beast(request);
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::unique_ptr<Connection> connection = attempt == 0 ? take_idle(request.tls_identity) : nullptr;
      if (!connection) {
        auto fresh = connect(request.tls_identity);
        if (!fresh) return unexpected(fresh.error());
        connection = std::move(*fresh);
      }
      connection->lowest().expires_after(timeout);
      error_code ec = connection->run([&](auto handler) {
        if (connection->tls) {
          http::async_write(*connection->tls, beast_request, handler);
        } else {
          http::async_write(*connection->plain, beast_request, handler);
        }
      });
      if (!ec) {
        std::lock_guard lock(mutex);
        ++stats.requests;
        return connection;
      }
      if (!connection->reused) {
        return unexpected(transport_error(ApiError::kTransportError,
                                          request.method + " " + server.host_header() + request.path, ec));
      }
    }
    return unexpected(ApiError::transport(ApiError::kTransportError, "unreachable"));
  }
};

namespace {

// A streamed response body on its own connection.
class BeastResponseStream : public ResponseStream {
 public:
  BeastResponseStream(std::unique_ptr<Connection> connection,
                      std::unique_ptr<http::response_parser<http::buffer_body>> parser,
                      std::chrono::milliseconds idle_timeout, std::string what)
      : connection_(std::move(connection)),
        parser_(std::move(parser)),
        idle_timeout_(idle_timeout),
        what_(std::move(what)) {
    status_ = parser_->get().result_int();
    // Beast reads from the socket only as much as the buffer has room for (at least 512 bytes):
    // room for many events makes one read syscall (or TLS record) per burst, not per 512 bytes.
    connection_->buffer.reserve(kReadSize);
    for (const auto& field : parser_->get()) {
      headers_.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
  }
  ~BeastResponseStream() override { connection_->close(); }

  int status() const override { return status_; }
  const Headers& headers() const override { return headers_; }

  Expected<std::string, ApiError> read() override {
    if (cancelled_.load()) return cancelled();
    if (parser_->is_done()) return std::string();
    // One buffer for the stream's life: a watch delivers an event per read, and a fresh
    // 64 KiB string for each (allocated and zeroed) cost more than parsing the event.
    if (buffer_.empty()) buffer_.resize(kReadSize);
    auto& body = parser_->get().body();
    body.data = buffer_.data();
    body.size = buffer_.size();
    // What the connection already holds comes first and needs no trip through the event loop:
    // one socket read brings many chunks (a watch sends an event or a few per chunk).
    error_code ec = parse_buffered();
    while (!ec && body.size == buffer_.size() && !parser_->is_done()) {
      // Nothing buffered (or only part of a chunk's framing): wait for the socket, with the
      // idle timeout.
      connection_->lowest().expires_after(idle_timeout_);
      ec = connection_->run([&](auto handler) {
        if (connection_->tls) {
          http::async_read_some(*connection_->tls, connection_->buffer, *parser_, handler);
        } else {
          http::async_read_some(*connection_->plain, connection_->buffer, *parser_, handler);
        }
      });
      if (ec == http::error::need_buffer) ec = {};
      if (cancelled_.load()) return cancelled();
      if (ec == beast::error::timeout) {
        return unexpected(ApiError::transport(
            ApiError::kTimeout,
            what_ + ": no data for " + std::to_string(idle_timeout_.count()) + " ms"));
      }
      if (ec == http::error::end_of_stream && parser_->is_done()) return std::string();
      // The read parsed one step of what it brought (a chunk's header, say); the rest waits in
      // the connection's buffer.
      if (!ec) ec = parse_buffered();
    }
    if (ec) return unexpected(transport_error(ApiError::kTransportError, what_, ec));
    return std::string(buffer_.data(), buffer_.size() - body.size);
  }

  void cancel() override {
    cancelled_.store(true);
    // Runs on the reader's context: closing the socket aborts its pending read.
    asio::post(connection_->ioc, [connection = connection_.get()] { connection->close(); });
  }

 private:
  static constexpr std::size_t kReadSize = 64 * 1024;

  // Hands the bytes already read from the socket to the parser, into the body buffer, until
  // they run out (or end in the middle of a chunk's framing), the body buffer is full, or the
  // body ends. No I/O.
  error_code parse_buffered() {
    auto& input = connection_->buffer;
    error_code ec;
    while (input.size() > 0 && !parser_->is_done() && parser_->get().body().size > 0) {
      const std::size_t used = parser_->put(input.data(), ec);
      input.consume(used);
      if (ec == http::error::need_more || ec == http::error::need_buffer) return {};
      if (ec) return ec;
      if (used == 0) break;
    }
    return {};
  }

  Unexpected<ApiError> cancelled() const {
    return unexpected(ApiError::transport(ApiError::kCancelled, what_ + ": cancelled"));
  }

  std::unique_ptr<Connection> connection_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  std::chrono::milliseconds idle_timeout_;
  std::string what_;
  int status_ = 0;
  Headers headers_;
  std::string buffer_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

BeastTransport::BeastTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BeastTransport::~BeastTransport() { close_idle_connections(); }

Expected<std::shared_ptr<BeastTransport>> BeastTransport::create(const ConnectionConfig& config,
                                                                 TransportOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->options = options;
  auto server = parse_url(config.server, "server");
  if (!server) return unexpected(server.error());
  impl->server = *server;
  if (!config.proxy_url.empty()) {
    auto proxy = parse_url(config.proxy_url, "proxy-url");
    if (!proxy) return unexpected(proxy.error());
    if (proxy->tls) return error("proxy-url: only http:// proxies (HTTP CONNECT) are supported");
    impl->proxy = *proxy;
  }
  impl->verify_name = config.tls_server_name.empty() ? impl->server.host : config.tls_server_name;
  if (config.insecure_skip_tls_verify && impl->server.tls) {
    // The user chose this in their kubeconfig, perhaps by copying one: say what it exposes and
    // what to set instead, in words for whoever reads the log, not only as key=value.
    spdlog::warn(
        "msg=\"the API server's TLS certificate is not verified: the kubeconfig sets "
        "insecure-skip-tls-verify: true for this cluster, so anyone on the network path can "
        "impersonate the API server and read the credentials sent to it; give the cluster a "
        "certificate-authority instead\" server={} context={}",
        config.server, config.context.empty() ? "\"\"" : config.context);
  }
  if (impl->server.tls && !config.certificate_authority_pem.empty()) {
    auto context = impl->ssl_context_for(nullptr);  // rejects a bad CA now, not on first use
    if (!context) return error(context.error().message);
  }
  return std::shared_ptr<BeastTransport>(new BeastTransport(std::move(impl)));
}

Expected<HttpResponse, ApiError> BeastTransport::send(const HttpRequest& request,
                                                      std::chrono::milliseconds timeout) {
  Impl& impl = *impl_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto connection = impl.open_and_write(request, timeout);
  if (!connection) return unexpected(connection.error());
  Connection& c = **connection;
  http::response_parser<http::string_body> parser;
  parser.body_limit(impl.options.max_response_bytes);
  if (request.method == "HEAD") parser.skip(true);
  c.lowest().expires_at(deadline);
  error_code ec = c.run([&](auto handler) {
    if (c.tls) {
      http::async_read(*c.tls, c.buffer, parser, handler);
    } else {
      http::async_read(*c.plain, c.buffer, parser, handler);
    }
  });
  const std::string what = request.method + " " + impl.server.host_header() + request.path;
  if (ec) {
    c.close();
    return unexpected(transport_error(ApiError::kTransportError, what, ec));
  }
  auto message = parser.release();
  HttpResponse response;
  response.status = message.result_int();
  for (const auto& field : message) {
    response.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  response.body = std::move(message.body());
  if (message.keep_alive()) {
    impl.give_back(std::move(*connection));
  } else {
    c.close();
  }
  return response;
}

Expected<std::unique_ptr<ResponseStream>, ApiError> BeastTransport::open_stream(
    const HttpRequest& request, std::chrono::milliseconds idle_timeout) {
  Impl& impl = *impl_;
  auto connection = impl.open_and_write(request, idle_timeout);
  if (!connection) return unexpected(connection.error());
  Connection& c = **connection;
  auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
  // Not boost::none: Boost 1.74 then rejects every Content-Length body (optional comparison).
  parser->body_limit(std::numeric_limits<std::uint64_t>::max());
  c.lowest().expires_after(idle_timeout);
  error_code ec = c.run([&](auto handler) {
    if (c.tls) {
      http::async_read_header(*c.tls, c.buffer, *parser, handler);
    } else {
      http::async_read_header(*c.plain, c.buffer, *parser, handler);
    }
  });
  const std::string what = request.method + " " + impl.server.host_header() + request.target();
  if (ec) {
    c.close();
    return unexpected(transport_error(ApiError::kTransportError, what, ec));
  }
  return std::unique_ptr<ResponseStream>(
      std::make_unique<BeastResponseStream>(std::move(*connection), std::move(parser), idle_timeout, what));
}

TransportStats BeastTransport::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

void BeastTransport::close_idle_connections() {
  std::lock_guard lock(impl_->mutex);
  for (auto& connection : impl_->idle) connection->close();
  impl_->idle.clear();
}

Expected<Client> make_client(const ConnectionConfig& config, ClientOptions options,
                             TransportOptions transport_options) {
  auto transport = BeastTransport::create(config, transport_options);
  if (!transport) return unexpected(transport.error());
  options.default_namespace = config.default_namespace;
  return Client(*transport, config.credentials, std::move(options));
}

}  // namespace depl::kube
