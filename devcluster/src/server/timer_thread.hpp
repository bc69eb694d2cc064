// One thread that runs callbacks at deadlines: watch timeouts, periodic bookmarks, the end of an
// injected outage, SIGKILL after a grace period. Callbacks run on the timer thread, one at a
// time, and must be short (post real work elsewhere).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace depl::devcluster {

class TimerThread {
 public:
  using Clock = std::chrono::steady_clock;
  using Id = std::uint64_t;

  TimerThread();
  ~TimerThread();  // drops pending callbacks without running them
  TimerThread(const TimerThread&) = delete;
  TimerThread& operator=(const TimerThread&) = delete;

  Id schedule_at(Clock::time_point when, std::function<void()> fn);
  Id schedule_after(std::chrono::milliseconds delay, std::function<void()> fn) {
    return schedule_at(Clock::now() + delay, std::move(fn));
  }
  // Returns false when the callback already ran (or is running) or never existed.
  bool cancel(Id id);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::multimap<Clock::time_point, std::pair<Id, std::function<void()>>> pending_;
  Id next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace depl::devcluster
