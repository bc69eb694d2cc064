#include "depl/controller/http_server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace depl::controller {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// Runs handlers that may block (API calls) off the I/O thread, with a bounded queue.
class HandlerPool {
 public:
  void start(int threads, std::size_t max_queued) {
    max_queued_ = max_queued;
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  // False when the queue is full or the pool stopping: the caller answers 503 itself.
  bool submit(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_ || queue_.size() >= max_queued_) return false;
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    return true;
  }
  // Lets running tasks finish, drops queued ones, joins the threads.
  void stop() {
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      dropped.swap(queue_);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::size_t max_queued_ = 0;
  std::vector<std::thread> threads_;
};

std::string error_body(const std::string& message) {
  return fmt::format(R"({{"error":"{}"}})", message);
}

// Answers a connection that is not served with 503 and closes it, without waiting: the few bytes
// fit the fresh socket's send buffer, and a client that reads nothing costs nothing.
void refuse(tcp::socket& socket, const std::string& message) {
  const std::string body = error_body(message);
  const std::string text = fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: "
      "1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
      body.size(), body);
  error_code ec;
  socket.non_blocking(true, ec);
  if (!ec) socket.write_some(asio::buffer(text), ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

}  // namespace

class Session;

// The server's state, shared by its connections (HttpServer::Impl is this, but private).
struct ServerCore {
  HttpServerOptions options;
  HttpHandler handler;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_pause{io};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread io_thread;
  HandlerPool pool;
  std::atomic<bool> stopped{false};
  int port = 0;

  // The I/O thread's own: every open connection, those waiting for a request (oldest first),
  // connections per remote address.
  std::list<std::shared_ptr<Session>> sessions;
  std::list<Session*> waiting;
  std::unordered_map<std::string, int> per_peer;
  bool closing = false;

  std::atomic<std::size_t> open{0};
  std::atomic<std::uint64_t> accepted{0}, refused_per_peer{0}, refused_busy{0}, evicted{0},
      timed_out{0}, requests{0};

  void accept();
  void on_accept(error_code ec, tcp::socket socket);
  void close_all();

  HttpReply call(const HttpRequestView& view) {
    try {
      return handler(view);
    } catch (const std::exception& e) {
      spdlog::error("msg=\"endpoint handler failed\" target=\"{}\" error=\"{}\"", view.target,
                    e.what());
      return {500, "application/json", error_body("internal error"), {}};
    }
  }
};

// One connection, driven on the server's I/O thread only; handler threads post back to it.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ServerCore& server, tcp::socket socket, std::string peer)
      : server_(server), stream_(std::move(socket)), peer_(std::move(peer)) {}

  const std::string& peer() const { return peer_; }
  void registered(std::list<std::shared_ptr<Session>>::iterator at) { self_ = at; }

  void read() {
    if (closed_) return;
    parser_.emplace();
    parser_->body_limit(server_.options.max_body_bytes);
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.max_header_bytes));
    stream_.expires_after(server_.options.request_timeout);
    waiting_ = server_.waiting.insert(server_.waiting.end(), this);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->on_read(ec); });
  }

  // Closes the socket (its pending operation ends with an error) and forgets the connection.
  void close() {
    if (closed_) return;
    auto keep = shared_from_this();
    closed_ = true;
    stop_waiting();
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    if (auto it = server_.per_peer.find(peer_); it != server_.per_peer.end() && --it->second <= 0)
      server_.per_peer.erase(it);
    server_.sessions.erase(self_);
    server_.open = server_.sessions.size();
  }

 private:
  void stop_waiting() {
    if (waiting_) server_.waiting.erase(*waiting_);
    waiting_.reset();
  }

  void on_read(error_code ec) {
    stop_waiting();
    if (closed_) return;  // evicted or stopping
    if (ec == beast::error::timeout) {
      ++server_.timed_out;
      close();
      return;
    }
    if (ec == http::error::body_limit) {
      write({413,
             "application/json",
             error_body(
                 fmt::format("request body larger than {} bytes", server_.options.max_body_bytes)),
             {}},
            false, 11);
      return;
    }
    if (ec) {
      close();  // closed by the client, or malformed (headers over the limit included)
      return;
    }
    auto& request = parser_->get();
    HttpRequestView view;
    view.method = std::string(request.method_string());
    view.target = std::string(request.target());
    for (const auto& field : request) {
      std::string name(field.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      view.headers[name] = std::string(field.value());
    }
    view.body = std::move(request.body());
    view.peer = peer_;
    const bool keep_alive = request.keep_alive();
    const unsigned version = request.version();
    ++server_.requests;
    if (server_.options.handler_threads <= 0) {
      write(server_.call(view), keep_alive, version);
      return;
    }
    auto task = [self = shared_from_this(), view = std::move(view), keep_alive, version] {
      HttpReply reply = self->server_.call(view);
      asio::post(self->server_.io, [self, reply = std::move(reply), keep_alive, version]() mutable {
        self->write(std::move(reply), keep_alive, version);
      });
    };
    if (!server_.pool.submit(std::move(task))) {
      ++server_.refused_busy;
      write({503,
             "application/json",
             error_body("too many requests waiting; retry"),
             {{"Retry-After", "1"}}},
            false, version);
    }
  }

  void write(HttpReply reply, bool keep_alive, unsigned version) {
    if (closed_) return;
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(reply.status), version);
    for (const auto& [name, value] : reply.headers) res->set(name, value);
    res->set(http::field::content_type, reply.content_type);
    res->keep_alive(keep_alive && !server_.closing);
    res->body() = std::move(reply.body);
    res->prepare_payload();
    stream_.expires_after(server_.options.write_timeout);
    http::async_write(stream_, *res, [self = shared_from_this(), res](error_code ec, std::size_t) {
      self->on_write(ec, res->keep_alive());
    });
  }

  void on_write(error_code ec, bool keep_alive) {
    if (closed_) return;
    if (ec == beast::error::timeout) ++server_.timed_out;
    if (ec || !keep_alive) {
      close();
      return;
    }
    read();
  }

  ServerCore& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string peer_;
  std::list<std::shared_ptr<Session>>::iterator self_;
  std::optional<std::list<Session*>::iterator> waiting_;
  bool closed_ = false;
};

void ServerCore::accept() {
  acceptor.async_accept(
      io, [this](error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void ServerCore::on_accept(error_code ec, tcp::socket socket) {
  if (closing || ec == asio::error::operation_aborted) return;
  if (ec) {
    // Out of descriptors (or memory): accepting again at once would spin. Connections closing at
    // their deadlines free some.
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
        ec == asio::error::no_memory || ec.value() == ENFILE) {
      spdlog::warn("msg=\"endpoint cannot accept; pausing\" port={} error=\"{}\"", port,
                   ec.message());
      accept_pause.expires_after(std::chrono::milliseconds(100));
      accept_pause.async_wait([this](error_code e) {
        if (!e && !closing) accept();
      });
      return;
    }
    accept();
    return;
  }
  error_code peer_ec;
  const auto endpoint = socket.remote_endpoint(peer_ec);
  if (peer_ec) {  // already gone
    accept();
    return;
  }
  std::string peer = endpoint.address().to_string();
  if (auto held = per_peer.find(peer);
      held != per_peer.end() && held->second >= options.max_connections_per_peer) {
    ++refused_per_peer;
    refuse(socket, "too many connections from this address");
    accept();
    return;
  }
  if (sessions.size() >= static_cast<std::size_t>(options.max_connections)) {
    if (waiting.empty()) {
      ++refused_busy;
      refuse(socket, "too many connections");
      accept();
      return;
    }
    ++evicted;
    waiting.front()->close();
  }
  ++per_peer[peer];
  ++accepted;
  auto session = std::make_shared<Session>(*this, std::move(socket), std::move(peer));
  session->registered(sessions.insert(sessions.end(), session));
  open = sessions.size();
  session->read();
  accept();
}

void ServerCore::close_all() {
  closing = true;
  error_code ec;
  acceptor.close(ec);
  accept_pause.cancel();
  while (!sessions.empty()) sessions.front()->close();
}

struct HttpServer::Impl : ServerCore {};

Expected<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options,
                                                        HttpHandler handler) {
  if (options.max_connections < 1 || options.max_connections_per_peer < 1)
    return error("max_connections and max_connections_per_peer must be at least 1");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  error_code ec;
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
  if (options.handler_threads > 0)
    impl->pool.start(options.handler_threads, options.max_queued_requests);
  impl->guard.emplace(impl->io.get_executor());
  Impl* raw = impl.get();
  raw->accept();
  impl->io_thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::port() const {
  return impl_->port;
}

HttpServerCounts HttpServer::counts() const {
  return {impl_->open.load(),         impl_->accepted.load(), impl_->refused_per_peer.load(),
          impl_->refused_busy.load(), impl_->evicted.load(),  impl_->timed_out.load(),
          impl_->requests.load()};
}

void HttpServer::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  // Handlers already running finish first (what they post back is written or dropped below).
  impl_->pool.stop();
  Impl* raw = impl_.get();
  asio::post(raw->io, [raw] { raw->close_all(); });
  raw->guard.reset();
  if (raw->io_thread.joinable()) raw->io_thread.join();
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
