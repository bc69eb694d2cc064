// Records core/v1 Events about objects (what `kubectl describe` shows), like client-go's legacy
// recorder: an identical event (same object, reason, message, type, source) seen again within
// the aggregation window bumps `count` and `lastTimestamp` with a merge PATCH instead of
// creating another object, and a per-object spam filter (burst 25, then one per 300 s) keeps a
// hot loop from flooding the API server. Time comes from the injected clock.
#pragma once

#include <chrono>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/kube/api_error.hpp"
#include "depl/kube/client.hpp"

namespace depl::kube {

enum class EventType { Normal, Warning };

struct EventRecorderOptions {
  std::string component;  // source.component and reportingComponent, e.g. "depl-controller"
  std::string host;       // source.host (node name), optional
  std::string reporting_instance;  // reportingInstance, e.g. the pod name
  std::chrono::seconds aggregation_window{600};
  int spam_burst = 25;
  std::chrono::seconds spam_refill_interval{300};  // one more event allowed per interval
  std::size_t cache_size = 4096;                   // aggregation entries kept (LRU)
};

enum class EventOutcome {
  Created,     // a new Event object was created
  Aggregated,  // an existing Event's count was bumped
  Dropped,     // the spam filter dropped it
};

// Thread-safe. Each record() makes at most two requests, synchronously; callers usually ignore
// the result (an event is best effort) but it is returned for logging and tests.
class EventRecorder {
 public:
  // The client and clock must outlive the recorder.
  EventRecorder(Client& client, Clock& clock, EventRecorderOptions options);

  // `object` is the involved object (needs metadata.name; kind/apiVersion/uid when present).
  // Cluster-scoped objects get their events in namespace "default", as kubectl expects.
  Expected<EventOutcome, ApiError> record(const nlohmann::json& object, EventType type,
                                          std::string_view reason, std::string_view message);

 private:
  struct Aggregate {
    std::string event_namespace;
    std::string event_name;
    std::int64_t count = 0;
    Clock::TimePoint last_seen{};
    std::list<std::string>::iterator lru;
  };
  struct SpamBucket {
    double tokens = 0;
    Clock::TimePoint last{};
  };

  bool allow_by_spam_filter(const std::string& key, Clock::TimePoint now);
  void remember(const std::string& key, Aggregate aggregate);

  Client& client_;
  Clock& clock_;
  EventRecorderOptions options_;
  std::mutex mutex_;  // guards the maps below; never held across a request
  std::unordered_map<std::string, Aggregate> aggregates_;
  std::list<std::string> lru_;  // most recent first
  std::unordered_map<std::string, SpamBucket> spam_;
};

}  // namespace depl::kube
