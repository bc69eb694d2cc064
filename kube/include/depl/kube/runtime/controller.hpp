// The controller loop: informers feed keys into a WorkQueue, N worker threads hand each key to
// the reconciler, and the reconciler's outcome decides whether and when the key comes back.
//
// Outcome rules (the one place they are defined; each has a counter in ControllerMetrics):
//   reconciler returns                  queue action                           metric
//   ---------------------------------  -------------------------------------  ------------------
//   Action::await_change()             forget(key)                            success
//   Action::requeue_after(d), d > 0    forget(key), then add_after(key, d)    requeue_after
//   Action::requeue_after(d), d <= 0   add_rate_limited(key) (no forget)      requeue
//   ReconcileError                     add_rate_limited(key): per-key         error
//                                      exponential backoff maxed with the
//                                      overall bucket; the failure count is
//                                      kept until a later success forgets it
//   (exception escaping the reconciler is a bug: logged, counted, treated as an error)
// Keys are namespace/name only: the reconciler reads current state from the caches, so missed
// or coalesced events cannot make it act on stale data (level-triggered).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/kube/runtime/duration_histogram.hpp"
#include "depl/kube/runtime/informer.hpp"
#include "depl/kube/runtime/object_key.hpp"
#include "depl/kube/runtime/work_queue.hpp"

namespace depl::kube {

// What a successful reconcile wants next.
class Action {
 public:
  // Reconcile again after `delay` even if nothing changes (polling external state).
  static Action requeue_after(std::chrono::nanoseconds delay) { return Action(delay); }
  // Nothing to do until a watched object changes.
  static Action await_change() { return Action(std::nullopt); }

  const std::optional<std::chrono::nanoseconds>& requeue() const { return requeue_; }
  bool operator==(const Action&) const = default;

 private:
  explicit Action(std::optional<std::chrono::nanoseconds> requeue) : requeue_(requeue) {}
  std::optional<std::chrono::nanoseconds> requeue_;
};

struct ReconcileError {
  std::string message;  // logged with the key; name the object and what failed
};

// Called concurrently for different keys, never concurrently for the same key. `stop` is
// requested on shutdown or lost leadership: long reconciles should give up promptly.
using Reconciler =
    std::function<Expected<Action, ReconcileError>(const ObjectKey& key, std::stop_token stop)>;

// Maps a watched object to the keys to reconcile (possibly none).
using KeyMapper = std::function<std::vector<ObjectKey>(const nlohmann::json& object)>;

// The owner key of `object` through its controller ownerReference (controller: true) when the
// owner has this apiVersion's group and this kind (the version may differ: controller-runtime
// compares group and kind). Owners live in the object's namespace, or are cluster-scoped when
// `owner_namespaced` is false.
std::optional<ObjectKey> controller_owner_key(const nlohmann::json& object,
                                              std::string_view owner_api_version,
                                              std::string_view owner_kind,
                                              bool owner_namespaced = true);

// The uid of `object`'s controller ownerReference (the one with `controller: true`; Kubernetes
// allows one), whatever its kind; "" without one.
std::string controller_uid(const nlohmann::json& object);

struct ControllerOptions {
  std::string name = "controller";
  int workers = 1;
  // Null: default_controller_rate_limiter(clock).
  std::unique_ptr<QueueRateLimiter> rate_limiter;
};

struct ControllerMetrics {
  std::string name;
  std::uint64_t reconcile_success = 0;        // await_change
  std::uint64_t reconcile_requeue_after = 0;  // requeue_after(d > 0)
  std::uint64_t reconcile_requeue = 0;        // requeue_after(d <= 0)
  std::uint64_t reconcile_errors = 0;         // ReconcileError or exception
  int active_workers = 0;
  DurationHistogram reconcile_time;
  WorkQueueMetrics queue;
};

class Controller {
 public:
  // The clock must outlive the controller.
  Controller(Reconciler reconciler, Clock& clock, ControllerOptions options = {});
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Every add/update/delete of the primary kind enqueues the object's own key.
  void watch_primary(Informer& informer);
  // Changes to owned objects enqueue their controller owner (see controller_owner_key).
  void watch_owned(Informer& informer, std::string owner_api_version, std::string owner_kind,
                   bool owner_namespaced = true);
  // Any other relation: the mapper decides which keys an object's change concerns.
  void watch_mapped(Informer& informer, KeyMapper mapper);

  // Runs `workers` threads until `stop`; then shuts the queue down, lets in-flight reconciles
  // finish (their stop token is requested) and returns. Call once.
  void run(std::stop_token stop);

  WorkQueue& queue() { return queue_; }
  ControllerMetrics metrics() const;

 private:
  void worker(std::stop_token stop);
  void process(const ObjectKey& key, std::stop_token stop);

  Reconciler reconciler_;
  Clock& clock_;
  std::string name_;
  int workers_;
  WorkQueue queue_;

  mutable std::mutex metrics_mutex_;
  std::uint64_t success_ = 0;
  std::uint64_t requeue_after_ = 0;
  std::uint64_t requeue_ = 0;
  std::uint64_t errors_ = 0;
  DurationHistogram reconcile_time_;
  std::atomic<int> active_workers_{0};
};

}  // namespace depl::kube
