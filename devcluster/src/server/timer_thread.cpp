#include "server/timer_thread.hpp"

namespace depl::devcluster {

TimerThread::TimerThread() : thread_([this] { run(); }) {}

TimerThread::~TimerThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    pending_.clear();
  }
  changed_.notify_all();
  thread_.join();
}

TimerThread::Id TimerThread::schedule_at(Clock::time_point when, std::function<void()> fn) {
  Id id;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    pending_.emplace(when, std::make_pair(id, std::move(fn)));
  }
  changed_.notify_all();
  return id;
}

bool TimerThread::cancel(Id id) {
  std::lock_guard lock(mutex_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.first == id) {
      pending_.erase(it);
      return true;
    }
  }
  return false;
}

void TimerThread::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (pending_.empty()) {
      changed_.wait(lock);
      continue;
    }
    auto first = pending_.begin();
    if (first->first > Clock::now()) {
      // A copy: wait_until reads the deadline again after waking, when cancel() or the
      // destructor may have erased the entry it came from (ASan: heap-use-after-free).
      const Clock::time_point deadline = first->first;
      changed_.wait_until(lock, deadline);
      continue;
    }
    auto fn = std::move(first->second.second);
    pending_.erase(first);
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace depl::devcluster
