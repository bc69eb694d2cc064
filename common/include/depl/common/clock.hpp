// Injected time: every component that waits, times out or stamps a time takes a `Clock&`, so
// tests drive time by hand with `FakeClock` (no real sleeps) and production uses `SystemClock`.
// Waits are interruptible through std::stop_token so shutdown never waits for a timer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <stop_token>

namespace depl {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;
  using WallTimePoint = std::chrono::system_clock::time_point;
  // "No deadline": wait only for the condition or a stop request.
  static constexpr TimePoint kNever = TimePoint::max();

  virtual ~Clock() = default;

  // Monotonic time for deadlines and durations. Thread-safe and lock-free for FakeClock, so it
  // may be called while holding any lock.
  virtual TimePoint now() const = 0;
  // Calendar time for timestamps written to the API (Lease renewTime, Event lastTimestamp).
  virtual WallTimePoint wall_now() const = 0;

  // Waits on `cv` (whose mutex `lock` holds) until `ready()` is true, `deadline` passes or `stop`
  // is requested; returns ready()'s last value. Like any condition wait, `lock` is released while
  // waiting, so `ready` must re-read shared state. Callers notify `cv` when `ready` may change.
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                          TimePoint deadline, std::stop_token stop,
                          const std::function<bool()>& ready) = 0;

  // Sleeps until `deadline`; returns false when woken early by a stop request.
  bool sleep_until(TimePoint deadline, std::stop_token stop);
  bool sleep_for(Duration duration, std::stop_token stop) {
    return sleep_until(now() + duration, std::move(stop));
  }
};

// The real clocks: std::chrono::steady_clock and system_clock.
class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  WallTimePoint wall_now() const override { return std::chrono::system_clock::now(); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                  TimePoint deadline, std::stop_token stop,
                  const std::function<bool()>& ready) override;
};

// A manual clock for tests. Time moves only through advance(); every waiter whose deadline has
// passed is woken. Tests synchronise with background threads through wait_for_sleepers(n): it
// returns once n threads are blocked in wait_until/sleep_until, so "advance, then check" needs
// no real sleep. Thread-safe.
class FakeClock final : public Clock {
 public:
  // Steady time starts at an arbitrary non-zero epoch; wall time starts at `wall_start`
  // (default 2026-01-01T00:00:00Z) and moves with steady time.
  FakeClock();
  explicit FakeClock(WallTimePoint wall_start);

  TimePoint now() const override;
  WallTimePoint wall_now() const override;
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                  TimePoint deadline, std::stop_token stop,
                  const std::function<bool()>& ready) override;

  // Moves time forward and wakes the waiters whose deadline is now due.
  void advance(Duration by);
  // Advances exactly to the earliest pending deadline (no-op when none); returns whether it moved.
  bool advance_to_next_deadline();

  // Number of threads currently blocked in a wait on this clock.
  std::size_t sleepers() const;
  // Blocks (in real time, at most `timeout`) until at least `n` threads are waiting on this
  // clock. Returns false on timeout, which a test should treat as failure.
  bool wait_for_sleepers(std::size_t n,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

 private:
  struct Sleeper {
    TimePoint deadline;
    std::mutex* mutex;
    std::condition_variable_any* cv;
  };

  std::atomic<Duration::rep> steady_ticks_;
  WallTimePoint wall_start_;
  Duration::rep steady_start_ticks_;
  mutable std::mutex mutex_;  // guards sleepers_; never taken while a caller's lock is held
  mutable std::condition_variable sleepers_changed_;
  std::list<Sleeper> sleepers_;
};

}  // namespace depl
