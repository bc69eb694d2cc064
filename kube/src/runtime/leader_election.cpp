// LeaderElector: the acquire / renew / release loop over a Lease object.
#include "depl/kube/runtime/leader_election.hpp"

#include <cmath>
#include <thread>

#include <spdlog/spdlog.h>

#include "depl/common/time.hpp"

namespace depl::kube {

namespace {

constexpr double kJitterFactor = 1.2;  // client-go's JitterFactor

std::int64_t whole_seconds_up(std::chrono::milliseconds duration) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(duration.count()) / 1000.0));
}

}  // namespace

Expected<void> validate(const LeaderElectionConfig& config) {
  if (config.lease_name.empty()) return error("leader election: lease_name must not be empty");
  if (config.lease_namespace.empty()) {
    return error("leader election: lease_namespace must not be empty");
  }
  if (config.identity.empty()) return error("leader election: identity must not be empty");
  if (config.retry_period.count() <= 0) {
    return error("leader election: retry_period must be greater than zero");
  }
  if (config.lease_duration <= config.renew_deadline) {
    return error("leader election: lease_duration (" +
                 std::to_string(config.lease_duration.count()) +
                 " ms) must be greater than renew_deadline (" +
                 std::to_string(config.renew_deadline.count()) + " ms)");
  }
  if (static_cast<double>(config.renew_deadline.count()) <=
      kJitterFactor * static_cast<double>(config.retry_period.count())) {
    return error("leader election: renew_deadline (" +
                 std::to_string(config.renew_deadline.count()) +
                 " ms) must be greater than 1.2 * retry_period (" +
                 std::to_string(config.retry_period.count()) + " ms)");
  }
  if (!config.callbacks.on_started_leading) {
    return error("leader election: callbacks.on_started_leading must be set");
  }
  return {};
}

Expected<std::unique_ptr<LeaderElector>> LeaderElector::create(Client& client, Clock& clock,
                                                               RandomSource& random,
                                                               LeaderElectionConfig config) {
  if (auto valid = validate(config); !valid) return unexpected(valid.error());
  return std::unique_ptr<LeaderElector>(
      new LeaderElector(client, clock, random, std::move(config)));
}

LeaderElector::LeaderElector(Client& client, Clock& clock, RandomSource& random,
                             LeaderElectionConfig config)
    : client_(client), clock_(clock), random_(random), config_(std::move(config)) {}

bool LeaderElector::holds_lease() const {
  return leading_.load() && clock_.now() < valid_until_.load();
}

std::string LeaderElector::observed_leader() const {
  std::lock_guard lock(mutex_);
  return observed_spec_.is_object() ? observed_spec_.value("holderIdentity", "") : "";
}

void LeaderElector::run(std::stop_token stop) {
  if (!acquire(stop)) return;
  spdlog::info("msg=\"became leader\" lease={}/{} identity={}", config_.lease_namespace,
               config_.lease_name, config_.identity);
  leading_ = true;
  std::stop_source leading;
  std::jthread work(
      [&leading, this] { config_.callbacks.on_started_leading(leading.get_token()); });
  {
    std::stop_callback forward(stop, [&leading] { leading.request_stop(); });
    const bool stopped_cleanly = renew(stop);
    if (!stopped_cleanly) {
      spdlog::error(
          "msg=\"failed to renew the lease within renewDeadline, stopping\" "
          "lease={}/{} identity={}",
          config_.lease_namespace, config_.lease_name, config_.identity);
    }
  }
  // Stop acting first, then tell the owner, then wait for the work to wind down.
  leading.request_stop();
  leading_ = false;
  if (config_.callbacks.on_stopped_leading) config_.callbacks.on_stopped_leading();
  work.join();
  // Release only after the work stopped: the next leader must not overlap with us.
  if (stop.stop_requested() && config_.release_on_cancel) release();
}

bool LeaderElector::acquire(std::stop_token stop) {
  spdlog::info("msg=\"attempting to acquire the lease\" lease={}/{} identity={}",
               config_.lease_namespace, config_.lease_name, config_.identity);
  while (!stop.stop_requested()) {
    if (try_acquire_or_renew()) return true;
    Clock::TimePoint wake = clock_.now() + random_.jitter(config_.retry_period, kJitterFactor);
    {
      // Waiting a whole jittered period past the holder's expiry would delay a takeover by up
      // to 2.2 retry periods for nothing.
      std::lock_guard lock(mutex_);
      if (other_expiry_ > clock_.now() && other_expiry_ < wake) wake = other_expiry_;
    }
    if (!clock_.sleep_until(wake, stop)) return false;
  }
  return false;
}

bool LeaderElector::renew(std::stop_token stop) {
  while (!stop.stop_requested()) {
    if (!clock_.sleep_for(config_.retry_period, stop)) return true;
    while (true) {
      if (stop.stop_requested()) return true;
      if (try_acquire_or_renew()) break;
      // The deadline runs from the last renewal that succeeded: counting it from the start of
      // this round would let us lead for retryPeriod + renewDeadline after it, which may
      // outlast the lease others see (leaseDuration only has to exceed renewDeadline).
      const Clock::TimePoint deadline = valid_until_.load();
      if (clock_.now() >= deadline) return false;
      const Clock::TimePoint retry_at = std::min(deadline, clock_.now() + config_.retry_period);
      if (!clock_.sleep_until(retry_at, stop)) return true;
      if (clock_.now() >= valid_until_.load()) return false;
    }
  }
  return true;
}

void LeaderElector::observe(const nlohmann::json& spec) {
  std::string holder;
  {
    std::lock_guard lock(mutex_);
    if (spec != observed_spec_) {
      observed_spec_ = spec;
      observed_time_ = clock_.now();
    }
    holder = spec.value("holderIdentity", "");
    if (holder == reported_leader_ || holder.empty()) return;
    reported_leader_ = holder;
  }
  spdlog::info("msg=\"new leader observed\" lease={}/{} leader={}", config_.lease_namespace,
               config_.lease_name, holder);
  if (config_.callbacks.on_new_leader) config_.callbacks.on_new_leader(holder);
}

bool LeaderElector::try_acquire_or_renew() {
  const ResourceType leases = resources::leases();
  // Whatever others see of this attempt, they see it no earlier than now.
  const Clock::TimePoint sent = clock_.now();
  const std::string now_text = format_rfc3339_micro(clock_.wall_now());
  const std::int64_t duration_seconds = whole_seconds_up(config_.lease_duration);

  auto current = client_.get(leases, config_.lease_namespace, config_.lease_name);
  if (!current) {
    if (!current.error().is_not_found()) {
      spdlog::warn("msg=\"cannot read the lease\" lease={}/{} error=\"{}\"",
                   config_.lease_namespace, config_.lease_name, current.error().to_string());
      return false;
    }
    nlohmann::json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", duration_seconds},
          {"acquireTime", now_text},
          {"renewTime", now_text},
          {"leaseTransitions", 0}}}};
    auto created = client_.create(leases, config_.lease_namespace, lease);
    if (!created) {
      spdlog::info("msg=\"lease create failed\" lease={}/{} error=\"{}\"", config_.lease_namespace,
                   config_.lease_name, created.error().to_string());
      return false;
    }
    observe((*created)["spec"]);
    valid_until_ = sent + config_.renew_deadline;
    std::lock_guard lock(mutex_);
    held_lease_ = std::move(*created);
    other_expiry_ = Clock::kNever;
    return true;
  }

  nlohmann::json lease = std::move(*current);
  if (!lease.contains("spec") || !lease["spec"].is_object())
    lease["spec"] = nlohmann::json::object();
  const nlohmann::json old_spec = lease["spec"];
  observe(old_spec);
  const std::string holder = old_spec.value("holderIdentity", "");
  const std::int64_t held_for = old_spec.value("leaseDurationSeconds", std::int64_t{0});
  if (!holder.empty() && holder != config_.identity) {
    std::lock_guard lock(mutex_);
    other_expiry_ = observed_time_ + std::chrono::seconds(held_for);
    if (other_expiry_ > clock_.now()) return false;
  }

  nlohmann::json& spec = lease["spec"];
  if (holder == config_.identity) {
    if (!spec.contains("acquireTime")) spec["acquireTime"] = now_text;
  } else {
    spec["acquireTime"] = now_text;
    spec["leaseTransitions"] = old_spec.value("leaseTransitions", std::int64_t{0}) + 1;
  }
  if (!spec.contains("leaseTransitions")) spec["leaseTransitions"] = 0;
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = duration_seconds;
  spec["renewTime"] = now_text;
  auto updated = client_.replace(leases, lease);
  if (!updated) {
    spdlog::info("msg=\"lease update failed\" lease={}/{} error=\"{}\"", config_.lease_namespace,
                 config_.lease_name, updated.error().to_string());
    return false;
  }
  observe((*updated)["spec"]);
  valid_until_ = sent + config_.renew_deadline;
  std::lock_guard lock(mutex_);
  held_lease_ = std::move(*updated);
  other_expiry_ = Clock::kNever;
  return true;
}

void LeaderElector::release() {
  nlohmann::json lease;
  {
    std::lock_guard lock(mutex_);
    lease = held_lease_;
  }
  if (!lease.is_object() || !lease.contains("spec")) return;
  const std::string now_text = format_rfc3339_micro(clock_.wall_now());
  nlohmann::json& spec = lease["spec"];
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["acquireTime"] = now_text;
  spec["renewTime"] = now_text;
  auto released = client_.replace(resources::leases(), lease);
  if (!released) {
    spdlog::warn("msg=\"lease release failed\" lease={}/{} error=\"{}\"", config_.lease_namespace,
                 config_.lease_name, released.error().to_string());
    return;
  }
  spdlog::info("msg=\"lease released\" lease={}/{} identity={}", config_.lease_namespace,
               config_.lease_name, config_.identity);
}

}  // namespace depl::kube
