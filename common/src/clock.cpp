// SystemClock forwards to the standard condition variable; FakeClock keeps a registry of waiters
// so advance() can wake exactly those whose deadline has passed.
//
// Lock order in FakeClock: the clock's own mutex is taken first and a waiter's mutex second
// (advance() notifies under the waiter's mutex so a wake-up cannot slip between the waiter's
// check and its block). Waiters therefore (de)register with their own lock released, and now()
// reads an atomic, so callers may ask for the time while holding any lock.
#include "depl/common/clock.hpp"

#include <algorithm>

namespace depl {

bool Clock::sleep_until(TimePoint deadline, std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any cv;
  std::unique_lock lock(mutex);
  wait_until(lock, cv, deadline, stop, [] { return false; });
  return !stop.stop_requested();
}

bool SystemClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                             TimePoint deadline, std::stop_token stop,
                             const std::function<bool()>& ready) {
  if (deadline == kNever) return cv.wait(lock, stop, ready);
  return cv.wait_until(lock, stop, deadline, ready);
}

namespace {
// 2026-01-01T00:00:00Z, a fixed start so timestamps in test expectations are stable.
constexpr std::chrono::seconds kDefaultWallStart{1767225600};
// A non-zero steady epoch catches code that treats time_point{} as "unset" by accident.
constexpr std::chrono::hours kSteadyEpoch{1000};
}  // namespace

FakeClock::FakeClock() : FakeClock(WallTimePoint(kDefaultWallStart)) {}

FakeClock::FakeClock(WallTimePoint wall_start)
    : steady_ticks_(std::chrono::duration_cast<Duration>(kSteadyEpoch).count()),
      wall_start_(wall_start),
      steady_start_ticks_(std::chrono::duration_cast<Duration>(kSteadyEpoch).count()) {}

Clock::TimePoint FakeClock::now() const {
  return TimePoint(Duration(steady_ticks_.load()));
}

Clock::WallTimePoint FakeClock::wall_now() const {
  const Duration elapsed(steady_ticks_.load() - steady_start_ticks_);
  return wall_start_ + std::chrono::duration_cast<WallTimePoint::duration>(elapsed);
}

bool FakeClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                           TimePoint deadline, std::stop_token stop,
                           const std::function<bool()>& ready) {
  if (ready()) return true;
  if (stop.stop_requested() || now() >= deadline) return false;

  lock.unlock();
  std::list<Sleeper>::iterator self;
  {
    std::lock_guard guard(mutex_);
    self = sleepers_.insert(sleepers_.end(), Sleeper{deadline, lock.mutex(), &cv});
  }
  sleepers_changed_.notify_all();
  lock.lock();

  cv.wait(lock, stop, [&] { return ready() || now() >= deadline; });

  lock.unlock();
  {
    std::lock_guard guard(mutex_);
    sleepers_.erase(self);
  }
  sleepers_changed_.notify_all();
  lock.lock();
  return ready();
}

void FakeClock::advance(Duration by) {
  std::lock_guard guard(mutex_);
  steady_ticks_ += by.count();
  const TimePoint current = now();
  for (const Sleeper& sleeper : sleepers_) {
    if (sleeper.deadline <= current) {
      std::lock_guard waiter(*sleeper.mutex);
      sleeper.cv->notify_all();
    }
  }
}

bool FakeClock::advance_to_next_deadline() {
  Duration step{};
  {
    std::lock_guard guard(mutex_);
    TimePoint earliest = kNever;
    for (const Sleeper& sleeper : sleepers_) earliest = std::min(earliest, sleeper.deadline);
    if (earliest == kNever || earliest <= now()) return false;
    step = earliest - now();
  }
  advance(step);
  return true;
}

std::size_t FakeClock::sleepers() const {
  std::lock_guard guard(mutex_);
  return sleepers_.size();
}

bool FakeClock::wait_for_sleepers(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock guard(mutex_);
  return sleepers_changed_.wait_for(guard, timeout, [&] { return sleepers_.size() >= n; });
}

}  // namespace depl
