#include "depl/kube/runtime/async_event_recorder.hpp"

#include <spdlog/spdlog.h>

namespace depl::kube {

namespace {

// What an Event's involvedObject needs: a job's spec and status stay out of the queue.
nlohmann::json reference_of(const nlohmann::json& object) {
  nlohmann::json ref = nlohmann::json::object();
  for (const char* key : {"apiVersion", "kind"}) {
    auto it = object.find(key);
    if (it != object.end()) ref[key] = *it;
  }
  auto meta = object.find("metadata");
  if (meta != object.end() && meta->is_object()) {
    nlohmann::json kept = nlohmann::json::object();
    for (const char* key : {"name", "namespace", "uid", "resourceVersion"}) {
      auto it = meta->find(key);
      if (it != meta->end()) kept[key] = *it;
    }
    ref["metadata"] = std::move(kept);
  }
  return ref;
}

}  // namespace

AsyncEventRecorder::AsyncEventRecorder(EventRecorder& recorder, Clock& clock,
                                       AsyncEventRecorderOptions options)
    : recorder_(recorder), clock_(clock), options_(options) {
  sender_ = std::thread([this] { run(); });
}

AsyncEventRecorder::~AsyncEventRecorder() { stop(clock_.now()); }

bool AsyncEventRecorder::post(const nlohmann::json& object, EventType type, std::string reason,
                              std::string message) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= options_.queue_size) {
      // One line for the first drop and every 100th after it: a flood of events is not also a
      // flood of log lines.
      if (dropped_++ % 100 == 0) {
        spdlog::warn(
            "msg=\"event dropped: {}\" reason={} queued={} dropped_so_far={} (Events are best "
            "effort; the object's status and conditions still say what happened)",
            stopping_ ? "event recording has stopped" : "too many events waiting to be sent",
            reason, queue_.size(), dropped_);
      }
      return false;
    }
    queue_.push_back({reference_of(object), type, std::move(reason), std::move(message)});
    ++posted_;
  }
  changed_.notify_all();
  return true;
}

void AsyncEventRecorder::flush() {
  std::unique_lock lock(mutex_);
  const std::uint64_t target = posted_;
  changed_.wait(lock, [&] { return handled_ >= target || sender_done_; });
}

void AsyncEventRecorder::stop(Clock::TimePoint deadline) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      deadline_ = deadline;
    }
  }
  changed_.notify_all();
  std::lock_guard join(join_mutex_);
  if (sender_.joinable()) sender_.join();
}

bool AsyncEventRecorder::accepting() const {
  std::lock_guard lock(mutex_);
  return !stopping_;
}

std::uint64_t AsyncEventRecorder::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void AsyncEventRecorder::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, nothing left
    if (stopping_ && clock_.now() >= deadline_) {
      const std::size_t left = queue_.size();
      dropped_ += left;
      handled_ += left;
      queue_.clear();
      spdlog::warn("msg=\"events not sent before the shutdown deadline\" dropped={}", left);
      break;
    }
    Pending event = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    auto recorded = recorder_.record(event.object, event.type, event.reason, event.message);
    if (!recorded) {
      spdlog::warn("msg=\"event not recorded\" reason={} error=\"{}\"", event.reason,
                   recorded.error().message);
    }
    lock.lock();
    ++handled_;
    changed_.notify_all();
  }
  sender_done_ = true;
  changed_.notify_all();
}

}  // namespace depl::kube
