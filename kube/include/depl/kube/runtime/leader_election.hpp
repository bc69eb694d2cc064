// Leader election on a coordination.k8s.io/v1 Lease (client-go's leaderelection): only the
// holder of the lease runs the controller, so two replicas never reconcile at once.
//  - Acquire when the lease is absent, released (no holder) or expired. "Expired" is judged on
//    the LOCAL clock: the time we first observed the current record plus its
//    leaseDurationSeconds, never the renewTime written by another machine (clock skew).
//  - Renew every retryPeriod. If no renew succeeds within renewDeadline of the last one that
//    did, stop leading (renewDeadline < leaseDuration, so we stop before anyone else may take
//    over). The deadline counts from when that renewal was sent, not from when a round of
//    attempts began, and holds_lease() turns false at it even while a request still hangs:
//    fence writes with it (ClientOptions::write_fence).
//  - A candidate that sees another holder tries again after a jittered retryPeriod, or at the
//    moment that holder's lease expires on our clock when that comes first.
//  - Writes use the lease's resourceVersion: a 409 means someone else wrote first; retry next
//    period. On shutdown the holder releases (holder cleared, leaseDurationSeconds 1).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/common/random.hpp"
#include "depl/kube/client.hpp"

namespace depl::kube {

struct LeaderElectionCallbacks {
  // Runs on its own thread when leadership is gained; `stop` is requested the moment it is
  // lost or the elector shuts down. Required.
  std::function<void(std::stop_token stop)> on_started_leading;
  // Called once leadership ends (lost or released), after on_started_leading's stop request.
  std::function<void()> on_stopped_leading;
  // Called when a different holder is observed (including ourselves after acquiring).
  std::function<void(const std::string& identity)> on_new_leader;
};

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per replica, e.g. the pod name
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
  bool release_on_cancel = true;
  LeaderElectionCallbacks callbacks;
};

// client-go's checks: names set, leaseDuration > renewDeadline > 1.2 * retryPeriod, all > 0,
// on_started_leading set. The error names the field.
Expected<void> validate(const LeaderElectionConfig& config);

class LeaderElector {
 public:
  // The client, clock and random source must outlive the elector.
  static Expected<std::unique_ptr<LeaderElector>> create(Client& client, Clock& clock,
                                                         RandomSource& random,
                                                         LeaderElectionConfig config);

  // Tries to acquire (every retryPeriod, jittered) until leader or `stop`; then leads and renews
  // until the lease is lost or `stop`, releases it on stop (release_on_cancel) and returns. A
  // process that lost the lease should exit rather than call run() again.
  void run(std::stop_token stop);

  bool is_leader() const { return leading_.load(); }
  // Leading and within renewDeadline of the last successful renewal (measured from when it was
  // sent): nobody else can hold the lease now. Thread-safe; cheap enough for every request.
  bool holds_lease() const;
  std::string observed_leader() const;  // holder of the last lease we read

 private:
  LeaderElector(Client& client, Clock& clock, RandomSource& random, LeaderElectionConfig config);

  bool acquire(std::stop_token stop);
  // Renews until failure past renewDeadline (returns false) or stop (returns true).
  bool renew(std::stop_token stop);
  // One read-modify-write of the lease; true when we hold it afterwards.
  bool try_acquire_or_renew();
  void release();
  void observe(const nlohmann::json& spec);

  Client& client_;
  Clock& clock_;
  RandomSource& random_;
  LeaderElectionConfig config_;

  std::atomic<bool> leading_{false};
  mutable std::mutex mutex_;
  nlohmann::json observed_spec_;      // the last lease spec read or written
  Clock::TimePoint observed_time_{};  // local time observed_spec_ was first seen
  nlohmann::json held_lease_;         // our last successful write (for release)
  // When our last successful acquire/renew was sent, plus renewDeadline.
  std::atomic<Clock::TimePoint> valid_until_{Clock::TimePoint{}};
  // When the other holder's lease expires on our clock (kNever: no other holder seen).
  Clock::TimePoint other_expiry_ = Clock::kNever;
  std::string reported_leader_;
};

}  // namespace depl::kube
