// A stand-in for a Kubernetes Service in front of several controller replicas: listens on a
// loopback port of its own (port 0) and forwards each connection to the next backend in turn,
// skipping backends that refuse the connection (a killed replica), as kube-proxy spreads
// connections over a Service's endpoints. Workers report progress to it, so their
// DEPL_PROGRESS_URL stays valid whichever replica leads.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace depl::e2e {

class TcpProxy {
 public:
  explicit TcpProxy(std::vector<std::uint16_t> backends);
  ~TcpProxy();  // stops listening and cuts open connections
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  std::uint16_t port() const { return port_; }  // 0: could not listen

 private:
  void accept_loop();
  void pump(int client);
  int connect_backend();

  std::vector<std::uint16_t> backends_;
  std::uint16_t port_ = 0;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: closing its write end wakes every poll()
  std::atomic<std::size_t> next_{0};
  std::mutex mutex_;
  std::vector<std::thread> connections_;
  std::thread acceptor_;
};

}  // namespace depl::e2e
