// EventRecorder: spam filter, then aggregation of identical events, then create or patch.
#include "depl/kube/runtime/event_recorder.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"

namespace depl::kube {

namespace {

const char* type_name(EventType type) {
  return type == EventType::Warning ? "Warning" : "Normal";
}

}  // namespace

EventRecorder::EventRecorder(Client& client, Clock& clock, EventRecorderOptions options)
    : client_(client), clock_(clock), options_(std::move(options)) {}

bool EventRecorder::allow_by_spam_filter(const std::string& key, Clock::TimePoint now) {
  const double refill_seconds =
      std::max(1e-9, std::chrono::duration<double>(options_.spam_refill_interval).count());
  if (spam_.size() >= std::max<std::size_t>(1, options_.cache_size) && !spam_.contains(key)) {
    // Bound the map: a bucket that has refilled completely is the same as no bucket at all.
    const double full_after = refill_seconds * options_.spam_burst;
    std::erase_if(spam_, [&](const auto& entry) {
      return std::chrono::duration<double>(now - entry.second.last).count() >= full_after;
    });
  }
  auto [it, inserted] = spam_.try_emplace(key);
  SpamBucket& bucket = it->second;
  if (inserted) {
    bucket.tokens = options_.spam_burst;
    bucket.last = now;
  }
  const double elapsed = std::chrono::duration<double>(now - bucket.last).count();
  bucket.tokens = std::min<double>(options_.spam_burst, bucket.tokens + elapsed / refill_seconds);
  bucket.last = now;
  if (bucket.tokens < 1.0) return false;
  bucket.tokens -= 1.0;
  return true;
}

void EventRecorder::remember(const std::string& key, Aggregate aggregate) {
  if (auto found = aggregates_.find(key); found != aggregates_.end()) {
    lru_.erase(found->second.lru);
    aggregates_.erase(found);
  }
  lru_.push_front(key);
  aggregate.lru = lru_.begin();
  aggregates_.insert_or_assign(key, std::move(aggregate));
  while (aggregates_.size() > std::max<std::size_t>(1, options_.cache_size)) {
    aggregates_.erase(lru_.back());
    lru_.pop_back();
  }
}

Expected<EventOutcome, ApiError> EventRecorder::record(const nlohmann::json& object, EventType type,
                                                       std::string_view reason,
                                                       std::string_view message) {
  const nlohmann::json& metadata = json_object(object, "metadata");
  const std::string name = json_string(metadata, "name");
  if (name.empty()) {
    return unexpected(ApiError::transport(
        ApiError::kInvalidRequest, "event recorder: the involved object has no metadata.name"));
  }
  nlohmann::json involved = {{"kind", json_string(object, "kind")},
                             {"apiVersion", json_string(object, "apiVersion")},
                             {"name", name}};
  const std::string object_namespace = json_string(metadata, "namespace");
  if (!object_namespace.empty()) involved["namespace"] = object_namespace;
  if (auto uid = json_string(metadata, "uid"); !uid.empty()) involved["uid"] = uid;
  if (auto rv = json_string(metadata, "resourceVersion"); !rv.empty()) {
    involved["resourceVersion"] = rv;
  }
  const std::string event_namespace = object_namespace.empty() ? "default" : object_namespace;

  // client-go keys the spam filter by source and object, the aggregation by everything.
  const std::string object_key =
      fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", options_.component, options_.host,
                  involved.value("apiVersion", ""), involved.value("kind", ""), object_namespace,
                  name, involved.value("uid", ""));
  const std::string event_key =
      fmt::format("{}\x1f{}\x1f{}\x1f{}", object_key, type_name(type), reason, message);

  const Clock::TimePoint now = clock_.now();
  const std::string timestamp = format_rfc3339(clock_.wall_now());
  std::optional<Aggregate> previous;
  {
    std::lock_guard lock(mutex_);
    if (!allow_by_spam_filter(object_key, now)) {
      spdlog::debug("msg=\"event dropped by spam filter\" object={}/{} reason={}", object_namespace,
                    name, reason);
      return EventOutcome::Dropped;
    }
    if (auto found = aggregates_.find(event_key);
        found != aggregates_.end() &&
        now - found->second.last_seen <= options_.aggregation_window) {
      previous = found->second;
    }
  }

  if (previous) {
    const std::int64_t count = previous->count + 1;
    const nlohmann::json patch = {{"count", count}, {"lastTimestamp", timestamp}};
    auto patched = client_.patch(resources::events(), previous->event_namespace,
                                 previous->event_name, PatchType::Merge, patch);
    if (patched) {
      Aggregate updated = *previous;
      updated.count = count;
      updated.last_seen = now;
      std::lock_guard lock(mutex_);
      remember(event_key, std::move(updated));
      return EventOutcome::Aggregated;
    }
    if (!patched.error().is_not_found()) return unexpected(std::move(patched).error());
    // The Event was garbage-collected (TTL 1 h by default): start a new one.
  }

  const auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.wall_now().time_since_epoch())
          .count();
  const std::string event_name = fmt::format("{}.{:x}", name, static_cast<std::uint64_t>(nanos));
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", event_name}, {"namespace", event_namespace}}},
      {"involvedObject", involved},
      {"reason", std::string(reason)},
      {"message", std::string(message)},
      {"type", type_name(type)},
      {"source", {{"component", options_.component}}},
      {"firstTimestamp", timestamp},
      {"lastTimestamp", timestamp},
      {"count", 1},
      // core/v1 spells events.k8s.io's reportingController as reportingComponent.
      {"reportingComponent", options_.component},
      {"reportingInstance", options_.reporting_instance}};
  if (!options_.host.empty()) event["source"]["host"] = options_.host;
  WriteOptions write;
  write.return_object = false;  // only its name is needed, and that is ours
  auto created = client_.create(resources::events(), event_namespace, event, write);
  if (!created) return unexpected(std::move(created).error());
  Aggregate aggregate;
  aggregate.event_namespace = event_namespace;
  aggregate.event_name = event_name;
  aggregate.count = 1;
  aggregate.last_seen = now;
  std::lock_guard lock(mutex_);
  remember(event_key, std::move(aggregate));
  return EventOutcome::Created;
}

}  // namespace depl::kube
