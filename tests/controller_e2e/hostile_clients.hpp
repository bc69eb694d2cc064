// Clients that try to starve an HTTP server, on loopback only and bounded in number: idle
// connections that send nothing, and slow ones that send a request one byte at a time and never
// finish it. Both come from loopback addresses other than 127.0.0.1 (Linux routes all of 127/8 to
// lo), as strangers on other pods would, and reconnect whenever the server closes them. One
// thread drives them all with poll(); stop() (or the destructor) closes everything.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace depl::e2e {

struct HostileOptions {
  std::vector<std::uint16_t> ports;  // 127.0.0.1:<port>, spread round robin
  int idle = 500;                    // connections that send nothing
  int slow = 30;                     // connections that send one byte every `slow_every`
  std::chrono::milliseconds slow_every{std::chrono::seconds(2)};
  // Idle connections come from 127.0.0.<first_address> to 127.0.0.<first_address + addresses -
  // 1>, round robin; slow ones from the `slow_addresses` addresses after those.
  int first_address = 2;
  int addresses = 10;
  int slow_addresses = 4;
  // A connection the server closed is opened again after this long.
  std::chrono::milliseconds reconnect_after{std::chrono::milliseconds(250)};
};

struct HostileCounts {
  std::uint64_t connects = 0;  // connections opened (the first ones included)
  std::uint64_t connect_failures = 0;
  std::uint64_t closed_by_server = 0;
  std::uint64_t bytes_dribbled = 0;  // bytes the slow connections sent
  int open = 0;                      // connections open at the last look
};

class HostileClients {
 public:
  explicit HostileClients(HostileOptions options);
  ~HostileClients();
  HostileClients(const HostileClients&) = delete;
  HostileClients& operator=(const HostileClients&) = delete;

  void stop();
  HostileCounts counts() const;

 private:
  struct Slot {
    int fd = -1;
    bool slow = false;
    std::string local;
    std::uint16_t port = 0;
    std::chrono::steady_clock::time_point next{};  // reconnect or dribble at
    std::size_t sent = 0;
  };
  void run();
  bool open(Slot& slot);

  HostileOptions options_;
  std::vector<Slot> slots_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> connects_{0}, connect_failures_{0}, closed_by_server_{0},
      bytes_dribbled_{0};
  std::atomic<int> open_{0};
  std::thread thread_;
};

// One GET from 127.0.0.1 on a fresh connection, for probes: the status (0 when no answer came)
// and how long the answer took.
struct ProbeResult {
  int status = 0;
  std::chrono::milliseconds took{0};
};
ProbeResult probe(std::uint16_t port, const std::string& target,
                  std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace depl::e2e
