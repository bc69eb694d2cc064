// Shared pieces of the runtime tests: a Client over a ScriptedTransport on a FakeClock (no
// client-side retries or rate limiting, so every request the runtime makes is visible), and a
// wait-on-condition helper that never stands in for synchronisation with a fixed sleep.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/testing/scripted_transport.hpp"

namespace depl::kube::runtime_test {

struct ClientFixture {
  std::shared_ptr<testing::ScriptedTransport> transport =
      std::make_shared<testing::ScriptedTransport>();
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  RandomSource random{7};
  Client client = make_client();

  Client make_client() {
    ClientOptions options;
    options.clock = clock;
    options.random = std::make_shared<RandomSource>(11);
    options.rate_limit = {0, 0};
    options.retry.max_attempts = 1;
    return Client(transport, nullptr, options);
  }
};

// A counter other threads bump and the test waits on (with a generous real-time bound).
class Signal {
 public:
  void bump() {
    {
      std::lock_guard lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  bool wait_for(int at_least, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return count_ >= at_least; });
  }
  int count() const {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
};

inline nlohmann::json pod(const std::string& ns, const std::string& name,
                          const std::string& resource_version) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", resource_version}}}};
}

}  // namespace depl::kube::runtime_test
