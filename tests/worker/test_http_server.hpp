// A tiny HTTP/1.1 server on 127.0.0.1 port 0 for the progress tests: answers each request with
// whatever the test's handler returns and records what it received. One connection at a time.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace depl::worker::testing {

struct RecordedRequest {
  std::string method;
  std::string target;
  std::string authorization;
  std::string content_type;
  std::string body;
};

struct CannedResponse {
  unsigned status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra headers (Retry-After)
};

class TestHttpServer {
 public:
  using Handler = std::function<CannedResponse(const RecordedRequest&)>;

  explicit TestHttpServer(Handler handler)
      : handler_(std::move(handler)),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~TestHttpServer() {
    stopping_ = true;
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket wake(io_);
    wake.connect({boost::asio::ip::make_address("127.0.0.1"), port()}, ec);  // unblocks accept
    thread_.join();
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port()) + path;
  }
  std::vector<RecordedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    namespace http = boost::beast::http;
    while (!stopping_) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket socket(io_);
      acceptor_.accept(socket, ec);
      if (ec || stopping_) continue;
      boost::beast::flat_buffer buffer;
      http::request<http::string_body> request;
      http::read(socket, buffer, request, ec);
      if (ec) continue;
      RecordedRequest recorded{std::string(request.method_string()), std::string(request.target()),
                               std::string(request[http::field::authorization]),
                               std::string(request[http::field::content_type]), request.body()};
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(recorded);
      }
      const CannedResponse canned = handler_(recorded);
      http::response<http::string_body> response{static_cast<http::status>(canned.status), 11};
      response.set(http::field::content_type, "application/json");
      for (const auto& [name, value] : canned.headers) response.set(name, value);
      response.body() = canned.body;
      response.prepare_payload();
      http::write(socket, response, ec);
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  Handler handler_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<RecordedRequest> requests_;
  std::thread thread_;
};

}  // namespace depl::worker::testing
