// Thread-safe event queue of one watch.
#include "depl/devcluster/watch_subscription.hpp"

namespace depl::devcluster {

nlohmann::json WatchEvent::to_json() const {
  return {{"type", type}, {"object", object ? *object : nlohmann::json::object()}};
}

std::optional<WatchEvent> WatchSubscription::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !queue_.empty() || closed_; });
  if (queue_.empty()) return std::nullopt;
  WatchEvent event = std::move(queue_.front());
  queue_.pop_front();
  return event;
}

std::vector<WatchEvent> WatchSubscription::drain() {
  std::lock_guard lock(mutex_);
  std::vector<WatchEvent> events(std::make_move_iterator(queue_.begin()),
                                 std::make_move_iterator(queue_.end()));
  queue_.clear();
  return events;
}

void WatchSubscription::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  ready_.notify_all();
  notify();
}

void WatchSubscription::close_after_delivery() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  ready_.notify_all();
}

bool WatchSubscription::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

void WatchSubscription::set_notifier(std::function<void()> notify) {
  std::lock_guard lock(mutex_);
  notify_ = std::move(notify);
}

void WatchSubscription::push(WatchEvent event) {
  // No wake-up here: the store pushes under its lock, and waking a consumer is a system call.
  // notify() wakes it once the lock is released.
  event.queued = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (closed_) return;
  queue_.push_back(std::move(event));
}

void WatchSubscription::notify() {
  ready_.notify_all();
  std::function<void()> notify;
  {
    std::lock_guard lock(mutex_);
    notify = notify_;
  }
  if (notify) notify();
}

}  // namespace depl::devcluster
