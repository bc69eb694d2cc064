// The reconcile's execution of a decision, on a scripted API server: which requests go out and in
// which order, and what each kind of failure leaves behind (Events, the status, the round without
// its pods, the placement line).
#include "depl/controller/decision_executor.hpp"

#include <gtest/gtest.h>

#include "depl/controller/creation_rejection.hpp"
#include "depl/controller/gang_scheduling.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/progress_token.hpp"
#include "depl/controller/worker_pods.hpp"
#include "depl/kube/testing/scripted_transport.hpp"

namespace depl::controller {
namespace {

using kube::testing::ScriptedTransport;
using nlohmann::json;

json a_job(const std::string& name = "mnist", const std::string& created = "2026-11-22T05:00:00Z") {
  return {{"apiVersion", "depl.dev/v1alpha1"},
          {"kind", "DependableTrainingJob"},
          {"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"uid", "uid-" + name},
            {"generation", 1},
            {"resourceVersion", "7"},
            {"creationTimestamp", created}}},
          {"spec", {{"models", json::array({{{"name", "small"}}})}}}};
}

json a_pod(const std::string& name, const std::string& owner_uid = "uid-mnist") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"ownerReferences", json::array({{{"apiVersion", "depl.dev/v1alpha1"},
                                              {"kind", "DependableTrainingJob"},
                                              {"name", "mnist"},
                                              {"uid", owner_uid},
                                              {"controller", true}}})}}},
          {"spec", {{"containers", json::array({{{"name", "worker"}}})}}}};
}

json a_service(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", name}}}};
}

json a_planned_status() {
  JobStatus status;
  status.phase = phases::kRunning;
  PlanRecord plan;
  plan.datasets = {"a"};
  plan.phases = {{"small", 2, "t4", 1}};
  plan.cost = 1;
  plan.duration_seconds = 2;
  plan.loss_mean = 0.5;
  plan.loss_stddev = 0.1;
  plan.probability = 0.9;
  plan.algorithm = "exact";
  plan.revision = 1;
  status.plan = plan;
  status.progress.round = 1;
  return encode_status(status);
}

struct Fixture {
  std::shared_ptr<ScriptedTransport> transport = std::make_shared<ScriptedTransport>();
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  kube::Client client = make_client();
  GpuLedger gpus;
  PlacementLine line{gpus};
  CreateExpectations expectations{*clock};
  MetricsRegistry metrics;
  std::vector<EventSpec> events;
  int turns_taken = 0;
  DecisionExecutor executor{client,
                            line,
                            expectations,
                            *clock,
                            [this](const json&, const EventSpec& e) { events.push_back(e); },
                            metrics,
                            {"depl-controller", [this] { ++turns_taken; }}};

  Fixture() { metrics.describe("depl_replans_total", MetricsRegistry::Type::Counter, "plans"); }

  kube::Client make_client() {
    kube::ClientOptions options;
    options.clock = clock;
    options.random = std::make_shared<RandomSource>(11);
    options.rate_limit = {0, 0};
    options.retry.max_attempts = 1;
    return kube::Client(transport, nullptr, options);
  }

  // "METHOD path" of every request so far.
  std::vector<std::string> requests() const {
    std::vector<std::string> out;
    for (const auto& r : transport->requests())
      out.push_back(r.request.method + " " + r.request.path);
    return out;
  }

  bool has_event(const std::string& reason) const {
    return std::any_of(events.begin(), events.end(),
                       [&](const EventSpec& e) { return e.reason == reason; });
  }
};

TEST(DecisionExecutor, TokenStatusEventsDeletesThenCreates) {
  Fixture f;
  Decision d;
  d.status = a_planned_status();
  d.ensure_token_secret = true;
  d.token_secret = "mnist-progress-a1b2c3d4";
  d.remove = {{"Pod", "mnist-p0-w0", "uid-old"}};
  d.create = {a_service("mnist-p1"), a_pod("mnist-p1-w0")};
  d.events = {{"Normal", "PhaseStarted", "phase 1"}};
  d.replanned = true;
  d.requeue_after = std::chrono::seconds(5);
  f.transport->push_json(201, json::object());  // the Secret
  f.transport->push_json(200, json::object());  // the status
  f.transport->push_json(200, json::object());  // the delete
  f.transport->push_json(201, json::object());  // the Service
  f.transport->push_json(201, json::object());  // the pod

  auto outcome = f.executor.execute(a_job(), d, false, {});
  ASSERT_TRUE(outcome.has_value()) << outcome.error().message;
  EXPECT_EQ(*outcome, kube::Action::requeue_after(std::chrono::seconds(5)));
  EXPECT_EQ(f.requests(), (std::vector<std::string>{
                              "POST /api/v1/namespaces/ml/secrets",
                              "PUT /apis/depl.dev/v1alpha1/namespaces/ml/dependabletrainingjobs/"
                              "mnist/status",
                              "DELETE /api/v1/namespaces/ml/pods/mnist-p0-w0",
                              "POST /api/v1/namespaces/ml/services",
                              "POST /api/v1/namespaces/ml/pods",
                          }));
  const auto sent = f.transport->requests();
  const json secret = json::parse(sent[0].request.body);
  EXPECT_EQ(secret["metadata"]["name"], "mnist-progress-a1b2c3d4");
  const std::string token = secret["stringData"][kTokenKey];
  json status_write = json::parse(sent[1].request.body);
  // The status records the Secret's name and the token's hash, never the token.
  EXPECT_EQ(status_write["status"]["progressToken"],
            (json{{"secret", "mnist-progress-a1b2c3d4"}, {"sha256", sha256_hex(token)}}));
  EXPECT_EQ(status_write.dump().find(token), std::string::npos);
  status_write["status"].erase("progressToken");
  EXPECT_EQ(status_write["status"], *d.status);
  EXPECT_EQ(status_write["metadata"]["resourceVersion"], "7") << "the write is fenced by it";
  EXPECT_EQ(json::parse(sent[2].request.body)["preconditions"]["uid"], "uid-old");
  EXPECT_TRUE(f.has_event("PhaseStarted"));
  EXPECT_EQ(f.metrics.value("depl_replans_total", {}), 1);
  // The creates are awaited until the caches show them.
  EXPECT_TRUE(f.expectations.pending("uid-mnist").has_value());
}

// Workers that exist although the status records no token (a status edited by hand): the token
// is made and recorded by a status write of its own, the rest of the status as it was.
TEST(DecisionExecutor, ATokenAloneIsRecordedInTheStatusAsItWas) {
  Fixture f;
  json job = a_job();
  job["status"] = a_planned_status();
  Decision d;
  d.ensure_token_secret = true;
  d.token_secret = "mnist-progress-zz";
  f.transport->push_json(201, json::object());  // the Secret
  f.transport->push_json(200, json::object());  // the status
  auto outcome = f.executor.execute(job, d, false, {});
  ASSERT_TRUE(outcome.has_value()) << outcome.error().message;
  const auto sent = f.transport->requests();
  ASSERT_EQ(sent.size(), 2u);
  json written = json::parse(sent[1].request.body)["status"];
  EXPECT_EQ(written["progressToken"]["secret"], "mnist-progress-zz");
  written.erase("progressToken");
  EXPECT_EQ(written, job["status"]);
}

// A Secret of the drawn name that exists already is someone else's: its token is unknown, so it
// is never recorded; the reconcile fails and the next one draws another name.
TEST(DecisionExecutor, ATokenSecretThatExistsAlreadyIsNeverRecorded) {
  Fixture f;
  Decision d;
  d.status = a_planned_status();
  d.ensure_token_secret = true;
  d.token_secret = "mnist-progress-taken";
  f.transport->push_json(409, {{"kind", "Status"}, {"reason", "AlreadyExists"}, {"code", 409}});
  auto outcome = f.executor.execute(a_job(), d, false, {});
  ASSERT_FALSE(outcome.has_value());
  EXPECT_NE(outcome.error().message.find("mnist-progress-taken"), std::string::npos);
  EXPECT_EQ(f.requests(), (std::vector<std::string>{"POST /api/v1/namespaces/ml/secrets"}));
}

// A create that a later try may get through (a quota): told once as FailedCreate, retried with
// backoff, and the round is noted as without its pods so the retry does not start another round.
TEST(DecisionExecutor, AFailedCreateLeavesTheRoundWithoutItsPods) {
  Fixture f;
  Decision d;
  d.create = {a_pod("mnist-p0-w0"), a_pod("mnist-p0-w1")};
  d.round = {0, 3};
  f.transport->push_status(403, "Forbidden", "exceeded quota: gpus");

  auto outcome = f.executor.execute(a_job(), d, false, {});
  ASSERT_FALSE(outcome.has_value());
  EXPECT_NE(outcome.error().message.find("creating Pod mnist-p0-w0"), std::string::npos);
  EXPECT_EQ(f.transport->request_count(), 1u) << "the second pod is not tried";
  EXPECT_TRUE(f.has_event("FailedCreate"));
  auto round = f.expectations.round_without_pods("uid-mnist");
  ASSERT_TRUE(round.has_value());
  EXPECT_EQ(round->phase, 0);
  EXPECT_EQ(round->round, 3);
  EXPECT_FALSE(f.expectations.pending("uid-mnist").has_value()) << "nothing is awaited";

  // The retry creates them; the note goes.
  f.transport->push_json(201, json::object());
  f.transport->push_json(201, json::object());
  ASSERT_TRUE(f.executor.execute(a_job(), d, true, {}).has_value());
  EXPECT_FALSE(f.expectations.round_without_pods("uid-mnist").has_value());
}

// The API server refuses the object itself (422): the refusal goes into the job's latest status
// (Valid=False) with a Warning Event, so the same spec is not tried again.
TEST(DecisionExecutor, ARefusedCreateIsRecordedInTheJobsStatus) {
  Fixture f;
  Decision d;
  d.create = {a_pod("mnist-p0-w0")};
  json causes = json::array({{{"field", "spec.containers[0].image"}, {"message", "required"}}});
  json refusal = kube::testing::status_body(422, "Invalid", "Pod is invalid");
  refusal["details"] = {{"causes", causes}};
  f.transport->push_json(422, refusal);
  json latest = a_job();
  latest["metadata"]["resourceVersion"] = "9";
  f.transport->push_json(200, latest);          // the latest job
  f.transport->push_json(200, json::object());  // its status written

  ASSERT_FALSE(f.executor.execute(a_job(), d, false, {}).has_value());
  EXPECT_EQ(f.requests(),
            (std::vector<std::string>{
                "POST /api/v1/namespaces/ml/pods",
                "GET /apis/depl.dev/v1alpha1/namespaces/ml/dependabletrainingjobs/mnist",
                "PUT /apis/depl.dev/v1alpha1/namespaces/ml/dependabletrainingjobs/mnist/status"}));
  const json written = json::parse(f.transport->requests()[2].request.body);
  EXPECT_EQ(written["metadata"]["resourceVersion"], "9");
  const JobStatus status = decode_status(written["status"]);
  EXPECT_EQ(status.condition_is(conditions::kValid), false);
  EXPECT_EQ(status.condition(conditions::kValid)->reason, kRejectedByApiServer);
  EXPECT_TRUE(f.has_event(kRejectedByApiServer));
}

TEST(DecisionExecutor, ANameHeldByAnotherIsToldAndRetried) {
  Fixture f;
  Decision d;
  d.create = {a_pod("mnist-p0-w0")};
  f.transport->push_status(409, "AlreadyExists", "pods \"mnist-p0-w0\" already exists");
  f.transport->push_json(200, a_pod("mnist-p0-w0", "uid-someone-else"));
  auto outcome = f.executor.execute(a_job(), d, false, {});
  ASSERT_FALSE(outcome.has_value());
  EXPECT_NE(outcome.error().message.find("not controlled by this job"), std::string::npos);
  EXPECT_TRUE(f.has_event("FailedCreate"));

  // Ours, from an earlier try whose answer was lost: nothing to do.
  Fixture g;
  g.transport->push_status(409, "AlreadyExists", "pods \"mnist-p0-w0\" already exists");
  g.transport->push_json(200, a_pod("mnist-p0-w0"));
  EXPECT_TRUE(g.executor.execute(a_job(), d, false, {}).has_value());
  EXPECT_TRUE(g.events.empty());
}

// The other owner's object is deleted between the create and the read: no event of an object the
// job does not own would wake it again, so the reconcile fails and is retried with backoff, and
// no creation is left expected.
TEST(DecisionExecutor, ANameFreedBetweenTheCreateAndTheReadIsRetried) {
  Fixture f;
  Decision d;
  d.create = {a_pod("mnist-p0-w0")};
  f.transport->push_status(409, "AlreadyExists", "pods \"mnist-p0-w0\" already exists");
  f.transport->push_status(404, "NotFound", "pods \"mnist-p0-w0\" not found");
  auto outcome = f.executor.execute(a_job(), d, false, {});
  ASSERT_FALSE(outcome.has_value());
  EXPECT_NE(outcome.error().message.find("trying again"), std::string::npos);
  EXPECT_FALSE(f.has_event("FailedCreate"));
  EXPECT_FALSE(f.expectations.pending("uid-mnist").has_value());
}

// A gang's PodGroup is created at its own path before the workers, is awaited by no cache, and
// one found there from an earlier try is taken as ours.
TEST(DecisionExecutor, APodGroupIsCreatedBeforeTheWorkersAndNotAwaited) {
  Fixture f;
  Decision d;
  json group = build_pod_group(a_job(), "mnist-p0-v1-r1", 2);
  d.create = {group, a_pod("mnist-p0-w0"), a_pod("mnist-p0-w1")};
  f.transport->push_status(409, "AlreadyExists", "podgroups \"mnist-p0-v1-r1\" already exists");
  group["metadata"]["uid"] = "uid-group";
  f.transport->push_json(200, group);
  f.transport->push_json(201, json::object());
  f.transport->push_json(201, json::object());
  ASSERT_TRUE(f.executor.execute(a_job(), d, false, {}).has_value());
  EXPECT_EQ(f.requests(),
            (std::vector<std::string>{
                "POST /apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups",
                "GET /apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/mnist-p0-v1-r1",
                "POST /api/v1/namespaces/ml/pods", "POST /api/v1/namespaces/ml/pods"}));
  EXPECT_TRUE(f.events.empty());
  auto awaited = f.expectations.pending("uid-mnist");
  ASSERT_TRUE(awaited.has_value());
  EXPECT_EQ(awaited->objects, 2u) << "the two pods, not the PodGroup";
}

// Restarting workers from the cached progress without a status write to fence it: only when the
// cache holds the API server's latest job.
TEST(DecisionExecutor, WorkersRestartOnlyFromTheLatestJob) {
  Fixture f;
  Decision d;
  d.needs_latest_job = true;
  d.remove = {{"Pod", "mnist-p0-w0", "uid-p"}};
  json newer = a_job();
  newer["metadata"]["resourceVersion"] = "8";
  f.transport->push_json(200, newer);
  auto outcome = f.executor.execute(a_job(), d, false, {});
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(*outcome, kube::Action::requeue_after(std::chrono::seconds(1)));
  EXPECT_EQ(f.transport->request_count(), 1u) << "nothing deleted from a stale cache";

  f.transport->push_json(200, a_job());
  f.transport->push_json(200, json::object());
  ASSERT_TRUE(f.executor.execute(a_job(), d, false, {}).has_value());
  EXPECT_EQ(f.requests().back(), "DELETE /api/v1/namespaces/ml/pods/mnist-p0-w0");
}

TEST(DecisionExecutor, AFinishedJobPastItsTtlIsDeletedWithItsChildren) {
  Fixture f;
  Decision d;
  d.delete_job = true;
  f.transport->push_json(200, json::object());
  auto outcome = f.executor.execute(a_job(), d, false, {});
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(*outcome, kube::Action::await_change());
  const auto sent = f.transport->requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].request.method, "DELETE");
  const json body = json::parse(sent[0].request.body);
  EXPECT_EQ(body["propagationPolicy"], "Background");
  EXPECT_EQ(body["preconditions"]["uid"], "uid-mnist");
}

// A first plan lets the next job in line plan at once; if its write fails, the line forgets it.
TEST(DecisionExecutor, AFirstPlanTakesTheTurnUntilItsWriteFails) {
  Fixture f;
  const json first = a_job("first", "2026-11-22T05:00:00Z");
  const json second = a_job("second", "2026-11-22T05:00:01Z");
  f.line.put(first);
  f.line.put(second);
  ASSERT_EQ(f.line.unplanned_before(second), "ml/first");
  Decision d;
  d.status = a_planned_status();
  f.transport->push_status(409, "Conflict", "the object has been modified");
  ASSERT_FALSE(f.executor.execute(first, d, false, {}).has_value());
  EXPECT_EQ(f.turns_taken, 1) << "the next job was woken before the write";
  EXPECT_EQ(f.line.unplanned_before(second), "ml/first") << "forgotten after the failed write";

  f.transport->push_json(200, json::object());
  ASSERT_TRUE(f.executor.execute(first, d, false, {}).has_value());
  EXPECT_EQ(f.line.unplanned_before(second), "");
}

}  // namespace
}  // namespace depl::controller
