#include "depl/controller/http_server.hpp"

#include <fmt/format.h>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>

namespace depl::controller {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpServer::Impl {
  HttpServerOptions options;
  HttpHandler handler;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread accept_thread;
  std::mutex mutex;
  std::condition_variable idle;
  std::list<std::shared_ptr<tcp::socket>> open;  // for closing on stop
  int active = 0;
  std::atomic<bool> stopping{false};
  int port = 0;

  void accept_loop() {
    for (;;) {
      auto socket = std::make_shared<tcp::socket>(io);
      boost::system::error_code ec;
      acceptor.accept(*socket, ec);
      if (stopping) return;
      if (ec) continue;
      std::unique_lock lock(mutex);
      if (active >= options.max_connections) {
        lock.unlock();
        reply_and_close(*socket, 503, "too many connections");  // with Retry-After: 1
        continue;
      }
      ++active;
      auto it = open.insert(open.end(), socket);
      std::thread([this, socket, it] {
        serve(*socket);
        std::lock_guard guard(mutex);
        open.erase(it);
        --active;
        idle.notify_all();
      }).detach();
    }
  }

  static void reply_and_close(tcp::socket& socket, int status, const std::string& message) {
    http::response<http::string_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::connection, "close");
    if (status == 503) res.set(http::field::retry_after, "1");
    res.body() = fmt::format(R"({{"error":"{}"}})", message);
    res.prepare_payload();
    boost::system::error_code ec;
    http::write(socket, res, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }

  void serve(tcp::socket& socket) {
    // Read timeouts through SO_RCVTIMEO: a stalled client frees its thread.
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(options.read_timeout).count();
    struct timeval tv {
      static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)
    };
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    beast::flat_buffer buffer;
    boost::system::error_code ec;
    std::string peer;
    {
      auto endpoint = socket.remote_endpoint(ec);
      if (!ec) peer = endpoint.address().to_string();
    }
    while (!stopping) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(options.max_body_bytes);
      parser.header_limit(16 * 1024);
      http::read(socket, buffer, parser, ec);
      if (ec == http::error::body_limit) {
        reply_and_close(socket, 413,
                        fmt::format("request body larger than {} bytes", options.max_body_bytes));
        return;
      }
      if (ec) return;  // closed, timed out or malformed
      const auto& req = parser.get();
      HttpRequestView view;
      view.method = std::string(req.method_string());
      view.target = std::string(req.target());
      for (const auto& field : req) {
        std::string name(field.name_string());
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        view.headers[name] = std::string(field.value());
      }
      view.body = req.body();
      view.peer = peer;
      HttpReply reply;
      try {
        reply = handler(view);
      } catch (const std::exception& e) {
        reply = {500, "application/json", fmt::format(R"({{"error":"internal error"}})"), {}};
      }
      http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
      for (const auto& [name, value] : reply.headers) res.set(name, value);
      res.set(http::field::content_type, reply.content_type);
      res.keep_alive(req.keep_alive());
      res.body() = std::move(reply.body);
      res.prepare_payload();
      http::write(socket, res, ec);
      if (ec || !req.keep_alive()) break;
    }
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }
};

Expected<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options,
                                                        HttpHandler handler) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  boost::system::error_code ec;
  auto address = asio::ip::make_address(options.address, ec);
  if (ec)
    return error(fmt::format("invalid listen address \"{}\": {}", options.address, ec.message()));
  tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return error(
        fmt::format("cannot listen on {}:{}: {}", options.address, options.port, ec.message()));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  Impl* raw = impl.get();
  impl->accept_thread = std::thread([raw] { raw->accept_loop(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::port() const {
  return impl_->port;
}

void HttpServer::stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  boost::system::error_code ec;
  // Closing the acceptor from another thread does not reliably wake accept() on Linux; a
  // connection to ourselves does.
  {
    tcp::socket poke(impl_->io);
    auto endpoint = impl_->acceptor.local_endpoint(ec);
    if (!ec) {
      if (endpoint.address().is_unspecified())
        endpoint.address(asio::ip::make_address("127.0.0.1"));
      poke.connect(endpoint, ec);
    }
  }
  impl_->acceptor.close(ec);
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  std::unique_lock lock(impl_->mutex);
  for (auto& socket : impl_->open) {
    socket->shutdown(tcp::socket::shutdown_both, ec);
  }
  impl_->idle.wait(lock, [&] { return impl_->active == 0; });
}

Expected<std::pair<std::string, int>> parse_listen_address(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) {
    return error(fmt::format("\"{}\": expected HOST:PORT or :PORT", text));
  }
  std::string host = text.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  try {
    std::size_t used = 0;
    port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1) port = -1;
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535) {
    return error(fmt::format("\"{}\": port must be a number from 0 to 65535", text));
  }
  return std::make_pair(host, port);
}

}  // namespace depl::controller
