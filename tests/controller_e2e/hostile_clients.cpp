#include "hostile_clients.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace depl::e2e {

namespace {

using Clock = std::chrono::steady_clock;

// A request that never ends: headers, one byte at a time, for ever.
const std::string kEndlessRequest =
    "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: " + std::string(1 << 16, 'a');

int connect_from(const std::string& local, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{1, 0};  // a connect to a full backlog waits no longer than this
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, local.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

HostileClients::HostileClients(HostileOptions options) : options_(std::move(options)) {
  const int total = options_.idle + options_.slow;
  slots_.resize(static_cast<std::size_t>(total));
  for (int i = 0; i < total; ++i) {
    Slot& s = slots_[static_cast<std::size_t>(i)];
    s.slow = i >= options_.idle;
    const int address = s.slow ? options_.first_address + options_.addresses +
                                     (i - options_.idle) % options_.slow_addresses
                               : options_.first_address + i % options_.addresses;
    s.local = "127.0.0." + std::to_string(address);
    s.port = options_.ports[static_cast<std::size_t>(i) % options_.ports.size()];
    open(s);
  }
  thread_ = std::thread([this] { run(); });
}

HostileClients::~HostileClients() {
  stop();
}

void HostileClients::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  for (Slot& s : slots_) {
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
  }
  open_ = 0;
}

HostileCounts HostileClients::counts() const {
  return {connects_.load(), connect_failures_.load(), closed_by_server_.load(),
          bytes_dribbled_.load(), open_.load()};
}

bool HostileClients::open(Slot& slot) {
  slot.fd = connect_from(slot.local, slot.port);
  slot.sent = 0;
  if (slot.fd < 0) {
    ++connect_failures_;
    slot.next = Clock::now() + options_.reconnect_after;
    return false;
  }
  ++connects_;
  ++open_;
  slot.next = Clock::now() + options_.slow_every;
  return true;
}

void HostileClients::run() {
  std::vector<pollfd> fds;
  std::vector<Slot*> of;
  while (!stopping_) {
    fds.clear();
    of.clear();
    const auto now = Clock::now();
    for (Slot& s : slots_) {
      if (s.fd < 0) {
        if (now >= s.next) open(s);
        continue;
      }
      if (s.slow && now >= s.next) {
        const char byte = kEndlessRequest[s.sent % kEndlessRequest.size()];
        if (::send(s.fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
          ++s.sent;
          ++bytes_dribbled_;
        }
        s.next = now + options_.slow_every;
      }
      fds.push_back({s.fd, POLLIN, 0});
      of.push_back(&s);
    }
    if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      char buffer[512];
      const ssize_t n = ::recv(fds[i].fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (n > 0) continue;  // a 503 before the close: read on, the close follows
      ::close(of[i]->fd);
      of[i]->fd = -1;
      of[i]->next = Clock::now() + options_.reconnect_after;
      --open_;
      ++closed_by_server_;
    }
  }
}

ProbeResult probe(std::uint16_t port, const std::string& target,
                  std::chrono::milliseconds timeout) {
  const auto started = Clock::now();
  ProbeResult result;
  const int fd = connect_from("127.0.0.1", port);
  if (fd >= 0) {
    const std::string request =
        "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    std::string answer;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      const auto until = started + timeout;
      while (answer.find("\r\n") == std::string::npos) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        pollfd p{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        char buffer[512];
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        answer.append(buffer, static_cast<std::size_t>(n));
      }
    }
    ::close(fd);
    // "HTTP/1.1 200 OK"
    if (answer.rfind("HTTP/1.", 0) == 0 && answer.size() >= 12)
      result.status = std::atoi(answer.substr(9, 3).c_str());
  }
  result.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  return result;
}

}  // namespace depl::e2e
