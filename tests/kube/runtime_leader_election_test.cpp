// Leader election against a scripted Lease endpoint on a FakeClock: config validation,
// acquire, renew, waiting out another holder on the local clock, 409 conflicts, losing the lease
// before it can expire, and release on shutdown.
#include "depl/kube/runtime/leader_election.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "runtime_test_support.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using runtime_test::Signal;
using testing::ScriptedTransport;
using namespace std::chrono_literals;

constexpr const char* kLeasePath = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lock";

// The Lease endpoints of an API server, with optimistic concurrency on resourceVersion.
struct LeaseApi {
  std::mutex mutex;
  std::optional<json> lease;
  int version = 0;
  bool failing = false;
  bool hang_puts = false;  // PUTs block until cleared (a renewal stuck on the wire)
  std::condition_variable_any released;
  int conflicts_to_inject = 0;
  std::vector<std::pair<Clock::TimePoint, json>> writes;  // accepted POST/PUT bodies
  Signal written;
  FakeClock* clock = nullptr;

  static HttpResponse reply(int code, const json& body) { return {code, {}, body.dump()}; }

  std::optional<ScriptedTransport::Outcome> handle(const HttpRequest& request) {
    std::unique_lock lock(mutex);
    if (failing) return reply(500, testing::status_body(500, "InternalError", "etcd down"));
    if (request.method == "GET" && request.path == kLeasePath) {
      if (!lease)
        return reply(404, testing::status_body(404, "NotFound", "leases \"lock\" not found"));
      return reply(200, *lease);
    }
    json body = json::parse(request.body);
    if (request.method == "POST" &&
        request.path == "/apis/coordination.k8s.io/v1/namespaces/ns/leases") {
      if (lease) return reply(409, testing::status_body(409, "AlreadyExists", "exists"));
      return accept(std::move(body), lock);
    }
    if (request.method == "PUT" && request.path == kLeasePath) {
      released.wait(lock, [&] { return !hang_puts; });
      if (failing) return reply(500, testing::status_body(500, "InternalError", "etcd down"));
      if (conflicts_to_inject > 0) {
        --conflicts_to_inject;
        return reply(409, testing::status_body(409, "Conflict", "the object has been modified"));
      }
      if (!lease || body["metadata"].value("resourceVersion", "") !=
                        (*lease)["metadata"].value("resourceVersion", "")) {
        return reply(409, testing::status_body(409, "Conflict", "the object has been modified"));
      }
      return accept(std::move(body), lock);
    }
    return reply(400, testing::status_body(400, "BadRequest",
                                           fmt::format("{} {}", request.method, request.path)));
  }

  HttpResponse accept(json body, std::unique_lock<std::mutex>& lock) {
    body["metadata"]["resourceVersion"] = std::to_string(++version);
    lease = body;
    writes.emplace_back(clock->now(), body);
    lock.unlock();
    written.bump();
    return reply(200, body);
  }

  // Another replica holds the lease (or renews it): a new record with a new version.
  void held_by(const std::string& holder, int transitions) {
    std::lock_guard lock(mutex);
    lease = json{
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata",
         {{"name", "lock"}, {"namespace", "ns"}, {"resourceVersion", std::to_string(++version)}}},
        {"spec",
         {{"holderIdentity", holder},
          {"leaseDurationSeconds", 15},
          // A remote clock far ahead: must not be trusted for expiry.
          {"renewTime", fmt::format("2030-01-01T00:00:0{}.000000Z", version % 10)},
          {"acquireTime", "2025-12-31T23:00:00.000000Z"},
          {"leaseTransitions", transitions}}}};
  }
  json spec() {
    std::lock_guard lock(mutex);
    return lease ? (*lease)["spec"] : json();
  }
  std::size_t write_count() {
    std::lock_guard lock(mutex);
    return writes.size();
  }
};

struct ElectionFixture : runtime_test::ClientFixture {
  LeaseApi api;
  Signal started, stopped, work_stopped;
  std::mutex mutex;
  std::vector<std::string> new_leaders;
  Clock::TimePoint stopped_at{};
  std::unique_ptr<LeaderElector> elector;
  std::jthread runner;

  ElectionFixture() {
    api.clock = clock.get();
    transport->set_handler([this](const HttpRequest& request) { return api.handle(request); });
  }

  LeaderElectionConfig config() {
    LeaderElectionConfig c;
    c.lease_namespace = "ns";
    c.lease_name = "lock";
    c.identity = "me";
    c.callbacks.on_started_leading = [this](std::stop_token stop) {
      started.bump();
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      cv.wait(lock, stop, [] { return false; });
      work_stopped.bump();
    };
    c.callbacks.on_stopped_leading = [this] {
      {
        std::lock_guard lock(mutex);
        stopped_at = clock->now();
      }
      stopped.bump();
    };
    c.callbacks.on_new_leader = [this](const std::string& identity) {
      std::lock_guard lock(mutex);
      new_leaders.push_back(identity);
    };
    return c;
  }

  void start() {
    auto created = LeaderElector::create(client, *clock, random, config());
    ASSERT_TRUE(created) << created.error().message;
    elector = std::move(*created);
    runner = std::jthread([this](std::stop_token stop) { elector->run(stop); });
  }
  // Moves the clock by one sleep of the elector and waits for the request that follows.
  // The count is taken while the elector sleeps; the request after the wake-up comes after its
  // sleeper entry is gone, so the next step never sees a stale sleeper.
  void step() {
    ASSERT_TRUE(clock->wait_for_sleepers(1));
    const std::size_t before = transport->request_count();
    ASSERT_TRUE(clock->advance_to_next_deadline());
    ASSERT_TRUE(transport->wait_for_requests(before + 1, 10s));
  }
};

TEST(LeaderElectionConfigTest, ValidatesDurationsAndNames) {
  LeaderElectionConfig config;
  config.lease_namespace = "ns";
  config.lease_name = "lock";
  config.identity = "me";
  config.callbacks.on_started_leading = [](std::stop_token) {};
  EXPECT_TRUE(validate(config));
  EXPECT_EQ(config.lease_duration, 15s);
  EXPECT_EQ(config.renew_deadline, 10s);
  EXPECT_EQ(config.retry_period, 2s);

  auto broken = config;
  broken.renew_deadline = 15s;
  auto result = validate(broken);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("lease_duration"), std::string::npos);

  broken = config;
  broken.retry_period = 9s;  // 1.2 * 9 s > 10 s
  result = validate(broken);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("1.2 * retry_period"), std::string::npos);

  broken = config;
  broken.identity.clear();
  result = validate(broken);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("identity"), std::string::npos);

  broken = config;
  broken.callbacks.on_started_leading = nullptr;
  EXPECT_FALSE(validate(broken));
}

TEST(LeaderElectionTest, AcquiresAnAbsentLeaseRenewsAndReleasesOnShutdown) {
  ElectionFixture f;
  f.start();
  ASSERT_TRUE(f.started.wait_for(1));
  EXPECT_TRUE(f.elector->is_leader());
  json spec = f.api.spec();
  EXPECT_EQ(spec["holderIdentity"], "me");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["acquireTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(spec["renewTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(spec["leaseTransitions"], 0);

  f.step();  // renew after retryPeriod
  ASSERT_TRUE(f.api.written.wait_for(2));
  spec = f.api.spec();
  EXPECT_EQ(spec["renewTime"], "2026-01-01T00:00:02.000000Z");
  EXPECT_EQ(spec["acquireTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(f.elector->observed_leader(), "me");

  f.runner.request_stop();
  f.runner.join();
  EXPECT_EQ(f.work_stopped.count(), 1);
  EXPECT_EQ(f.stopped.count(), 1);
  EXPECT_FALSE(f.elector->is_leader());
  spec = f.api.spec();
  EXPECT_EQ(spec["holderIdentity"], "");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  std::lock_guard lock(f.mutex);
  EXPECT_EQ(f.new_leaders, (std::vector<std::string>{"me"}));
}

TEST(LeaderElectionTest, WaitsOutAnotherHolderOnTheLocalClockThenTakesOver) {
  ElectionFixture f;
  f.api.held_by("other", 3);
  const auto t0 = f.clock->now();
  f.start();
  for (int i = 0; i < 20 && f.api.spec()["holderIdentity"] != "me"; ++i) f.step();
  ASSERT_TRUE(f.started.wait_for(1));
  Clock::TimePoint acquired_at;
  {
    std::lock_guard lock(f.api.mutex);
    acquired_at = f.api.writes.front().first;  // the first write is the takeover
  }
  // Expiry is 15 s after we first saw the record, whatever renewTime the other clock wrote;
  // we try again at that very moment, not at the next jittered retry period.
  EXPECT_EQ(acquired_at - t0, 15s);
  json spec = f.api.spec();
  EXPECT_EQ(spec["holderIdentity"], "me");
  EXPECT_EQ(spec["leaseTransitions"], 4);
  EXPECT_NE(spec["acquireTime"], "2025-12-31T23:00:00.000000Z");
  std::lock_guard lock(f.mutex);
  EXPECT_EQ(f.new_leaders, (std::vector<std::string>{"other", "me"}));
}

TEST(LeaderElectionTest, AnotherHolderThatKeepsRenewingKeepsUsOut) {
  ElectionFixture f;
  f.api.held_by("other", 0);
  f.start();
  for (int i = 0; i < 30; ++i) {
    f.api.held_by("other", 0);  // the other replica renews: a new record each time
    f.step();
  }
  EXPECT_EQ(f.started.count(), 0);
  EXPECT_EQ(f.api.write_count(), 0u);
  EXPECT_FALSE(f.elector->is_leader());
  EXPECT_EQ(f.elector->observed_leader(), "other");
}

TEST(LeaderElectionTest, ConflictOnWriteRetriesNextPeriod) {
  ElectionFixture f;
  f.api.held_by("", 2);  // released
  f.api.conflicts_to_inject = 1;
  f.start();
  ASSERT_TRUE(f.transport->wait_for_requests(2, 10s));  // GET, PUT -> 409
  EXPECT_EQ(f.started.count(), 0);
  f.step();  // GET
  ASSERT_TRUE(f.started.wait_for(1));
  EXPECT_EQ(f.api.spec()["leaseTransitions"], 3);  // one transition, the 409 write never landed
  auto requests = f.transport->requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[1].request.method, "PUT");
  EXPECT_EQ(requests[3].request.method, "PUT");
}

TEST(LeaderElectionTest, StopsLeadingWhenRenewFailsBeforeTheLeaseCanExpire) {
  ElectionFixture f;
  const auto t0 = f.clock->now();
  f.start();
  ASSERT_TRUE(f.started.wait_for(1));
  {
    std::lock_guard lock(f.api.mutex);
    f.api.failing = true;
  }
  // Renewals at 2, 4, 6 and 8 s fail; the deadline is renewDeadline after the last renewal
  // that succeeded (t0), not after the first failed one (that would be t0+12 s).
  for (int i = 0; i < 4; ++i) f.step();
  EXPECT_EQ(f.stopped.count(), 0);
  EXPECT_TRUE(f.elector->is_leader());
  EXPECT_TRUE(f.elector->holds_lease());
  ASSERT_TRUE(f.clock->wait_for_sleepers(1));
  f.clock->advance_to_next_deadline();
  EXPECT_FALSE(f.elector->holds_lease());
  ASSERT_TRUE(f.stopped.wait_for(1));
  ASSERT_TRUE(f.work_stopped.wait_for(1));
  EXPECT_FALSE(f.elector->is_leader());
  {
    std::lock_guard lock(f.mutex);
    EXPECT_EQ(f.stopped_at - t0, 10s);
    EXPECT_LT(f.stopped_at - t0, 15s);  // before anyone else may consider the lease expired
  }
  f.runner.join();                     // run() returned by itself
  EXPECT_EQ(f.api.write_count(), 1u);  // no release attempt after losing
}

TEST(LeaderElectionTest, HoldsLeaseTurnsFalseAtTheRenewDeadlineWhileARenewalHangs) {
  ElectionFixture f;
  const auto t0 = f.clock->now();
  f.start();
  ASSERT_TRUE(f.started.wait_for(1));
  EXPECT_TRUE(f.elector->holds_lease());
  {
    std::lock_guard lock(f.api.mutex);
    f.api.hang_puts = true;
  }
  f.step();  // the renewal at t0+2 s: its GET answers, its PUT hangs
  ASSERT_TRUE(f.transport->wait_for_requests(3, 10s));
  f.clock->advance(8s - std::chrono::milliseconds(1));
  EXPECT_TRUE(f.elector->holds_lease());
  f.clock->advance(std::chrono::milliseconds(1));
  // The elector is still inside the request, but writes fenced on holds_lease() stop now:
  // renewDeadline (10 s) after the last renewal that went out, 5 s before the lease can expire.
  EXPECT_EQ(f.clock->now() - t0, 10s);
  EXPECT_FALSE(f.elector->holds_lease());
  EXPECT_TRUE(f.elector->is_leader());
  {
    std::lock_guard lock(f.api.mutex);
    f.api.hang_puts = false;
    f.api.failing = true;
  }
  f.api.released.notify_all();
  ASSERT_TRUE(f.stopped.wait_for(1));
  EXPECT_FALSE(f.elector->is_leader());
  f.runner.join();
}

}  // namespace
}  // namespace depl::kube
