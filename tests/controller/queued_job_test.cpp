// decide() for a job admitted through a queue (Kueue plain-pod groups): its workers carry the
// group metadata, pods held by scheduling gates make the job Queued (not failed, not stuck), the
// wait is recorded, and a wait that threatens the deadline has the plan made again.
#include <gtest/gtest.h>

#include "decision_fixture.hpp"
#include "depl/controller/job_decision.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/queue_admission.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;
using std::chrono::seconds;

using fixture::has_event;
using fixture::kNow;
using fixture::kNowText;
using fixture::options;

json queued_job(const json& queue_spec, const json& labels = json::object()) {
  json job = fixture::quickstart_job();
  job["metadata"]["creationTimestamp"] = kNowText;
  if (!labels.empty()) job["metadata"]["labels"] = labels;
  for (const auto& [k, v] : queue_spec.items()) job["spec"][k] = v;
  return job;
}

JobView view_of(json job) {
  return fixture::job_view(std::move(job), {fixture::gpu_node("a100-0", "a100", 8, 120000, 2.5),
                                            fixture::gpu_node("a100-1", "a100", 8, 120000, 2.5)});
}

// Applies a decision as the executor, with Kueue's webhook gating the pods it creates.
void apply_gated(JobView& v, const Decision& d) {
  fixture::apply(v, d, [](json& o) {
    o["metadata"]["creationTimestamp"] = kNowText;
    if (o["kind"] == "Pod") {
      o["spec"]["schedulingGates"] = json::array({{{"name", "kueue.x-k8s.io/admission"}}});
      o["status"] = {{"phase", "Pending"}};
    }
  });
}

std::string condition_reason(const json& status, const std::string& type) {
  return fixture::condition_field(status, type, "reason");
}

TEST(QueuedJob, ARoundsWorkersFormOnePodGroupOnTheQueue) {
  for (const json& job : {queued_job({{"queueName", "team-a"}}),
                          queued_job(json::object(), {{"kueue.x-k8s.io/queue-name", "team-a"}})}) {
    const Decision d = decide(view_of(job), options());
    ASSERT_TRUE(d.status);
    const auto plan = plan_from_json(*d.status);
    ASSERT_TRUE(plan);
    const int workers = plan->phases[0].workers;
    int pods = 0;
    for (const auto& o : d.create) {
      if (o["kind"] != "Pod") continue;
      ++pods;
      EXPECT_EQ(o["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "team-a");
      EXPECT_EQ(o["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"], "quickstart-p0-v1-r1");
      EXPECT_EQ(o["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"],
                std::to_string(workers));
      EXPECT_EQ(o["metadata"]["annotations"]["kueue.x-k8s.io/retriable-in-group"], "false");
    }
    EXPECT_EQ(pods, workers);
  }
  // Without a queue, no pod says anything of Kueue.
  const Decision plain = decide(view_of(queued_job(json::object())), options());
  for (const auto& o : plain.create) {
    EXPECT_FALSE(o["metadata"]["labels"].contains("kueue.x-k8s.io/pod-group-name"));
  }
}

TEST(QueuedJob, GatedWorkersMakeTheJobQueuedUntilTheyAreAdmitted) {
  JobView v = view_of(queued_job({{"queueName", "team-a"}}));
  apply_gated(v, decide(v, options()));
  // Held by the gate for two minutes: Queued since the pods were made, nothing failed or removed.
  v.now = kNow + seconds(120);
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ((*d.status)["phase"], phases::kQueued) << d.status->dump(2);
  EXPECT_NE((*d.status)["message"].get<std::string>().find("waiting for admission by queue "
                                                           "team-a since " +
                                                           kNowText),
            std::string::npos)
      << (*d.status)["message"];
  EXPECT_EQ(condition_status(*d.status, conditions::kQueued), true);
  EXPECT_EQ(condition_reason(*d.status, conditions::kQueued), "WaitingForAdmission");
  EXPECT_EQ(condition_status(*d.status, "Running"), false);
  EXPECT_EQ((*d.status)["queue"]["since"], kNowText);
  EXPECT_TRUE(has_event(d, "Queued"));
  EXPECT_TRUE(d.remove.empty());
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(progress_from_json(*d.status).failures, 0);
  // The job looks again when the wait would threaten the deadline, not before.
  ASSERT_TRUE(d.requeue_after);
  const auto plan = plan_from_json(*d.status);
  ASSERT_TRUE(plan);
  EXPECT_EQ(d.requeue_after->count(),
            static_cast<long>(std::ceil(2400 - plan->duration_seconds - 120)));
  v.job["status"] = *d.status;

  // A later look changes nothing while the gate holds.
  v.now = kNow + seconds(180);
  d = decide(v, options());
  EXPECT_FALSE(d.status) << d.status->dump(2);
  EXPECT_FALSE(has_event(d, "Queued"));

  // Kueue admits the group: the gates go and the pods run.
  for (auto& pod : v.owned_pods) {
    pod["spec"].erase("schedulingGates");
    pod["spec"]["nodeName"] = "a100-0";
    pod["status"]["phase"] = "Running";
  }
  v.now = kNow + seconds(200);
  d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ((*d.status)["phase"], "Running");
  EXPECT_EQ(condition_status(*d.status, conditions::kQueued), false);
  EXPECT_EQ(condition_reason(*d.status, conditions::kQueued), "Admitted");
  EXPECT_EQ(condition_status(*d.status, "Running"), true);
  EXPECT_TRUE(has_event(d, "Admitted"));
  EXPECT_FALSE((*d.status)["queue"].contains("since"));
  EXPECT_DOUBLE_EQ((*d.status)["queue"]["waitedSeconds"].get<double>(), 200);
}

TEST(QueuedJob, AWaitThatThreatensTheDeadlineHasThePlanMadeAgainOnce) {
  JobView v = view_of(queued_job({{"queueName", "team-a"}}));
  apply_gated(v, decide(v, options()));
  const auto plan = plan_from_json(v.job["status"]);
  ASSERT_TRUE(plan);
  const double slack = 2400 - plan->duration_seconds;
  ASSERT_GT(slack, 0);
  v.now = kNow + seconds(static_cast<long>(std::ceil(slack)) + 1);
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_TRUE(has_event(d, "QueueDelay"));
  EXPECT_EQ((*d.status)["replanRequested"], true);
  EXPECT_EQ((*d.status)["queue"]["replanned"], true);
  ASSERT_TRUE(d.requeue_after);
  EXPECT_EQ(d.requeue_after->count(), 0);

  // The next reconcile plans for what is left of the deadline: the time waited is gone from it.
  v.job["status"] = *d.status;
  v.now += seconds(1);
  d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_FALSE(d.status->value("replanRequested", false)) << d.status->dump(2);
  EXPECT_FALSE(has_event(d, "QueueDelay"));
  v.job["status"] = *d.status;
  v.now += seconds(1);
  EXPECT_FALSE(has_event(decide(v, options()), "QueueDelay"));  // once per wait
}

TEST(QueuedJob, AQueueNameThatIsNoLocalQueueNameIsAnInvalidSpec) {
  const Decision d = decide(view_of(queued_job({{"queueName", "Team_A"}})), options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ(condition_status(*d.status, "Valid"), false);
  EXPECT_NE((*d.status)["message"].get<std::string>().find("spec.queueName \"Team_A\""),
            std::string::npos)
      << (*d.status)["message"];
  EXPECT_TRUE(d.create.empty());
}

}  // namespace
}  // namespace depl::controller
