#include "test_connect_proxy.hpp"

#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <mutex>
#include <thread>

namespace depl::kube::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct ConnectProxy::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::thread accept_thread;
  std::mutex mutex;
  bool stopping = false;
  std::vector<std::thread> threads;
  std::vector<int> fds;
  std::vector<std::string> targets;
  int port = 0;
};

namespace {
void relay(tcp::socket& from, tcp::socket& to) {
  char buffer[16384];
  boost::system::error_code ec;
  while (true) {
    std::size_t n = from.read_some(asio::buffer(buffer), ec);
    if (ec) break;
    asio::write(to, asio::buffer(buffer, n), ec);
    if (ec) break;
  }
  ::shutdown(to.native_handle(), SHUT_WR);
}
}  // namespace

ConnectProxy::ConnectProxy() : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  impl.acceptor.open(endpoint.protocol());
  impl.acceptor.bind(endpoint);
  impl.acceptor.listen();
  impl.port = impl.acceptor.local_endpoint().port();
  impl.accept_thread = std::thread([&impl] {
    while (true) {
      auto client = std::make_shared<tcp::socket>(impl.ioc);
      boost::system::error_code ec;
      impl.acceptor.accept(*client, ec);
      std::lock_guard lock(impl.mutex);
      if (ec || impl.stopping) return;
      impl.fds.push_back(client->native_handle());
      impl.threads.emplace_back([&impl, client] {
        asio::streambuf head;
        boost::system::error_code ec;
        asio::read_until(*client, head, "\r\n\r\n", ec);
        if (ec) return;
        std::string text(asio::buffers_begin(head.data()), asio::buffers_end(head.data()));
        head.consume(text.find("\r\n\r\n") + 4);
        if (text.rfind("CONNECT ", 0) != 0) return;
        std::string target = text.substr(8, text.find(' ', 8) - 8);
        const auto colon = target.rfind(':');
        auto upstream = std::make_shared<tcp::socket>(impl.ioc);
        tcp::resolver resolver(impl.ioc);
        asio::connect(*upstream, resolver.resolve(target.substr(0, colon), target.substr(colon + 1), ec), ec);
        {
          std::lock_guard lock(impl.mutex);
          impl.targets.push_back(target);
          if (!ec) impl.fds.push_back(upstream->native_handle());
        }
        const std::string reply = ec ? "HTTP/1.1 502 Bad Gateway\r\n\r\n" : "HTTP/1.1 200 Connection established\r\n\r\n";
        asio::write(*client, asio::buffer(reply), ec);
        if (ec) return;
        std::thread back([client, upstream] { relay(*upstream, *client); });
        relay(*client, *upstream);
        back.join();
      });
    }
  });
}

ConnectProxy::~ConnectProxy() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mutex);
    impl.stopping = true;
    ::shutdown(impl.acceptor.native_handle(), SHUT_RDWR);
    for (int fd : impl.fds) ::shutdown(fd, SHUT_RDWR);
  }
  impl.accept_thread.join();
  for (auto& thread : impl.threads) thread.join();
}

std::string ConnectProxy::url() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }

std::vector<std::string> ConnectProxy::connect_targets() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->targets;
}

}  // namespace depl::kube::test
