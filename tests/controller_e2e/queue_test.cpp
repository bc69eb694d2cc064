// A job admitted through a Kueue queue, end to end on the dev cluster: its workers carry the pod
// group metadata, Kueue's webhook (as the dev cluster plays it) holds them with its scheduling
// gate, the job waits Queued without failing, and once the test admits the groups (removing the
// gates, as Kueue does) every phase runs and the job succeeds.
#include <gmock/gmock.h>

#include "depl/kube/resource.hpp"
#include "e2e_fixture.hpp"

namespace depl::e2e {
namespace {

using ::testing::IsEmpty;

TEST_F(ControllerE2e, AQueuedJobWaitsBehindItsGateAndRunsOnceAdmitted) {
  ClusterSetup setup;
  setup.kueue_pod_webhook = true;
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml", setup));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  json job = job_from("job.yaml", "queued", 0.1);
  job["spec"]["queueName"] = "team-a";
  create_job(job);

  json queued = wait_job(
      "queued", [](const json& j) { return job_phase(j) == "Queued"; }, "phase Queued");
  EXPECT_EQ(condition_status(queued, "Queued"), "True");
  EXPECT_TRUE(queued["status"]["queue"].contains("since")) << queued["status"].dump(2);
  std::vector<json> pods;
  ASSERT_TRUE(wait_until([&] {
    pods = pods_of("queued");
    return !pods.empty() && std::all_of(pods.begin(), pods.end(), scheduling_gated);
  })) << "no gated workers";
  const std::string group =
      pods[0]["metadata"]["labels"].value("kueue.x-k8s.io/pod-group-name", "");
  EXPECT_FALSE(group.empty());
  for (const auto& pod : pods) {
    const json& meta = pod["metadata"];
    EXPECT_EQ(meta["labels"].value("kueue.x-k8s.io/queue-name", ""), "team-a");
    EXPECT_EQ(meta["labels"].value("kueue.x-k8s.io/pod-group-name", ""), group);
    EXPECT_EQ(meta["annotations"].value("kueue.x-k8s.io/pod-group-total-count", ""),
              std::to_string(pods.size()));
    EXPECT_EQ(pod["status"].value("phase", ""), "Pending");
    EXPECT_FALSE(pod["spec"].contains("nodeName"));
  }
  // Held, not failed: the status counts no failure and the job stays Queued.
  queued = get_job("queued");
  EXPECT_EQ(job_phase(queued), "Queued");
  EXPECT_EQ(queued["status"]["progress"].value("failures", 0), 0);

  // Admit each group as Kueue would, phase after phase, until the job ends.
  json done = wait_ended_admitting_gated("queued");
  EXPECT_EQ(job_phase(done), "Succeeded") << done["status"].dump(2);
  EXPECT_GT(done["status"]["queue"].value("waitedSeconds", 0.0), 0.0);
  EXPECT_FALSE(done["status"]["queue"].contains("since"));
  EXPECT_TRUE(has_event("queued", "Queued"));
  EXPECT_TRUE(has_event("queued", "Admitted"));
  EXPECT_FALSE(has_event("queued", "WorkerFailed"));
  for (const auto& pod : pods_->created_for("queued")) {
    EXPECT_EQ(pod["metadata"]["labels"].value("kueue.x-k8s.io/queue-name", ""), "team-a");
  }
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

}  // namespace
}  // namespace depl::e2e
