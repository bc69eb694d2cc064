#include "server/http_server.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace depl::devcluster {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr std::size_t kBodyLimit = 64u << 20;
constexpr auto kIdleTimeout = std::chrono::minutes(5);
constexpr auto kWriteTimeout = std::chrono::seconds(60);

// What the server needs from a connection regardless of TLS.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void post_close() = 0;
  virtual void post_end_stream() = 0;
};

class Registry {
 public:
  void add(const std::shared_ptr<SessionBase>& s) {
    std::lock_guard lock(mutex_);
    std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
    sessions_.push_back(s);
  }
  std::vector<std::shared_ptr<SessionBase>> live() {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<SessionBase>> out;
    for (auto& w : sessions_) {
      if (auto s = w.lock()) out.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<std::weak_ptr<SessionBase>> sessions_;
};

// The producer-facing half of a streaming response; the session does the writing.
class StreamWriter : public ChunkWriter {
 public:
  using Post = std::function<void(std::function<void()>)>;
  StreamWriter(std::function<void(std::string)> enqueue, std::function<void()> finish)
      : enqueue_(std::move(enqueue)), finish_(std::move(finish)) {}

  void write(std::string chunk) override {
    if (closed_) return;
    enqueue_(std::move(chunk));
  }
  void finish() override {
    if (closed_) return;
    finish_();
  }
  bool closed() const override { return closed_; }
  void on_close(std::function<void()> callback) override {
    {
      std::lock_guard lock(mutex_);
      if (!fired_) {
        callbacks_.push_back(std::move(callback));
        return;
      }
    }
    callback();
  }
  // Called by the session when the stream has ended for any reason.
  void mark_closed() {
    closed_ = true;
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard lock(mutex_);
      if (fired_) return;
      fired_ = true;
      callbacks.swap(callbacks_);
    }
    for (auto& cb : callbacks) cb();
  }

 private:
  std::function<void(std::string)> enqueue_;
  std::function<void()> finish_;
  std::atomic<bool> closed_{false};
  std::mutex mutex_;
  bool fired_ = false;
  std::vector<std::function<void()>> callbacks_;
};

HttpRequest to_request(const http::request<http::string_body>& req) {
  HttpRequest out;
  out.method = std::string(req.method_string());
  out.target = std::string(req.target());
  for (const auto& field : req) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    out.headers[name] = std::string(field.value());
  }
  out.body = req.body();
  out.parse_target();
  return out;
}

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, RequestHandler& handler) : stream_(std::move(stream)), handler_(handler) {}
  ~Session() override {
    if (writer_) writer_->mark_closed();
  }

  void run() {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->begin(); });
  }

  void post_close() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] { self->close(); });
  }
  void post_end_stream() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->writer_) self->close();
    });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  void begin() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->close();
                                self->read_request();
                              });
    } else {
      read_request();
    }
  }

  void read_request() {
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    parser_->header_limit(64 * 1024);
    beast::get_lowest_layer(stream_).expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                       self->on_request(ec);
                     });
  }

  void on_request(beast::error_code ec) {
    if (ec) return close();
    auto req = parser_->release();
    keep_alive_ = req.keep_alive();
    const unsigned version = req.version();
    HttpRequest request = to_request(req);
    HandlerResult result;
    try {
      result = handler_(request);
    } catch (const std::exception& e) {
      spdlog::error("event=handler_exception method={} target={} error=\"{}\"", request.method,
                    request.target, e.what());
      result = HttpResponse{500,
                            "application/json",
                            R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
                            R"("message":"internal error","reason":"InternalError","code":500})",
                            {}};
    }
    if (auto* plain = std::get_if<HttpResponse>(&result)) {
      send(std::move(*plain), version);
    } else {
      start_stream(std::move(std::get<StreamingResponse>(result)), version);
    }
  }

  void send(HttpResponse response, unsigned version) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), version);
    res->set(http::field::server, "depl-devcluster");
    res->set(http::field::content_type, response.content_type);
    for (auto& [k, v] : response.headers) res->set(k, v);
    res->keep_alive(keep_alive_);
    res->body() = std::move(response.body);
    res->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
    http::async_write(stream_, *res,
                      [self = this->shared_from_this(), res](beast::error_code ec, std::size_t) {
                        if (ec || !self->keep_alive_) return self->close();
                        self->read_request();
                      });
  }

  void start_stream(StreamingResponse response, unsigned version) {
    auto header = std::make_shared<http::response<http::empty_body>>(
        static_cast<http::status>(response.status), version);
    header->set(http::field::server, "depl-devcluster");
    header->set(http::field::content_type, response.content_type);
    header->set(http::field::cache_control, "no-cache, private");
    // The connection ends with the stream: simpler than resuming keep-alive after a watch,
    // and every Kubernetes client opens a new connection per watch anyway.
    header->keep_alive(false);
    header->chunked(true);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*header);
    beast::get_lowest_layer(stream_).expires_never();
    std::weak_ptr<Session> weak = this->shared_from_this();
    auto exec = stream_.get_executor();
    writer_ = std::make_shared<StreamWriter>(
        [weak, exec](std::string chunk) {
          if (auto self = weak.lock()) {
            net::post(exec,
                      [self, c = std::move(chunk)]() mutable { self->enqueue(std::move(c)); });
          }
        },
        [weak, exec] {
          if (auto self = weak.lock()) {
            net::post(exec, [self] {
              self->finishing_ = true;
              if (!self->writing_) self->write_next();
            });
          }
        });
    writing_ = true;
    http::async_write_header(
        stream_, *serializer,
        [self = this->shared_from_this(), header, serializer, start = std::move(response.start)](
            beast::error_code ec, std::size_t) {
          self->writing_ = false;
          if (ec) return self->close();
          self->watch_for_disconnect();
          if (start) start(self->writer_);
          self->write_next();
        });
  }

  void enqueue(std::string chunk) {
    // A zero-length chunk is the chunked encoding's end marker: nothing to send is no chunk.
    if (closed_ || chunk.empty()) return;
    queue_.push_back(std::move(chunk));
    if (!writing_) write_next();
  }

  void write_next() {
    if (closed_ || writing_) return;
    if (queue_.empty()) {
      if (finishing_) {
        writing_ = true;
        net::async_write(stream_, http::make_chunk_last(),
                         [self = this->shared_from_this()](beast::error_code, std::size_t) {
                           self->writing_ = false;
                           self->close();
                         });
      }
      return;
    }
    // Coalesce whatever is queued into one chunk: fewer syscalls when events arrive in bursts.
    auto data = std::make_shared<std::string>();
    while (!queue_.empty()) {
      data->append(queue_.front());
      queue_.pop_front();
    }
    writing_ = true;
    net::async_write(stream_, http::make_chunk(net::buffer(*data)),
                     [self = this->shared_from_this(), data](beast::error_code ec, std::size_t) {
                       self->writing_ = false;
                       if (ec) return self->close();
                       self->write_next();
                     });
  }

  // Clients send nothing while a stream is open; a completed read means they hung up.
  void watch_for_disconnect() {
    stream_.async_read_some(disconnect_buffer_.prepare(512),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();
                              self->disconnect_buffer_.clear();
                              self->watch_for_disconnect();
                            });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    if (writer_) writer_->mark_closed();
    beast::error_code ignored;
    auto& socket = beast::get_lowest_layer(stream_).socket();
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  Stream stream_;
  RequestHandler& handler_;
  beast::flat_buffer buffer_;
  beast::flat_buffer disconnect_buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = false;
  bool closed_ = false;
  std::shared_ptr<StreamWriter> writer_;
  std::deque<std::string> queue_;
  bool writing_ = false;
  bool finishing_ = false;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  RequestHandler handler;
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::acceptor acceptor{ioc};
  std::optional<ssl::context> tls_context;
  std::uint16_t port = 0;
  Registry sessions;
  std::vector<std::thread> threads;
  bool stopped = false;

  Expected<void> listen(std::uint16_t wanted_port) {
    beast::error_code ec;
    const auto address = net::ip::make_address(options.address, ec);
    if (ec) return error("invalid listen address " + options.address + ": " + ec.message());
    tcp::endpoint endpoint(address, wanted_port);
    tcp::acceptor fresh(ioc);
    fresh.open(endpoint.protocol(), ec);
    if (!ec) fresh.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) fresh.bind(endpoint, ec);
    if (!ec) fresh.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return error("cannot listen on " + options.address + ":" + std::to_string(wanted_port) +
                   ": " + ec.message());
    }
    port = fresh.local_endpoint().port();
    acceptor = std::move(fresh);
    accept();
    return {};
  }

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed: refuse_connections or stop
      socket.set_option(tcp::no_delay(true), ec);
      if (tls_context) {
        auto s = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
            beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)),
                                                 *tls_context),
            handler);
        sessions.add(s);
        s->run();
      } else {
        auto s = std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)),
                                                              handler);
        sessions.add(s);
        s->run();
      }
      accept();
    });
  }

  // Runs `fn` on the io threads and waits for it, so socket state changes don't race.
  void run_on_io(std::function<void()> fn) {
    std::promise<void> done;
    net::post(ioc, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

  void close_all() {
    run_on_io([this] {
      beast::error_code ignored;
      acceptor.close(ignored);
    });
    for (auto& s : sessions.live()) s->post_close();
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Expected<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options,
                                                        RequestHandler handler) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->handler = std::move(handler);
  if (!impl->options.tls_cert_pem.empty() || !impl->options.tls_key_pem.empty()) {
    try {
      impl->tls_context.emplace(ssl::context::tls_server);
      impl->tls_context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                                     ssl::context::no_tlsv1_1);
      impl->tls_context->use_certificate_chain(net::buffer(impl->options.tls_cert_pem));
      impl->tls_context->use_private_key(net::buffer(impl->options.tls_key_pem), ssl::context::pem);
    } catch (const std::exception& e) {
      return error(std::string("invalid TLS serving certificate or key: ") + e.what());
    }
  }
  if (auto listening = impl->listen(impl->options.port); !listening) {
    return unexpected(listening.error());
  }
  impl->work.emplace(net::make_work_guard(impl->ioc));
  const int threads = std::max(1, impl->options.threads);
  for (int i = 0; i < threads; ++i) {
    impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() {
  stop();
}

std::uint16_t HttpServer::port() const {
  return impl_->port;
}
bool HttpServer::tls() const {
  return impl_->tls_context.has_value();
}

void HttpServer::drop_streams() {
  for (auto& s : impl_->sessions.live()) s->post_end_stream();
}

void HttpServer::refuse_connections() {
  if (impl_->stopped) return;
  impl_->close_all();
}

Expected<void> HttpServer::resume() {
  if (impl_->stopped) return error("the server has been stopped");
  Expected<void> result;
  impl_->run_on_io([&] {
    if (!impl_->acceptor.is_open()) result = impl_->listen(impl_->port);
  });
  return result;
}

void HttpServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->close_all();
  // Let the close handlers run, then stop; pending handlers are destroyed with the context.
  impl_->run_on_io([] {});
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace depl::devcluster
