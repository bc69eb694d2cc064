#include "controller_process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

namespace depl::e2e {

ControllerProcess::ControllerProcess(const std::filesystem::path& binary,
                                     const std::vector<std::string>& args,
                                     std::filesystem::path log_file)
    : log_file_(std::move(log_file)) {
  SpawnOptions options;
  options.argv = {binary.string()};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.stdout_to = Redirect::file(log_file_.string());
  options.stderr_to = Redirect::to_stdout();
  options.own_process_group = true;
  auto child = Subprocess::spawn(options);
  if (child) child_.emplace(std::move(*child));
}

bool ControllerProcess::running() {
  return child_ && !child_->try_wait().has_value();
}

void ControllerProcess::signal(int sig) {
  if (child_) child_->signal(sig);
}

int ControllerProcess::wait(std::chrono::milliseconds timeout) {
  if (!child_) return -1;
  if (auto status = child_->wait_for(timeout)) return status->exit_code;
  child_->kill();
  return -1;
}

std::string ControllerProcess::log() const {
  std::ifstream in(log_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// The first port of the kernel's ephemeral range (Linux's default when unreadable).
int ephemeral_low() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  if (in >> low && low > 1024) return low;
  return 32768;
}

bool bindable(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

std::uint16_t free_loopback_port() {
  // [10000, 20000): below the ephemeral range and apart from the controller's rendezvous ports
  // (kRendezvousPortFirst and up), which dev-cluster workers of another test may be listening on.
  const int end = std::min(20000, ephemeral_low());
  const int first = end > 11000 ? 10000 : 1025;
  const int span = end - first;
  // Spread over the range by process, then walk on: tests running side by side start apart,
  // and one test's ports differ.
  static std::atomic<int> cursor{static_cast<int>(::getpid() % span)};
  for (int tries = 0; tries < span; ++tries) {
    const auto port = static_cast<std::uint16_t>(first + cursor.fetch_add(1) % span);
    if (bindable(port)) return port;
  }
  return 0;
}

}  // namespace depl::e2e
