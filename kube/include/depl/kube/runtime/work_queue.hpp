// The controller's work queue (client-go workqueue semantics): keys, not events, so a burst of
// changes to one object costs one reconcile. A key is queued at most once ("dirty"), and a key
// being processed is never handed to a second worker: re-adding it while in flight parks it
// until done(), then it is queued again. Delayed and rate-limited adds use the injected clock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "depl/common/clock.hpp"
#include "depl/kube/runtime/duration_histogram.hpp"
#include "depl/kube/runtime/object_key.hpp"
#include "depl/kube/runtime/queue_rate_limiter.hpp"

namespace depl::kube {

// A consistent copy of the queue's counters, for the metrics endpoint
// (workqueue_depth, workqueue_adds_total, workqueue_retries_total, ...).
struct WorkQueueMetrics {
  std::string name;
  std::size_t depth = 0;               // keys ready to be handed out
  std::size_t waiting = 0;             // keys scheduled by add_after / add_rate_limited
  std::size_t processing = 0;          // keys handed out and not yet done()
  std::uint64_t adds_total = 0;        // accepted add() calls (duplicates not counted)
  std::uint64_t retries_total = 0;     // add_rate_limited() calls
  DurationHistogram queue_latency;     // time from queued to handed out
  DurationHistogram work_duration;     // time from handed out to done()
  double unfinished_work_seconds = 0;  // summed age of the keys being processed
  double longest_running_processor_seconds = 0;
};

// Thread-safe. The clock and the rate limiter must outlive the queue.
class WorkQueue {
 public:
  WorkQueue(Clock& clock, std::unique_ptr<QueueRateLimiter> rate_limiter, std::string name = "");
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `key` unless it is already queued; ignored after shut_down().
  void add(const ObjectKey& key);
  // Queues `key` at the front, ahead of every key waiting (moving it there when it is queued
  // already): for the one key whose turn it is, which must not wait behind routine work (as a
  // scheduler's next admission; controller-runtime's priority queue does the same with a
  // priority). A key in flight goes to the front when done().
  void add_first(const ObjectKey& key);
  // Queues `key` once `delay` has passed on the clock. When the key is already waiting, the
  // earlier of the two times wins.
  void add_after(const ObjectKey& key, std::chrono::nanoseconds delay);
  // add_after with the rate limiter's delay; counts as a retry.
  void add_rate_limited(const ObjectKey& key);
  // Clears the key's failure history in the rate limiter (call after a success).
  void forget(const ObjectKey& key);
  int num_requeues(const ObjectKey& key);

  // Hands out the next key, blocking until one is ready. Returns nullopt when the queue is shut
  // down and has nothing left to hand out, or as soon as `stop` is requested (even with keys
  // queued). Every key returned must be passed to done() exactly once.
  std::optional<ObjectKey> get(std::stop_token stop = {});
  void done(const ObjectKey& key);

  // Stops accepting keys and drops the delayed ones; get() still hands out keys already queued,
  // then returns nullopt.
  void shut_down();
  // shut_down(), then waits until workers have drained the queued keys and finished the ones
  // in flight (or `stop` is requested). Needs workers calling get()/done() to make progress.
  void shut_down_with_drain(std::stop_token stop = {});
  bool shutting_down() const;

  std::size_t len() const;  // keys ready to be handed out
  WorkQueueMetrics metrics() const;

 private:
  void add_locked(const ObjectKey& key);
  void promote_due_locked();

  Clock& clock_;
  std::unique_ptr<QueueRateLimiter> rate_limiter_;
  std::string name_;

  mutable std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<ObjectKey> queue_;
  std::unordered_set<ObjectKey, ObjectKeyHash> dirty_;
  std::unordered_set<ObjectKey, ObjectKeyHash> first_;  // parked keys that done() puts in front
  std::unordered_map<ObjectKey, Clock::TimePoint, ObjectKeyHash> processing_;  // -> start
  std::unordered_map<ObjectKey, Clock::TimePoint, ObjectKeyHash> queued_at_;
  std::multimap<Clock::TimePoint, ObjectKey> waiting_;  // ready time -> key
  std::unordered_map<ObjectKey, std::multimap<Clock::TimePoint, ObjectKey>::iterator, ObjectKeyHash>
      waiting_index_;
  std::uint64_t waiting_generation_ = 0;  // bumped when waiting_ gains an entry
  bool shutting_down_ = false;

  std::uint64_t adds_total_ = 0;
  std::uint64_t retries_total_ = 0;
  DurationHistogram queue_latency_;
  DurationHistogram work_duration_;
};

}  // namespace depl::kube
