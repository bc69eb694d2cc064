// Two depl-controller replicas with --leader-elect (short leases: 2 s, renew deadline 1.5 s,
// retry period 0.5 s) behind a stand-in for their Service, running a job. The dev cluster
// records every write with the writing replica's identity (its User-Agent) and the time the
// store applied it, so the scenarios check from the API server's side:
//  - only the leader writes (jobs, their status, pods, Services, Secrets, Events): the standby
//    writes nothing but, once it takes over, the Lease;
//  - a leader killed with SIGKILL is replaced within the lease duration plus one jittered retry
//    period (and not before its lease could expire);
//  - a leader whose renewals the API server refuses stops writing before its lease expires, and
//    the standby takes over only after that.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "process_fixture.hpp"
#include "tcp_proxy.hpp"

namespace depl::e2e {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kLeaseDuration = 2s;
constexpr auto kRenewDeadline = 1500ms;
constexpr auto kRetryPeriod = 500ms;
// A standby tries again after retryPeriod * (1 + 1.2 * U[0, 1)) (client-go's jitter), so it sees
// the last renewal of a dead leader up to 2.2 retry periods late.
constexpr auto kJitteredRetry = 1100ms;
// Process scheduling and request latency on a busy machine.
constexpr auto kSlack = 500ms;

// Milliseconds of `t` after `origin`: readable failure messages.
long long ms_after(Clock::time_point origin, Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t - origin).count();
}

int progress_epoch(const json& job) {
  return job.value("status", json::object()).value("progress", json::object()).value("epoch", 0);
}

class LeaderElectionE2e : public ControllerProcessE2e {
 protected:
  // The proxy's port is what workers report to; replica i listens on ports_[i].
  void start_service(int replicas) {
    for (int i = 0; i < replicas; ++i) ports_.push_back(free_loopback_port());
    proxy_ = std::make_unique<TcpProxy>(ports_);
    ASSERT_NE(proxy_->port(), 0);
  }

  std::unique_ptr<ControllerProcess> replica(int i) {
    const std::string identity = i == 0 ? "replica-a" : "replica-b";
    auto ms = [](auto d) {
      return fmt::format("{}ms", std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    };
    return spawn_controller(
        identity,
        {"--leader-elect", "--leader-election-namespace", kControllerNamespace,
         "--leader-elect-lease-duration", ms(kLeaseDuration), "--leader-elect-renew-deadline",
         ms(kRenewDeadline), "--leader-elect-retry-period", ms(kRetryPeriod), "--progress-addr",
         fmt::format("127.0.0.1:{}", ports_[static_cast<std::size_t>(i)]),
         "--progress-advertise-url", fmt::format("http://127.0.0.1:{}", proxy_->port())});
  }

  static bool lease_write_by(const Write& w, const std::string& identity) {
    return w.is_lease() && w.identity == identity;
  }

  // The first Lease write of `identity` after `since` (its acquisition), if any.
  std::optional<Write> first_lease_write(const std::string& identity, Clock::time_point since) {
    for (const auto& w : writes_->writes()) {
      if (lease_write_by(w, identity) && w.record.time >= since) return w;
    }
    return std::nullopt;
  }

  // Everything but the Lease that `identity` wrote.
  std::vector<Write> work_writes(const std::string& identity) {
    std::vector<Write> out;
    for (const auto& w : writes_->writes()) {
      if (w.identity == identity && !w.is_lease()) out.push_back(w);
    }
    return out;
  }

  std::string all_writes() {
    std::string out;
    for (const auto& w : writes_->writes()) {
      if (!w.identity.empty()) out += describe(w, origin_) + "\n";
    }
    return out;
  }

  // Starts A, waits until it leads, starts B, waits until B's caches are synced, and starts the
  // job; returns once it has reported `epochs` epochs.
  void start_pair_and_job(int epochs) {
    ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools.yaml"));
    ASSERT_NO_FATAL_FAILURE(start_service(2));
    a_ = replica(0);
    ASSERT_TRUE(wait_for_log(*a_, "became leader; reconciling"));
    b_ = replica(1);
    ASSERT_TRUE(wait_for_log(*b_, "caches synced"));
    create_job(patient_job("ha", 0.1));
    wait_job(
        "ha", [&](const json& j) { return progress_epoch(j) >= epochs; },
        fmt::format("{} reported epochs", epochs));
  }

  std::vector<std::uint16_t> ports_;
  std::unique_ptr<TcpProxy> proxy_;
  std::unique_ptr<ControllerProcess> a_, b_;
};

TEST_F(LeaderElectionE2e, OnlyTheLeaderWritesAndAKilledLeaderIsReplacedWithinTheLease) {
  ASSERT_NO_FATAL_FAILURE(start_pair_and_job(3));
  // (a) While A leads, B (ready, caches warm, answering progress reports through the Service)
  // writes nothing at all.
  EXPECT_THAT(work_writes("replica-b"), ::testing::IsEmpty()) << all_writes();
  EXPECT_EQ(writes_->count([](const Write& w) { return lease_write_by(w, "replica-b"); }), 0u);
  EXPECT_GT(work_writes("replica-a").size(), 3u);

  // (b) SIGKILL the leader: no release, B must wait the lease out.
  const auto killed_at = Clock::now();
  a_->signal(SIGKILL);
  EXPECT_EQ(a_->wait(10s), 128 + SIGKILL);
  ASSERT_TRUE(
      writes_->wait_for([](const Write& w) { return lease_write_by(w, "replica-b"); }, 1, kWait))
      << "replica-b never acquired the lease";
  const Write takeover = *first_lease_write("replica-b", killed_at);
  Clock::time_point a_renewed{};
  for (const auto& w : writes_->writes()) {
    if (lease_write_by(w, "replica-a")) a_renewed = w.record.time;
  }
  const auto handover = takeover.record.time - killed_at;
  std::cout << "[ handover ] "
            << std::chrono::duration_cast<std::chrono::milliseconds>(handover).count()
            << " ms after SIGKILL, "
            << std::chrono::duration_cast<std::chrono::milliseconds>(takeover.record.time -
                                                                     a_renewed)
                   .count()
            << " ms after A's last renewal\n";
  EXPECT_LE(ms_after(killed_at, takeover.record.time),
            ms_after(killed_at, killed_at + kLeaseDuration + kJitteredRetry + kSlack));
  // Never before A's lease could have expired, wherever B's polls fell.
  EXPECT_GE(ms_after(a_renewed, takeover.record.time),
            ms_after(a_renewed, a_renewed + kLeaseDuration));

  json done = wait_succeeded("ha");
  // B wrote only after it held the lease; A nothing after B took over.
  for (const auto& w : work_writes("replica-b")) {
    EXPECT_GT(w.record.time, takeover.record.time)
        << describe(w, origin_) << " before B took over: " << describe(takeover, origin_);
  }
  for (const auto& w : work_writes("replica-a")) {
    EXPECT_LT(w.record.time, takeover.record.time)
        << describe(w, origin_) << " after B took over: " << describe(takeover, origin_);
  }
  EXPECT_FALSE(work_writes("replica-b").empty()) << "B finished the job without writing?";
  expect_job_invariants("ha");
}

TEST_F(LeaderElectionE2e, ALeaderThatCannotRenewStopsWritingBeforeItsLeaseExpires) {
  ASSERT_NO_FATAL_FAILURE(start_pair_and_job(2));
  // The refusals start on observed events, not at a moment that may fall in a lull: once A is
  // writing (its next work write), right after its next renewal. A then has its whole renew
  // deadline of writes to stop by itself.
  auto a_work = [](const Write& w) { return w.identity == "replica-a" && !w.is_lease(); };
  auto a_lease = [](const Write& w) { return lease_write_by(w, "replica-a"); };
  ASSERT_TRUE(writes_->wait_for(a_work, writes_->count(a_work) + 1, kWait)) << all_writes();
  ASSERT_TRUE(writes_->wait_for(a_lease, writes_->count(a_lease) + 1, kWait)) << all_writes();
  // From now on the API server refuses A's Lease updates (503, Retry-After: 1) and nothing
  // else: A can still write everything else, which is what it must stop doing by itself.
  const auto refused_from = Clock::now();
  cluster_->fail_requests_where(
      [](const devcluster::RequestSummary& r) {
        return r.method == "PUT" && r.path.find("/leases/") != std::string::npos &&
               identity_of(r.user_agent) == "replica-a";
      },
      503);
  ASSERT_TRUE(
      writes_->wait_for([](const Write& w) { return lease_write_by(w, "replica-b"); }, 1, kWait))
      << "replica-b never acquired the lease";
  const Write takeover = *first_lease_write("replica-b", refused_from);
  // A notices, stops leading and exits (a replica that lost its lease does not run again).
  EXPECT_EQ(a_->wait(kWait), 0) << a_->log();

  Clock::time_point a_renewed{};
  for (const auto& w : writes_->writes()) {
    if (lease_write_by(w, "replica-a")) a_renewed = w.record.time;
  }
  const auto a_expiry = a_renewed + kLeaseDuration;
  const auto a_writes = work_writes("replica-a");
  ASSERT_FALSE(a_writes.empty());
  const Write& a_last = a_writes.back();
  std::cout << "[ fenced ] A's last write "
            << std::chrono::duration_cast<std::chrono::milliseconds>(a_last.record.time - a_renewed)
                   .count()
            << " ms after its last renewal (lease " << kLeaseDuration.count()
            << " s, renew deadline " << kRenewDeadline.count() << " ms); B took over "
            << std::chrono::duration_cast<std::chrono::milliseconds>(takeover.record.time -
                                                                     a_renewed)
                   .count()
            << " ms after it\n";
  // A was still writing when its renewals started failing (or this proves nothing)...
  EXPECT_GT(a_last.record.time, refused_from) << all_writes();
  // ...and stopped before its lease could expire, and before B took over (ms after A's last
  // renewal; "+N ms" in the writes below are after the cluster started).
  EXPECT_LT(ms_after(a_renewed, a_last.record.time), ms_after(a_renewed, a_expiry))
      << describe(a_last, origin_) << "\n"
      << all_writes();
  EXPECT_LT(ms_after(a_renewed, a_last.record.time), ms_after(a_renewed, takeover.record.time))
      << describe(a_last, origin_) << " vs " << describe(takeover, origin_);
  EXPECT_GE(ms_after(a_renewed, takeover.record.time), ms_after(a_renewed, a_expiry));
  cluster_->fail_requests_where(nullptr, 0);

  json done = wait_succeeded("ha");
  for (const auto& w : work_writes("replica-b")) {
    EXPECT_GT(w.record.time, takeover.record.time)
        << describe(w, origin_) << " before B took over: " << describe(takeover, origin_);
  }
  expect_job_invariants("ha");
}

}  // namespace
}  // namespace depl::e2e
