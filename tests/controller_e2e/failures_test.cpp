// Things going wrong while a job runs: a worker pod fails (recreated, resumed from the
// checkpoint), the pool's node is deleted (re-planned onto the remaining pool), a spot node is
// reclaimed three times (preemptions, not failures), and the controller stops mid-phase and
// starts again (no duplicate pods, running pods kept, the job completes). Each ends with the job
// Succeeded.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e_fixture.hpp"

namespace depl::e2e {
namespace {

using ::testing::IsEmpty;
namespace resources = kube::resources;

int progress_epoch(const json& job) {
  auto status = job.find("status");
  if (status == job.end() || !status->contains("progress")) return 0;
  return (*status)["progress"].value("epoch", 0);
}

TEST_F(ControllerE2e, FailedWorkerPodIsRecreatedAndResumesFromTheCheckpoint) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  json job = job_from("job.yaml", "flaky", 0.05);
  // The first phase's variant fails once, right after reporting epoch 3.
  for (json& model : job["spec"]["models"]) {
    if (model["name"] == "small")
      model["env"].push_back({{"name", "DEPL_SIM_FAIL_AT_EPOCH"}, {"value", "3"}});
  }
  create_job(job);
  job = wait_succeeded("flaky");

  const auto uids = pods_->incarnations("default", "flaky-p0-w0");
  ASSERT_EQ(uids.size(), 2u) << "the failed pod should have been recreated once";
  std::vector<std::string> starts;
  for (const auto& pod : pods_->created_for("flaky")) {
    if (pod["metadata"].value("name", "") == "flaky-p0-w0")
      starts.push_back(pod_env(pod, "DEPL_START_EPOCH")->get<std::string>());
  }
  // The replacement starts where the failed pod's last report left the job.
  EXPECT_EQ(starts, (std::vector<std::string>{"0", "3"}));
  EXPECT_TRUE(wait_until([&] {
    for (const auto& e : events_of("flaky")) {
      if (e.value("reason", "") == "WorkerFailed" &&
          e.value("message", "").find("exit code 1") != std::string::npos)
        return true;
    }
    return false;
  })) << "no WorkerFailed event with the exit code";
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

TEST_F(ControllerE2e, DeletedNodeMidPhaseIsReplannedOntoTheRemainingPool) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-two.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "moving", 0.1));
  json job = wait_job(
      "moving", [](const json& j) { return progress_epoch(j) >= 2; }, "two reported epochs");
  ASSERT_EQ(job["status"]["progress"].value("pool", ""), "fast") << job["status"].dump(1);
  const int epoch_before = progress_epoch(job);

  auto deleted = cluster_->delete_node("fast-0");
  ASSERT_TRUE(deleted) << deleted.error().message;
  job = wait_job(
      "moving",
      [](const json& j) {
        return j.value("status", json::object())
                   .value("progress", json::object())
                   .value("pool", "") == "spare";
      },
      "the job to move to the spare pool");
  EXPECT_TRUE(wait_until([&] { return has_event("moving", "Replanned"); }));
  job = wait_succeeded("moving");
  EXPECT_GT(progress_epoch(job), epoch_before);
  bool ran_on_spare = false;
  for (const auto& pod : pods_->created_for("moving")) {
    if (pod["spec"]["nodeSelector"].value("depl.dev/pool", "") == "spare") {
      ran_on_spare = true;
      // It continued: nothing started over from epoch 0 after the node was lost.
      EXPECT_NE(pod_env(pod, "DEPL_START_EPOCH"), json("0"));
    }
  }
  EXPECT_TRUE(ran_on_spare);
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

int preemptions(const json& job) {
  return job.value("status", json::object())
      .value("progress", json::object())
      .value("preemptions", 0);
}

// A phase on a spot pool survives three reclaims of a node it runs on: each time the node's pods
// get DisruptionTarget and SIGTERM (the workers checkpoint where they are and exit 143), the
// controller stops the round's other workers, counts a preemption, never a failure, and starts
// the round again from the checkpoint on the pool's other node, or on the replacement once it
// registers when the reclaim took the pool's last node (the job waits or is re-planned meanwhile,
// and the preemption still counts); each round after a reclaim starts at the epoch the job had
// reached when the node was reclaimed (at most the epoch in progress is redone), and the job
// succeeds.
TEST_F(ControllerE2e, ASpotPhaseSurvivesThreeReclaimsAndSucceeds) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-spot.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "reclaimed", 0.3));
  for (int i = 1; i <= 3; ++i) {
    SCOPED_TRACE(::testing::Message() << "reclaim " << i);
    const json before = wait_job(
        "reclaimed",
        [&](const json& j) { return progress_epoch(j) >= 2 * i && preemptions(j) == i - 1; },
        "epochs before the next reclaim");
    const int epoch_at = progress_epoch(before);
    std::string node;
    for (const auto& pod : pods_of("reclaimed")) {
      if (pod_terminal(pod) || pod["metadata"].contains("deletionTimestamp")) continue;
      const std::string on = pod.value("spec", json::object()).value("nodeName", "");
      if (!on.empty()) node = on;
    }
    ASSERT_FALSE(node.empty()) << "no running worker pod";
    devcluster::DevCluster::ReclaimOptions options;
    options.notice = std::chrono::seconds(10);
    options.replacement_after = std::chrono::seconds(1);
    auto reclaimed = cluster_->reclaim_node(node, options);
    ASSERT_TRUE(reclaimed) << reclaimed.error().message;
    const json after = wait_job(
        "reclaimed", [&](const json& j) { return preemptions(j) >= i; }, "the preemption");
    EXPECT_EQ(after["status"]["progress"].value("failures", 0), 0);
    // The next round's pods start where the job was when the node went, or later.
    EXPECT_TRUE(wait_until([&] {
      for (const auto& pod : pods_of("reclaimed")) {
        if (pod_terminal(pod) || pod["metadata"].contains("deletionTimestamp")) continue;
        const auto start = pod_env(pod, "DEPL_START_EPOCH");
        if (start && std::stoi(start->get<std::string>()) >= epoch_at) return true;
      }
      return false;
    })) << "no worker of a round starting at epoch "
        << epoch_at << " or later";
  }
  const json done = wait_succeeded("reclaimed");
  const json& status = done["status"];
  EXPECT_EQ(status["progress"].value("failures", 0), 0);
  EXPECT_EQ(status["progress"].value("preemptions", 0), 3);
  EXPECT_EQ(
      status.value("preemptions", json::object()).value("spot", json::object()).value("count", 0),
      3)
      << status.dump(1);
  // The time each reclaim cost is kept through the API server's structural schema: at least the
  // pool's restart (60 s of startup) per round, summed per pool and in all; so is the time the
  // workers trained on the pool.
  const json spot = status.value("preemptions", json::object()).value("spot", json::object());
  EXPECT_GE(spot.value("lostSeconds", 0.0), 3 * 60.0) << status.dump(1);
  EXPECT_DOUBLE_EQ(status["progress"].value("lostSeconds", 0.0), spot.value("lostSeconds", 0.0));
  EXPECT_GT(spot.value("workerSeconds", 0.0), 0.0);
  EXPECT_FALSE(has_event("reclaimed", "WorkerFailed"));
  EXPECT_TRUE(has_event("reclaimed", "WorkerPreempted"));
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

// The pools the plan in force runs on from its running phase.
std::vector<std::string> pools_ahead(const json& job) {
  std::vector<std::string> out;
  const json status = job.value("status", json::object());
  const int running = status.value("progress", json::object()).value("phase", 0);
  const json phases = status.value("plan", json::object()).value("phases", json::array());
  for (std::size_t i = static_cast<std::size_t>(running); i < phases.size(); ++i)
    out.push_back(phases[i].value("pool", ""));
  return out;
}

// A spot pool that interrupts the job more than it states (0.5 per worker-hour) loses the rest of
// the job to the on-demand pool beside it: the deadline (900 s) is one the spot plan keeps at the
// stated rate and not at 0.6 (`kubectl depl plan` on these pools). The spot node under the
// running phase is reclaimed until the plan moves, at most three times: after c reclaims in
// little training time the rate observed is about 0.5 (1 + c/2), so the first already moves it.
// Each reclaim is a preemption, none a failure, an InterruptionRateRaised Event tells of the
// rate, and the rest of the job runs on demand from where it was, and succeeds.
TEST_F(ControllerE2e, ReclaimsBeyondTheStatedRateMoveThePlanOntoOnDemand) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-spot-ondemand.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  json spec = job_from("job.yaml", "moved", 0.3);
  spec["spec"]["target"]["deadlineSeconds"] = 900;
  create_job(spec);
  json job = wait_job(
      "moved", [](const json& j) { return progress_epoch(j) >= 1; }, "the first epoch");
  ASSERT_EQ(pools_ahead(job), (std::vector<std::string>{"spot", "spot"}))
      << job["status"]["plan"].dump(1);
  int reclaims = 0;
  for (; reclaims < 3; ++reclaims) {
    const auto ahead = pools_ahead(job);
    if (std::find(ahead.begin(), ahead.end(), "spot") == ahead.end()) break;
    SCOPED_TRACE(::testing::Message() << "reclaim " << reclaims + 1);
    std::string node;
    for (const auto& pod : pods_of("moved")) {
      if (pod_terminal(pod) || pod["metadata"].contains("deletionTimestamp")) continue;
      const std::string on = pod.value("spec", json::object()).value("nodeName", "");
      if (on.rfind("spot-", 0) == 0) node = on;
    }
    ASSERT_FALSE(node.empty()) << "no worker pod running on spot";
    devcluster::DevCluster::ReclaimOptions options;
    options.notice = std::chrono::seconds(10);
    options.replacement_after = std::chrono::seconds(1);
    auto reclaimed = cluster_->reclaim_node(node, options);
    ASSERT_TRUE(reclaimed) << reclaimed.error().message;
    // Counted, and the plan re-priced with the rate observed: kept on spot, or moved off it.
    job = wait_job(
        "moved", [&](const json& j) { return preemptions(j) >= reclaims + 1; }, "the preemption");
    // The replacement registered, so the next reclaim leaves the pool a node: the plan moves for
    // the rate it observes, never for want of spot capacity.
    EXPECT_TRUE(wait_until([&] {
      int ready = 0;
      for (const auto& n : list(resources::nodes(), "depl.dev/pool=spot")) {
        if (!n["metadata"].contains("deletionTimestamp")) ++ready;
      }
      return ready == 2;
    })) << "the spot pool has no replacement node";
    job = wait_job(
        "moved",
        [&](const json& j) {
          const auto next = pools_ahead(j);
          if (std::find(next.begin(), next.end(), "spot") == next.end()) return true;
          for (const auto& pod : pods_of("moved")) {
            if (pod_terminal(pod) || pod["metadata"].contains("deletionTimestamp")) continue;
            if (pod.value("spec", json::object()).value("nodeName", "").rfind("spot-", 0) == 0 &&
                pod.value("status", json::object()).value("phase", "") == "Running")
              return true;
          }
          return false;
        },
        "the next round on spot, or the plan off it");
  }
  job = wait_job(
      "moved",
      [](const json& j) {
        const auto ahead = pools_ahead(j);
        return !ahead.empty() && std::find(ahead.begin(), ahead.end(), "spot") == ahead.end();
      },
      "the plan to leave the spot pool");
  EXPECT_GE(reclaims, 1);
  EXPECT_TRUE(wait_until([&] { return has_event("moved", "InterruptionRateRaised"); }));
  const json done = wait_succeeded("moved");
  EXPECT_EQ(done["status"]["progress"].value("failures", 0), 0);
  EXPECT_EQ(preemptions(done), reclaims) << done["status"].dump(1);
  bool ran_on_demand = false;
  for (const auto& pod : pods_->created_for("moved")) {
    if (pod["spec"]["nodeSelector"].value("depl.dev/pool", "") != "ondemand") continue;
    ran_on_demand = true;
    // It continued: nothing on demand started over from epoch 0.
    EXPECT_NE(pod_env(pod, "DEPL_START_EPOCH"), json("0"));
  }
  EXPECT_TRUE(ran_on_demand);
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

// A reclaim takes the only node of the spot pool the job runs on; the replacement registers 3 s
// later. The job waits for it (WaitingForSpotCapacity: status.capacityWait names the pool), is
// neither re-planned onto the on-demand pool beside it nor Infeasible, resumes on the replacement
// from the epoch reached (SpotCapacityBack), and succeeds with one preemption and no failure;
// every worker ran on spot. Before, the job was re-planned onto on demand as soon as the spot node
// was tainted.
TEST_F(ControllerE2e, AJobWaitsForItsSpotPoolsReplacementNodeAndResumesThere) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-spot-single.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "waits", 0.3));
  json job = wait_job(
      "waits", [](const json& j) { return progress_epoch(j) >= 2; }, "two epochs");
  ASSERT_EQ(pools_ahead(job), (std::vector<std::string>{"spot", "spot"}))
      << job["status"]["plan"].dump(1);
  std::string node;
  for (const auto& pod : pods_of("waits")) {
    if (pod_terminal(pod) || pod["metadata"].contains("deletionTimestamp")) continue;
    node = pod.value("spec", json::object()).value("nodeName", "");
  }
  ASSERT_EQ(node.rfind("spot-", 0), 0u) << node;
  devcluster::DevCluster::ReclaimOptions options;
  options.notice = std::chrono::seconds(10);
  options.replacement_after = std::chrono::seconds(3);
  auto reclaimed = cluster_->reclaim_node(node, options);
  ASSERT_TRUE(reclaimed) << reclaimed.error().message;
  EXPECT_TRUE(wait_until([&] { return has_event("waits", "WaitingForSpotCapacity"); }));
  EXPECT_TRUE(wait_until([&] { return has_event("waits", "SpotCapacityBack"); }));
  const json done = wait_succeeded("waits");
  const json& status = done["status"];
  EXPECT_EQ(status["progress"].value("failures", 0), 0);
  EXPECT_EQ(preemptions(done), 1) << status.dump(1);
  // Re-plans on deviation or at the observed rate may refresh the plan; none leaves spot.
  for (const auto& phase : status["plan"]["phases"]) {
    EXPECT_EQ(phase.value("pool", ""), "spot") << status.dump(1);
  }
  EXPECT_FALSE(has_event("waits", "Infeasible"));
  EXPECT_FALSE(has_event("waits", "SpotCapacityWaitOver"));
  const json wait = status.value("capacityWait", json::object());
  EXPECT_FALSE(wait.contains("since")) << status.dump(1);
  EXPECT_GT(wait.value("waitedSeconds", 0.0), 0.0);
  for (const auto& pod : pods_->created_for("waits")) {
    EXPECT_EQ(pod["spec"]["nodeSelector"].value("depl.dev/pool", ""), "spot");
  }
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

// The same reclaim with no replacement, and --spot-capacity-wait 2s: the job waits 2 s, then is
// planned without the pool (SpotCapacityWaitOver, Replanned) and the rest runs on demand from
// where it was, and succeeds.
TEST_F(ControllerE2e, AJobWhoseSpotPoolStaysEmptyMovesOnDemandAfterTheWait) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-spot-single.yaml"));
  spot_capacity_wait_ = std::chrono::seconds(2);
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "gives-up", 0.3));
  json job = wait_job(
      "gives-up", [](const json& j) { return progress_epoch(j) >= 2; }, "two epochs");
  ASSERT_EQ(pools_ahead(job), (std::vector<std::string>{"spot", "spot"}))
      << job["status"]["plan"].dump(1);
  std::string node;
  for (const auto& pod : pods_of("gives-up")) {
    if (pod_terminal(pod) || pod["metadata"].contains("deletionTimestamp")) continue;
    node = pod.value("spec", json::object()).value("nodeName", "");
  }
  ASSERT_EQ(node.rfind("spot-", 0), 0u) << node;
  devcluster::DevCluster::ReclaimOptions options;
  options.notice = std::chrono::seconds(10);
  options.replacement_after = std::chrono::milliseconds(-1);
  auto reclaimed = cluster_->reclaim_node(node, options);
  ASSERT_TRUE(reclaimed) << reclaimed.error().message;
  EXPECT_TRUE(wait_until([&] { return has_event("gives-up", "WaitingForSpotCapacity"); }));
  EXPECT_TRUE(wait_until([&] { return has_event("gives-up", "SpotCapacityWaitOver"); }));
  const json done = wait_succeeded("gives-up");
  EXPECT_EQ(done["status"]["progress"].value("failures", 0), 0);
  EXPECT_EQ(preemptions(done), 1);
  EXPECT_TRUE(has_event("gives-up", "Replanned"));
  for (const auto& pool : pools_ahead(done)) EXPECT_NE(pool, "spot");
  bool ran_on_demand = false;
  for (const auto& pod : pods_->created_for("gives-up")) {
    if (pod["spec"]["nodeSelector"].value("depl.dev/pool", "") != "ondemand") continue;
    ran_on_demand = true;
    EXPECT_NE(pod_env(pod, "DEPL_START_EPOCH"), json("0"));
  }
  EXPECT_TRUE(ran_on_demand);
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

TEST_F(ControllerE2e, ControllerRestartedMidPhaseCreatesNoDuplicatePodsAndTheJobCompletes) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  // The restarted controller listens on the same progress port (as a Service address would
  // stay the same), so workers reporting during the gap retry and reach it.
  const std::string url = progress_url();
  const auto port = static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  json job = job_from("job.yaml", "steady", 0.15);
  job["spec"]["training"]["workers"]["min"] = 2;  // two ranks per phase
  create_job(job);
  job = wait_job(
      "steady", [](const json& j) { return progress_epoch(j) >= 2; }, "two reported epochs");
  ASSERT_EQ(job["status"]["plan"]["phases"][0].value("workers", 0), 2);

  stop_controller();
  const auto running_before = pods_of("steady");
  ASSERT_NO_FATAL_FAILURE(start_controller(port));
  job = wait_succeeded("steady");

  // The pods that ran when the controller stopped were adopted, not replaced.
  for (const auto& pod : running_before) {
    const std::string name = pod["metadata"].value("name", "");
    if (pod_terminal(pod)) continue;
    EXPECT_EQ(pods_->incarnations("default", name).size(), 1u) << name << " was recreated";
  }
  // Every (phase, rank) had one pod at a time, all along.
  EXPECT_THAT(pods_->violations(), IsEmpty());
  EXPECT_GE(pods_->created_for("steady").size(), 4u);  // two phases of two ranks
}

}  // namespace
}  // namespace depl::e2e
