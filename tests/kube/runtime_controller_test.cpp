// Controller: the outcome rules (forget / add_after / add_rate_limited and their metrics),
// owner mapping through ownerReferences, custom mappers, exceptions, and clean shutdown.
#include "depl/kube/runtime/controller.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <future>
#include <thread>

#include "runtime_test_support.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using runtime_test::pod;
using runtime_test::Signal;
using namespace std::chrono_literals;

using Outcome = Expected<Action, ReconcileError>;

// A namespaced custom resource (the operator's, as test data: the library has no built-in
// knowledge of it).
ResourceType example_crd() {
  return {"depl.dev", "v1alpha1", "dependabletrainingjobs", "DependableTrainingJob", true};
}

// A reconciler that plays back scripted outcomes and records the keys it saw.
struct ScriptedReconciler {
  std::mutex mutex;
  std::deque<std::function<Outcome()>> script;
  std::vector<ObjectKey> seen;
  Signal entered;  // bumped as a reconcile starts (even one that then throws)
  Signal calls;    // bumped as a reconcile returns

  Reconciler reconciler() {
    return [this](const ObjectKey& key, std::stop_token) -> Outcome {
      entered.bump();
      std::function<Outcome()> next;
      {
        std::lock_guard lock(mutex);
        seen.push_back(key);
        if (!script.empty()) {
          next = std::move(script.front());
          script.pop_front();
        }
      }
      Outcome outcome = next ? next() : Outcome(Action::await_change());
      calls.bump();
      return outcome;
    };
  }
  void then(std::function<Outcome()> step) {
    std::lock_guard lock(mutex);
    script.push_back(std::move(step));
  }
};

struct ControllerFixture {
  FakeClock clock;
  ScriptedReconciler reconciler;
  std::unique_ptr<Controller> controller;
  std::jthread runner;

  void start(int workers = 1) {
    ControllerOptions options;
    options.name = "test";
    options.workers = workers;
    options.rate_limiter = std::make_unique<ItemExponentialRateLimiter>(5ms, 1000s);
    controller = std::make_unique<Controller>(reconciler.reconciler(), clock, std::move(options));
    runner = std::jthread([this](std::stop_token stop) { controller->run(stop); });
    ASSERT_TRUE(clock.wait_for_sleepers(static_cast<std::size_t>(workers)));
  }
  // After the n-th reconcile started, wait until its worker is idle again (outcome applied).
  // The worker leaves the clock's sleepers before it reconciles, so one sleeper now means the
  // worker is back in get().
  void wait_reconciled(int n) {
    ASSERT_TRUE(reconciler.entered.wait_for(n));
    ASSERT_TRUE(clock.wait_for_sleepers(1));
  }
};

const ObjectKey kJob{"ns", "job"};

TEST(ControllerTest, AwaitChangeForgetsAndDoesNotRequeue) {
  ControllerFixture f;
  f.start();
  f.controller->queue().add_rate_limited(kJob);  // a previous failure on record
  f.clock.advance(5ms);
  f.wait_reconciled(1);
  const auto metrics = f.controller->metrics();
  EXPECT_EQ(metrics.reconcile_success, 1u);
  EXPECT_EQ(f.controller->queue().num_requeues(kJob), 0);  // forgotten
  EXPECT_EQ(metrics.queue.depth + metrics.queue.waiting, 0u);
}

TEST(ControllerTest, ErrorRequeuesWithPerKeyExponentialBackoff) {
  ControllerFixture f;
  for (int i = 0; i < 3; ++i)
    f.reconciler.then([] { return Outcome(unexpected(ReconcileError{"boom"})); });
  f.start();
  f.controller->queue().add(kJob);
  f.wait_reconciled(1);
  EXPECT_EQ(f.controller->queue().num_requeues(kJob), 1);
  f.clock.advance(4ms);
  EXPECT_EQ(f.reconciler.calls.count(), 1);  // not before 5 ms
  f.clock.advance(1ms);
  f.wait_reconciled(2);
  f.clock.advance(10ms);  // second failure: 10 ms
  f.wait_reconciled(3);
  f.clock.advance(20ms);  // third failure: 20 ms; then success (script exhausted)
  f.wait_reconciled(4);
  const auto metrics = f.controller->metrics();
  EXPECT_EQ(metrics.reconcile_errors, 3u);
  EXPECT_EQ(metrics.reconcile_success, 1u);
  EXPECT_EQ(metrics.queue.retries_total, 3u);
  EXPECT_EQ(f.controller->queue().num_requeues(kJob), 0);
}

TEST(ControllerTest, RequeueAfterForgetsThenComesBackAfterTheDelay) {
  ControllerFixture f;
  f.reconciler.then([] { return Outcome(unexpected(ReconcileError{"first"})); });
  f.reconciler.then([] { return Outcome(Action::requeue_after(30s)); });
  f.start();
  f.controller->queue().add(kJob);
  f.wait_reconciled(1);
  f.clock.advance(5ms);
  f.wait_reconciled(2);
  EXPECT_EQ(f.controller->queue().num_requeues(kJob), 0);  // forgotten before add_after
  f.clock.advance(29s);
  EXPECT_EQ(f.reconciler.calls.count(), 2);
  f.clock.advance(1s);
  f.wait_reconciled(3);
  const auto metrics = f.controller->metrics();
  EXPECT_EQ(metrics.reconcile_requeue_after, 1u);
  EXPECT_EQ(metrics.reconcile_errors, 1u);
  EXPECT_EQ(metrics.reconcile_success, 1u);
}

TEST(ControllerTest, ZeroRequeueAfterIsARateLimitedRequeue) {
  ControllerFixture f;
  f.reconciler.then([] { return Outcome(Action::requeue_after(0s)); });
  f.start();
  f.controller->queue().add(kJob);
  f.wait_reconciled(1);
  EXPECT_EQ(f.controller->queue().num_requeues(kJob), 1);
  f.clock.advance(5ms);
  f.wait_reconciled(2);
  EXPECT_EQ(f.controller->metrics().reconcile_requeue, 1u);
}

TEST(ControllerTest, ExceptionFromReconcilerCountsAsError) {
  ControllerFixture f;
  f.reconciler.then([]() -> Outcome { throw std::runtime_error("bug"); });
  f.start();
  f.controller->queue().add(kJob);
  f.wait_reconciled(1);
  f.clock.advance(5ms);  // rate-limited like any error
  f.wait_reconciled(2);
  EXPECT_EQ(f.controller->metrics().reconcile_errors, 1u);
  EXPECT_EQ(f.controller->metrics().reconcile_success, 1u);
}

TEST(ControllerTest, StopEndsRunAndRequestsStopOfTheReconcileInFlight) {
  FakeClock clock;
  Signal started;
  std::atomic<bool> saw_stop{false};
  Controller controller(
      [&](const ObjectKey&, std::stop_token stop) -> Outcome {
        started.bump();
        std::mutex mutex;
        std::condition_variable_any cv;
        std::unique_lock lock(mutex);
        cv.wait(lock, stop, [] { return false; });
        saw_stop = stop.stop_requested();
        return Action::await_change();
      },
      clock);
  std::jthread runner([&](std::stop_token stop) { controller.run(stop); });
  controller.queue().add(kJob);
  ASSERT_TRUE(started.wait_for(1));
  runner.request_stop();
  runner.join();
  EXPECT_TRUE(saw_stop.load());
  EXPECT_TRUE(controller.queue().shutting_down());
}

TEST(OwnerMappingTest, ControllerReferenceOfMatchingGroupAndKind) {
  json owned = pod("ns", "worker-0", "1");
  owned["metadata"]["ownerReferences"] = json::array(
      {{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "rs"}, {"uid", "u1"}},
       {{"apiVersion", "depl.dev/v1beta1"},
        {"kind", "DependableTrainingJob"},
        {"name", "job"},
        {"uid", "u2"},
        {"controller", true}}});
  // The version may differ; group and kind must match.
  EXPECT_EQ(controller_owner_key(owned, "depl.dev/v1alpha1", "DependableTrainingJob"),
            (ObjectKey{"ns", "job"}));
  EXPECT_EQ(controller_owner_key(owned, "other.dev/v1alpha1", "DependableTrainingJob"),
            std::nullopt);
  EXPECT_EQ(controller_owner_key(owned, "apps/v1", "ReplicaSet"), std::nullopt);  // not controller
  EXPECT_EQ(controller_owner_key(owned, "depl.dev/v1alpha1", "DependableTrainingJob", false),
            (ObjectKey{"", "job"}));
  EXPECT_EQ(
      controller_owner_key(pod("ns", "orphan", "1"), "depl.dev/v1alpha1", "DependableTrainingJob"),
      std::nullopt);
}

TEST(OwnerMappingTest, ControllerUidIsTheControllingReferencesWhateverItsKind) {
  json owned = pod("ns", "worker-0", "1");
  owned["metadata"]["ownerReferences"] = json::array(
      {{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "rs"}, {"uid", "u1"}},
       {{"apiVersion", "apps/v1"},
        {"kind", "StatefulSet"},
        {"name", "set"},
        {"uid", "u2"},
        {"controller", true}}});
  EXPECT_EQ(controller_uid(owned), "u2");
  EXPECT_EQ(controller_uid(pod("ns", "orphan", "1")), "");
  owned["metadata"]["ownerReferences"][1]["controller"] = false;
  EXPECT_EQ(controller_uid(owned), "");
  EXPECT_EQ(controller_uid(json::object()), "");
}

TEST(OwnerMappingTest, InformerEventsOfOwnedAndPrimaryKindsEnqueueTheOwner) {
  runtime_test::ClientFixture client;
  WatcherOptions options;
  Informer jobs(client.client, example_crd(), options, *client.clock,
                client.random);
  Informer pods(client.client, resources::pods(), options, *client.clock, client.random);
  Informer nodes(client.client, resources::nodes(), options, *client.clock, client.random);
  FakeClock clock;
  Controller controller(
      [](const ObjectKey&, std::stop_token) -> Outcome { return Action::await_change(); }, clock);
  controller.watch_primary(jobs);
  controller.watch_owned(pods, "depl.dev/v1alpha1", "DependableTrainingJob");
  controller.watch_mapped(nodes, [](const json&) {
    return std::vector<ObjectKey>{{"ns", "job-a"}, {"ns", "job-b"}};
  });

  json job = {{"apiVersion", "depl.dev/v1alpha1"},
              {"kind", "DependableTrainingJob"},
              {"metadata", {{"namespace", "ns"}, {"name", "job-p"}, {"resourceVersion", "1"}}}};
  jobs.apply({WatcherEvent::Type::Apply, job});
  json owned = pod("ns", "worker-0", "1");
  owned["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "depl.dev/v1alpha1"},
                                                       {"kind", "DependableTrainingJob"},
                                                       {"name", "job-o"},
                                                       {"uid", "u"},
                                                       {"controller", true}}});
  pods.apply({WatcherEvent::Type::Apply, owned});
  pods.apply({WatcherEvent::Type::Apply, pod("ns", "unowned", "1")});
  nodes.apply({WatcherEvent::Type::Apply, {{"metadata", {{"name", "node-1"}}}}});
  auto drain = [&] {
    std::vector<std::string> keys;
    while (controller.queue().len() > 0) {
      auto key = controller.queue().get();
      keys.push_back(key->to_string());
      controller.queue().done(*key);
    }
    return keys;
  };
  EXPECT_EQ(drain(), (std::vector<std::string>{"ns/job-p", "ns/job-o", "ns/job-a", "ns/job-b"}));

  // Deleting an owned pod wakes its owner too; two changes before a worker looks are one key.
  owned["metadata"]["resourceVersion"] = "2";
  pods.apply({WatcherEvent::Type::Apply, owned});
  pods.apply({WatcherEvent::Type::Delete, owned});
  EXPECT_EQ(drain(), (std::vector<std::string>{"ns/job-o"}));
}

}  // namespace
}  // namespace depl::kube
