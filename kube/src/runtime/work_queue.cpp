// WorkQueue: a FIFO of dirty keys, a processing set, and a time-ordered map of delayed keys.
// Delayed keys are promoted lazily (by whichever call comes next, and by get(), which sleeps on
// the clock until the earliest one is due), so no timer thread is needed.
#include "depl/kube/runtime/work_queue.hpp"

#include <algorithm>

namespace depl::kube {

WorkQueue::WorkQueue(Clock& clock, std::unique_ptr<QueueRateLimiter> rate_limiter, std::string name)
    : clock_(clock), rate_limiter_(std::move(rate_limiter)), name_(std::move(name)) {}

void WorkQueue::add(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  add_locked(key);
}

void WorkQueue::add_locked(const ObjectKey& key) {
  if (shutting_down_) return;
  if (!dirty_.insert(key).second) return;  // already queued (or parked behind processing)
  ++adds_total_;
  queued_at_.insert_or_assign(key, clock_.now());
  // A key in flight is parked: done() queues it again, so it is never processed twice at once.
  if (processing_.contains(key)) return;
  queue_.push_back(key);
  changed_.notify_one();
}

void WorkQueue::add_first(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  if (shutting_down_) return;
  if (processing_.contains(key)) {
    add_locked(key);  // parks it (or it is parked already)
    first_.insert(key);
    return;
  }
  if (dirty_.contains(key)) {
    const auto at = std::find(queue_.begin(), queue_.end(), key);
    if (at == queue_.begin()) return;
    if (at != queue_.end()) queue_.erase(at);
  } else {
    dirty_.insert(key);
    ++adds_total_;
    queued_at_.insert_or_assign(key, clock_.now());
  }
  queue_.push_front(key);
  changed_.notify_one();
}

void WorkQueue::add_after(const ObjectKey& key, std::chrono::nanoseconds delay) {
  std::lock_guard lock(mutex_);
  if (shutting_down_) return;
  if (delay <= std::chrono::nanoseconds::zero()) {
    add_locked(key);
    return;
  }
  const Clock::TimePoint ready = clock_.now() + delay;
  if (const auto found = waiting_index_.find(key); found != waiting_index_.end()) {
    if (found->second->first <= ready) return;  // already due sooner
    waiting_.erase(found->second);
    waiting_index_.erase(found);
  }
  waiting_index_.emplace(key, waiting_.emplace(ready, key));
  ++waiting_generation_;
  changed_.notify_all();  // a sleeping get() may need an earlier wake-up
}

void WorkQueue::add_rate_limited(const ObjectKey& key) {
  const std::chrono::nanoseconds delay = rate_limiter_->when(key);
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_) return;
    ++retries_total_;
  }
  add_after(key, delay);
}

void WorkQueue::forget(const ObjectKey& key) {
  rate_limiter_->forget(key);
}

int WorkQueue::num_requeues(const ObjectKey& key) {
  return rate_limiter_->num_requeues(key);
}

void WorkQueue::promote_due_locked() {
  const Clock::TimePoint now = clock_.now();
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    const ObjectKey key = waiting_.begin()->second;
    waiting_index_.erase(key);
    waiting_.erase(waiting_.begin());
    add_locked(key);
  }
}

std::optional<ObjectKey> WorkQueue::get(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (true) {
    // A stop request wins over queued keys: a worker told to stop (shutdown, lost leadership)
    // must not start another reconcile.
    if (stop.stop_requested()) return std::nullopt;
    promote_due_locked();
    if (!queue_.empty()) break;
    if (shutting_down_) return std::nullopt;
    const Clock::TimePoint deadline = waiting_.empty() ? Clock::kNever : waiting_.begin()->first;
    const std::uint64_t generation = waiting_generation_;
    clock_.wait_until(lock, changed_, deadline, stop, [&] {
      return !queue_.empty() || shutting_down_ || waiting_generation_ != generation;
    });
  }
  ObjectKey key = std::move(queue_.front());
  queue_.pop_front();
  const Clock::TimePoint now = clock_.now();
  if (const auto queued = queued_at_.find(key); queued != queued_at_.end()) {
    queue_latency_.observe(now - queued->second);
    queued_at_.erase(queued);
  }
  processing_.emplace(key, now);
  dirty_.erase(key);
  return key;
}

void WorkQueue::done(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  const auto found = processing_.find(key);
  if (found == processing_.end()) return;  // not handed out: nothing to finish
  work_duration_.observe(clock_.now() - found->second);
  processing_.erase(found);
  const bool first = first_.erase(key) > 0;
  if (dirty_.contains(key)) {
    // Re-added while in flight: now it may be handed out again.
    if (first) {
      queue_.push_front(key);
    } else {
      queue_.push_back(key);
    }
  }
  changed_.notify_all();  // wakes a getter, or shut_down_with_drain
}

void WorkQueue::shut_down() {
  std::lock_guard lock(mutex_);
  shutting_down_ = true;
  waiting_.clear();
  waiting_index_.clear();
  changed_.notify_all();
}

void WorkQueue::shut_down_with_drain(std::stop_token stop) {
  shut_down();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, stop, [&] { return queue_.empty() && processing_.empty(); });
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mutex_);
  return shutting_down_;
}

std::size_t WorkQueue::len() const {
  std::lock_guard lock(mutex_);
  const Clock::TimePoint now = clock_.now();
  // Count due delayed keys as ready without mutating (const): they are handed out next.
  std::size_t due = 0;
  for (auto it = waiting_.begin(); it != waiting_.end() && it->first <= now; ++it) {
    if (!dirty_.contains(it->second) && !processing_.contains(it->second)) ++due;
  }
  return queue_.size() + due;
}

WorkQueueMetrics WorkQueue::metrics() const {
  std::lock_guard lock(mutex_);
  WorkQueueMetrics metrics;
  metrics.name = name_;
  metrics.depth = queue_.size();
  metrics.waiting = waiting_.size();
  metrics.processing = processing_.size();
  metrics.adds_total = adds_total_;
  metrics.retries_total = retries_total_;
  metrics.queue_latency = queue_latency_;
  metrics.work_duration = work_duration_;
  const Clock::TimePoint now = clock_.now();
  for (const auto& [key, started] : processing_) {
    const double age = std::chrono::duration<double>(now - started).count();
    metrics.unfinished_work_seconds += age;
    metrics.longest_running_processor_seconds =
        std::max(metrics.longest_running_processor_seconds, age);
  }
  return metrics;
}

}  // namespace depl::kube
