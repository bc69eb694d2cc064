#include "tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace depl::e2e {

namespace {

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

}  // namespace

TcpProxy::TcpProxy(std::vector<std::uint16_t> backends) : backends_(std::move(backends)) {
  if (pipe2(wake_, O_CLOEXEC) != 0) return;
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return;
  sockaddr_in addr = loopback(0);
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return;
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpProxy::~TcpProxy() {
  if (wake_[1] >= 0) ::close(wake_[1]);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> connections;
  {
    std::lock_guard lock(mutex_);
    connections.swap(connections_);
  }
  for (auto& t : connections) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_[0] >= 0) ::close(wake_[0]);
}

void TcpProxy::accept_loop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;  // the destructor closed the pipe
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::lock_guard lock(mutex_);
    connections_.emplace_back([this, client] { pump(client); });
  }
}

int TcpProxy::connect_backend() {
  for (std::size_t tried = 0; tried < backends_.size(); ++tried) {
    const std::uint16_t port = backends_[next_.fetch_add(1) % backends_.size()];
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr = loopback(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    ::close(fd);
  }
  return -1;
}

// Copies bytes both ways until both sides have closed (or the proxy stops). A backend that
// cannot be reached closes the client's connection, which the worker sees as a refused report.
void TcpProxy::pump(int client) {
  const int backend = connect_backend();
  if (backend < 0) {
    ::close(client);
    return;
  }
  bool client_open = true, backend_open = true;
  char buf[16384];
  while (client_open || backend_open) {
    pollfd fds[3] = {{client_open ? client : -1, POLLIN, 0},
                     {backend_open ? backend : -1, POLLIN, 0},
                     {wake_[0], POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) continue;
    if (fds[2].revents != 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0) continue;
      const int from = i == 0 ? client : backend;
      const int to = i == 0 ? backend : client;
      const ssize_t n = ::read(from, buf, sizeof buf);
      if (n <= 0) {
        (i == 0 ? client_open : backend_open) = false;
        ::shutdown(to, SHUT_WR);
        continue;
      }
      ssize_t off = 0;
      while (off < n) {
        const ssize_t w = ::send(to, buf + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) break;
        off += w;
      }
    }
  }
  ::close(client);
  ::close(backend);
}

}  // namespace depl::e2e
