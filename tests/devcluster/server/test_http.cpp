#include "test_http.hpp"

#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

namespace depl::devcluster::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

TestResponse http_request(std::uint16_t port, const std::string& method, const std::string& target,
                          const std::string& body, const std::string& content_type,
                          const std::map<std::string, std::string>& headers) {
  TestResponse out;
  try {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(30));
    stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::user_agent, "devcluster-test");
    if (!content_type.empty()) req.set(http::field::content_type, content_type);
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1u << 30);
    http::read(stream, buffer, parser);
    auto res = parser.release();
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
    for (const auto& f : res) {
      std::string name(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out.headers[name] = std::string(f.value());
    }
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  } catch (const std::exception& e) {
    out.status = 0;
    out.body = e.what();
  }
  return out;
}

struct TestStream::Impl {
  net::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  std::size_t consumed = 0;
  bool ended = false;
  int status = 0;
};

TestStream::TestStream(std::uint16_t port, const std::string& target,
                       const std::map<std::string, std::string>& headers)
    : impl_(std::make_unique<Impl>()) {
  try {
    impl_->stream.expires_after(std::chrono::seconds(30));
    impl_->stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    http::write(impl_->stream, req);
    impl_->parser.body_limit(1u << 30);
    http::read_header(impl_->stream, impl_->buffer, impl_->parser);
    impl_->status = static_cast<int>(impl_->parser.get().result_int());
  } catch (const std::exception&) {
    impl_->ended = true;
  }
}

TestStream::~TestStream() = default;

int TestStream::status() const {
  return impl_->status;
}
bool TestStream::ended() const {
  return impl_->ended;
}

std::optional<std::string> TestStream::next_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string& body = impl_->parser.get().body();
    const auto nl = body.find('\n', impl_->consumed);
    if (nl != std::string::npos) {
      std::string line = body.substr(impl_->consumed, nl - impl_->consumed);
      impl_->consumed = nl + 1;
      return line;
    }
    if (impl_->ended || impl_->parser.is_done()) {
      impl_->ended = true;
      return std::nullopt;
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return std::nullopt;
    // tcp_stream's timeout applies to asynchronous operations only: read asynchronously and run
    // the context until the read completes (or times out and is cancelled).
    impl_->stream.expires_after(left);
    beast::error_code ec;
    http::async_read_some(impl_->stream, impl_->buffer, impl_->parser,
                          [&ec](beast::error_code e, std::size_t) { ec = e; });
    impl_->ioc.restart();
    impl_->ioc.run();
    if (ec == beast::error::timeout) {
      // A timed-out tcp_stream is closed; the stream cannot be read any more.
      impl_->ended = true;
      return std::nullopt;
    }
    if (ec) {
      impl_->ended = true;
    }
  }
}

}  // namespace depl::devcluster::testing
