#include "test_https_server.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>

namespace depl::kube::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct TestHttpsServer::Impl {
  ServerOptions options;
  Handler handler;
  asio::io_context ioc;
  std::optional<asio::ssl::context> ssl;
  tcp::acceptor acceptor{ioc};
  std::thread accept_thread;
  mutable std::mutex mutex;
  std::condition_variable stopped_cv;
  bool stopping = false;
  std::vector<std::thread> connection_threads;
  std::vector<int> open_fds;
  std::vector<std::string> sni;
  std::vector<std::string> common_names;
  std::vector<ServerRequest> requests;
  int closed = 0;
  std::condition_variable closed_cv;
};

namespace {

template <typename Stream>
void serve(TestHttpsServer::Handler& handler, Stream& stream, std::mutex& mutex,
           std::vector<ServerRequest>& log, std::condition_variable& stopped_cv, bool& stopping) {
  beast::flat_buffer buffer;
  while (true) {
    http::request<http::string_body> request;
    beast::error_code ec;
    http::read(stream, buffer, request, ec);
    if (ec) return;
    ServerRequest recorded{std::string(request.method_string()), std::string(request.target()), {},
                           request.body()};
    for (const auto& field : request) {
      std::string name(field.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      recorded.headers[name] = std::string(field.value());
    }
    {
      std::lock_guard lock(mutex);
      log.push_back(recorded);
    }
    ServerReply reply = handler(recorded);
    auto hang = [&] {
      std::unique_lock lock(mutex);
      stopped_cv.wait(lock, [&] { return stopping; });
    };
    if (!reply.raw_pieces.empty()) {
      for (std::size_t i = 0; i < reply.raw_pieces.size(); ++i) {
        if (i > 0 && reply.before_piece) reply.before_piece(i);
        asio::write(stream, asio::buffer(reply.raw_pieces[i]), ec);
        if (ec) return;
      }
      if (reply.hang) hang();
      return;
    }
    if (reply.hang && !reply.chunked) {
      hang();
      return;
    }
    if (reply.chunked) {
      http::response<http::empty_body> head(static_cast<http::status>(reply.status), 11);
      head.set(http::field::content_type, reply.content_type);
      head.chunked(true);
      http::response_serializer<http::empty_body> serializer(head);
      http::write_header(stream, serializer, ec);
      if (ec) return;
      for (const auto& chunk : reply.chunks) {
        asio::write(stream, http::make_chunk(asio::buffer(chunk)), ec);
        if (ec) return;
      }
      if (reply.hang) {
        hang();
        return;
      }
      asio::write(stream, http::make_chunk_last(), ec);
      if (ec) return;
    } else {
      http::response<http::string_body> response(static_cast<http::status>(reply.status), 11);
      response.set(http::field::content_type, reply.content_type);
      response.body() = reply.body;
      response.keep_alive(!reply.close && request.keep_alive());
      response.prepare_payload();
      http::write(stream, response, ec);
      if (ec) return;
    }
    if (reply.close || reply.drop_after || !request.keep_alive()) return;
  }
}

}  // namespace

TestHttpsServer::TestHttpsServer(ServerOptions options, Handler handler) : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.options = std::move(options);
  impl.handler = std::move(handler);
  if (impl.options.tls) {
    impl.ssl.emplace(asio::ssl::context::tls_server);
    impl.ssl->use_certificate_chain(asio::buffer(impl.options.certificate_pem));
    impl.ssl->use_private_key(asio::buffer(impl.options.key_pem), asio::ssl::context::pem);
    if (!impl.options.client_ca_pem.empty()) {
      impl.ssl->add_certificate_authority(asio::buffer(impl.options.client_ca_pem));
      impl.ssl->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
    }
  }
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  impl.acceptor.open(endpoint.protocol());
  impl.acceptor.set_option(asio::socket_base::reuse_address(true));
  impl.acceptor.bind(endpoint);
  impl.acceptor.listen();
  port_ = impl.acceptor.local_endpoint().port();
  impl.accept_thread = std::thread([this] {
    Impl& impl = *impl_;
    while (true) {
      tcp::socket socket(impl.ioc);
      beast::error_code ec;
      impl.acceptor.accept(socket, ec);
      std::lock_guard lock(impl.mutex);
      if (ec || impl.stopping) return;
      ++accepted_;
      impl.open_fds.push_back(socket.native_handle());
      impl.connection_threads.emplace_back([this, socket = std::move(socket)]() mutable {
        Impl& impl = *impl_;
        struct CountClose {
          Impl& impl;
          tcp::socket& socket;
          ~CountClose() {
            beast::error_code ignored;
            socket.shutdown(tcp::socket::shutdown_both, ignored);
            socket.close(ignored);
            std::lock_guard lock(impl.mutex);
            ++impl.closed;
            impl.closed_cv.notify_all();
          }
        } count_close{impl, socket};
        if (!impl.options.tls) {
          serve(impl.handler, socket, impl.mutex, impl.requests, impl.stopped_cv, impl.stopping);
          return;
        }
        beast::ssl_stream<tcp::socket&> stream(socket, *impl.ssl);
        beast::error_code ec;
        stream.handshake(asio::ssl::stream_base::server, ec);
        SSL* ssl = stream.native_handle();
        {
          std::lock_guard lock(impl.mutex);
          const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
          impl.sni.push_back(name ? name : "");
          if (!ec) {
            if (X509* peer = SSL_get1_peer_certificate(ssl)) {
              char cn[256] = {0};
              X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
              impl.common_names.push_back(cn);
              X509_free(peer);
            }
          }
        }
        if (ec) return;
        serve(impl.handler, stream, impl.mutex, impl.requests, impl.stopped_cv, impl.stopping);
      });
    }
  });
}

TestHttpsServer::~TestHttpsServer() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mutex);
    impl.stopping = true;
    // shutdown() wakes threads blocked in accept/read on these sockets.
    ::shutdown(impl.acceptor.native_handle(), SHUT_RDWR);
    for (int fd : impl.open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  impl.stopped_cv.notify_all();
  impl.accept_thread.join();
  for (auto& thread : impl.connection_threads) thread.join();
}

bool TestHttpsServer::wait_for_closed_connections(int n) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->closed_cv.wait_for(lock, std::chrono::seconds(10), [&] { return impl_->closed >= n; });
}

std::string TestHttpsServer::url() const {
  return std::string(impl_->options.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

std::vector<std::string> TestHttpsServer::sni_names() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->sni;
}

std::vector<std::string> TestHttpsServer::client_common_names() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->common_names;
}

std::vector<ServerRequest> TestHttpsServer::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->requests;
}

}  // namespace depl::kube::test
