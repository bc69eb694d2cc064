// One open watch: the store pushes events into it from writer threads and the HTTP layer (or an
// in-process consumer such as the scheduler) drains them. Thread-safe; the queue is unbounded
// but a subscription can be closed by either side (server shutdown, fault injection, client gone).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::devcluster {

// {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...}. Objects are shared between
// all subscribers of an event and must not be modified.
struct WatchEvent {
  std::string type;
  std::shared_ptr<const nlohmann::json> object;
  // When the store queued it on this subscription (set by push): an in-process consumer that
  // drains in batches still knows when each event happened, without waking for each one.
  std::chrono::steady_clock::time_point queued{};

  // The wire form, one line of a watch stream without the trailing newline.
  nlohmann::json to_json() const;
};

class WatchSubscription {
 public:
  WatchSubscription() = default;
  WatchSubscription(const WatchSubscription&) = delete;
  WatchSubscription& operator=(const WatchSubscription&) = delete;

  // Blocks until an event is queued, the subscription is closed, or `timeout` passes. Returns
  // nullopt on timeout and once closed and drained.
  std::optional<WatchEvent> next(std::chrono::milliseconds timeout);
  // Everything queued right now (never blocks).
  std::vector<WatchEvent> drain();
  // Closed by the consumer (stops delivery; the store forgets it) or by the store (the stream
  // must end after the queued events are written: dropped watches, ERROR 410, shutdown).
  void close();
  bool closed() const;
  // Called (from the writer's thread, with no store lock held) after events were queued or the
  // subscription was closed. Meant for waking an async writer, e.g. posting to an io_context;
  // it may call drain(). Set it before events can arrive (right after ApiStore::watch).
  void set_notifier(std::function<void()> notify);

  // Store side. push() queues without waking a consumer blocked in next(): notify() wakes it
  // (and calls the notifier), which the store does once its lock is released.
  void push(WatchEvent event);
  // close() without calling the notifier (the store calls notify() once its lock is released).
  void close_after_delivery();
  void notify();

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<WatchEvent> queue_;
  bool closed_ = false;
  std::function<void()> notify_;
};

}  // namespace depl::devcluster
