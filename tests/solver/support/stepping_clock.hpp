// A clock that moves by `tick` every time it is read: a solve's time budget runs out after a
// known number of checks, with no real time passing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>

#include "depl/common/clock.hpp"

namespace depl::testing {

class SteppingClock final : public Clock {
 public:
  explicit SteppingClock(Duration tick) : tick_(tick) {}
  TimePoint now() const override {
    return TimePoint{} + tick_ * reads_.fetch_add(1, std::memory_order_relaxed);
  }
  WallTimePoint wall_now() const override { return {}; }
  bool wait_until(std::unique_lock<std::mutex>&, std::condition_variable_any&, TimePoint,
                  std::stop_token, const std::function<bool()>& ready) override {
    return ready();
  }
  long reads() const { return reads_.load(); }

 private:
  Duration tick_;
  mutable std::atomic<long> reads_{0};
};

}  // namespace depl::testing
