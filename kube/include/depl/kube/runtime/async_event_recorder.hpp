// Records Events off the caller's thread, as client-go's event broadcaster does: post() queues
// the event and returns at once, and one sender thread hands the queue to an EventRecorder
// (spam filter, aggregation, the requests) in the order the events were posted. A reconcile
// therefore never waits for an Event's request, and an API server that is slow or down delays
// only the Events. The queue is bounded: when it is full, further events are dropped and counted
// (client-go drops too, at 1000 queued). Events are best effort; what a job's status says never
// depends on them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/kube/runtime/event_recorder.hpp"

namespace depl::kube {

struct AsyncEventRecorderOptions {
  std::size_t queue_size = 1000;  // events waiting to be sent; more are dropped
};

class AsyncEventRecorder {
 public:
  // The recorder and clock must outlive this object. Starts the sender thread.
  AsyncEventRecorder(EventRecorder& recorder, Clock& clock, AsyncEventRecorderOptions options = {});
  ~AsyncEventRecorder();  // stop(now): whatever is still queued is dropped
  AsyncEventRecorder(const AsyncEventRecorder&) = delete;
  AsyncEventRecorder& operator=(const AsyncEventRecorder&) = delete;

  // Queues an event about `object` (only its kind, apiVersion, name, namespace, uid and
  // resourceVersion are kept). Returns false when it was dropped: the queue is full, or
  // stop() was called.
  bool post(const nlohmann::json& object, EventType type, std::string reason, std::string message);

  // Blocks until every event posted before the call has been handed to the recorder (sent,
  // aggregated, dropped by its spam filter, or failed).
  void flush();

  // Stops taking events and sends what is queued until `deadline` (the injected clock's time,
  // checked before each event); what is left then is dropped. Joins the sender. Idempotent.
  void stop(Clock::TimePoint deadline);

  bool accepting() const;         // false once stop() was called
  std::uint64_t dropped() const;  // events dropped so far (queue full, or left at stop)

 private:
  struct Pending {
    nlohmann::json object;  // the reference fields only
    EventType type;
    std::string reason;
    std::string message;
  };
  void run();

  EventRecorder& recorder_;
  Clock& clock_;
  AsyncEventRecorderOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  bool sender_done_ = false;
  Clock::TimePoint deadline_{};
  std::uint64_t posted_ = 0, handled_ = 0, dropped_ = 0;
  std::mutex join_mutex_;  // stop() from two threads joins once
  std::thread sender_;
};

}  // namespace depl::kube
