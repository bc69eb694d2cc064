// The watcher: list-then-watch for one resource type, as an explicit state machine (kube-rs's
// watcher, client-go's reflector). It turns the API's list + watch protocol into a stream of
// WatcherEvents that a store can apply, hiding every recoverable failure:
//
//   Empty ──list page──▶ Listing ──last page──▶ Listed(rv) ──watch──▶ Watching(rv, stream)
//     ▲                    │ 410 (continue expired)                      │ event: rv = event's rv
//     └────────────────────┴──────────── 410 (response or ERROR event) ◀─┤ BOOKMARK: rv only
//                                        stream end / other error ──▶ Listed(rv) (re-watch)
//
// A 410 never retries the same resourceVersion: it relists from scratch (resourceVersion "",
// a consistent read, never "0"). ERROR events carry no resourceVersion and never move it.
// Other failures re-watch from the last resourceVersion after a jittered exponential backoff
// on the injected clock. Each watch asks for bookmarks and a random timeoutSeconds in
// [300, 600) so many watchers do not reconnect in lockstep.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/field_filter.hpp"
#include "depl/kube/resource.hpp"
#include "depl/kube/watch_stream.hpp"

namespace depl::kube {

struct WatcherEvent {
  enum class Type {
    InitStarted,  // a (re)list begins: buffer the InitApply objects that follow
    InitApply,    // one object of the list
    InitDone,     // the list is complete: replace the store with the buffered objects
    Apply,        // added or modified while watching
    Delete,       // deleted while watching (object is the last state)
  };
  Type type = Type::InitStarted;
  nlohmann::json object;  // for InitApply, Apply and Delete
};

const char* to_string(WatcherEvent::Type type);

struct WatcherOptions {
  std::string namespace_;  // "" = all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  std::int64_t page_size = 500;  // list `limit`; 0 disables paging
  // Reconnect backoff: initial * 2^n capped at max, each delay * (1 + jitter * U[0,1)).
  std::chrono::milliseconds backoff_initial{800};
  std::chrono::milliseconds backoff_max{30'000};
  double backoff_jitter = 1.0;
  // Server-side watch timeout drawn uniformly from [min, 2*min) (client-go: 5 min * (1+rand)).
  std::chrono::seconds watch_timeout_min{300};
  // Watch events are decoded without their objects' metadata.managedFields, for a cache that
  // drops them anyway (strip_managed_fields): they are not built only to be thrown away. Objects
  // from lists keep them; the cache's transform removes those.
  bool drop_managed_fields = false;
  // Listed objects and those of watch events are built with only the members this keeps
  // (field_filter.hpp): for a cache whose transform keeps a few fields of each object, what it
  // would throw away is skipped while decoding instead of being built. It must keep at least what
  // the transform reads; the watcher adds metadata.name, namespace and resourceVersion, which it
  // and the store need. BOOKMARK and ERROR events are not filtered; the transform still runs on
  // every object.
  std::optional<FieldFilter> prefilter;
};

// Counters for metrics and tests.
struct WatcherStats {
  std::uint64_t lists = 0;    // list requests that succeeded (pages)
  std::uint64_t relists = 0;  // restarts from Empty after a 410
  std::uint64_t watches = 0;  // watch streams opened
  std::uint64_t errors = 0;   // failures followed by a backoff
  std::uint64_t bookmarks = 0;
  std::string resource_version;  // the version the next watch resumes from
};

// Not thread-safe: one thread calls next(). The client, clock and random source must outlive
// the watcher.
class Watcher {
 public:
  enum class State { Empty, Listing, Listed, Watching };

  Watcher(Client& client, ResourceType type, WatcherOptions options, Clock& clock,
          RandomSource& random);
  ~Watcher();

  // The next event; blocks through list pages, watch reads, backoffs and reconnects.
  // Returns nullopt only once `stop` is requested (a blocked read is cancelled promptly).
  std::optional<WatcherEvent> next(std::stop_token stop);

  State state() const { return state_; }
  const WatcherStats& stats() const { return stats_; }
  const ResourceType& type() const { return type_; }

 private:
  // One transition; returns an event when the step produced one.
  std::optional<WatcherEvent> step(std::stop_token stop);
  std::optional<WatcherEvent> step_list();
  void step_open_watch();
  std::optional<WatcherEvent> step_watch(std::stop_token stop);
  void relist();
  // Sleeps the next backoff delay; false when stopped.
  bool back_off(std::stop_token stop);
  void reset_backoff() { failures_ = 0; }

  Client& client_;
  ResourceType type_;
  WatcherOptions options_;
  std::optional<FieldFilter> object_filter_;  // the prefilter and what the watcher needs
  Clock& clock_;
  RandomSource& random_;

  State state_ = State::Empty;
  std::string continue_token_;
  std::string resource_version_;
  std::deque<nlohmann::json> pending_;  // list items not yet returned
  bool list_complete_ = false;          // the last page arrived; InitDone after pending_
  std::unique_ptr<WatchStream> stream_;
  bool watch_made_progress_ = false;  // an event arrived on the current list's watches
  std::uint64_t events_on_stream_ = 0;
  int failures_ = 0;
  bool backoff_due_ = false;  // the next step must wait first
  WatcherStats stats_;
};

}  // namespace depl::kube
