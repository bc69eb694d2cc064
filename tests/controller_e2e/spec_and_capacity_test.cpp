// The spec and the cluster's capacity: an invalid spec is reported (Valid=False naming the field,
// a Warning Event, no pods) until fixed, and so is one only the API server knows to be invalid
// (it refuses the worker pods); a job the cluster cannot run waits Pending with the
// reason until nodes are added; two jobs competing for one GPU both finish, one after the other,
// and the pool is never promised more GPUs than it has. A job past the solver's limits is kept
// and told which field keeps it from a plan.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "depl/controller/job_resource.hpp"
#include "e2e_fixture.hpp"
#include "write_log.hpp"

namespace depl::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(ControllerE2e, InvalidSpecIsReportedWithTheFieldAndRecoversOnceFixed) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  json job = job_from("job.yaml", "broken", 0.1);
  // Valid for the CRD's schema, invalid for the model: a switch to a variant that does not exist.
  const json good_switching = job["spec"]["switching"];
  job["spec"]["switching"][0]["to"] = "huge";
  create_job(job);

  job = wait_job(
      "broken", [](const json& j) { return condition_status(j, "Valid") == "False"; },
      "Valid=False");
  EXPECT_EQ(condition_reason(job, "Valid"), "InvalidSpec");
  EXPECT_THAT(condition_message(job, "Valid"), HasSubstr("spec.switching[0].to"));
  EXPECT_EQ(job_phase(job), "Pending");
  EXPECT_TRUE(wait_until([&] {
    for (const auto& e : events_of("broken")) {
      if (e.value("reason", "") == "InvalidSpec" && e.value("type", "") == "Warning" &&
          e.value("message", "").find("spec.switching[0].to") != std::string::npos)
        return true;
    }
    return false;
  })) << "no Warning Event InvalidSpec naming the field";
  EXPECT_TRUE(pods_of("broken").empty());
  EXPECT_TRUE(pods_->created_for("broken").empty());

  merge_patch_job("broken", {{"spec", {{"switching", good_switching}}}});
  job = wait_job(
      "broken", [](const json& j) { return condition_status(j, "Valid") == "True"; },
      "Valid=True after the fix");
  job = wait_succeeded("broken");
  EXPECT_EQ(condition_status(job, "Planned"), "True");
  EXPECT_FALSE(pods_->created_for("broken").empty());
}

// A job past the solver's limits, as the schema has always let the API server store one (here
// maxEpochs above the solver's 1000, through the real kubectl): the controller keeps it (Valid,
// not planned, the field named in its status and a Warning Event, no pods), a finalizer another
// party holds on it can be removed, and the job is then deleted.
TEST_F(ControllerE2e, AJobPastTheSolversLimitsIsKeptNamingTheFieldAndCanBeDeleted) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  json job = job_from("job.yaml", "past-limits", 0.1);
  job["spec"]["training"]["maxEpochs"] = 5000;
  job["metadata"]["finalizers"] = json::array({"example.com/keep"});
  const bool with_kubectl = kubectl_installed();
  if (with_kubectl) {
    const fs::path file = work_dir_ / "past-limits.json";
    std::ofstream(file) << job.dump();
    auto applied = kubectl({"apply", "-f", file.string()});
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
  } else {
    create_job(job);
  }

  job = wait_job(
      "past-limits",
      [](const json& j) { return condition_reason(j, "Planned") == "PastSolverLimits"; },
      "Planned=False, reason PastSolverLimits");
  EXPECT_EQ(condition_status(job, "Valid"), "True");
  EXPECT_EQ(condition_status(job, "Planned"), "False");
  EXPECT_THAT(condition_message(job, "Planned"),
              HasSubstr("spec.training.maxEpochs: must be in [1,1000], got 5000"));
  EXPECT_EQ(job_phase(job), "Pending");
  EXPECT_TRUE(wait_until([&] { return has_event("past-limits", "PastSolverLimits"); }))
      << "no Warning Event PastSolverLimits";
  EXPECT_TRUE(pods_->created_for("past-limits").empty());

  // Deleted, it waits for the finalizer, whose removal the API server accepts.
  auto removed = client_->remove(controller::job_resource(), "default", "past-limits");
  ASSERT_TRUE(removed) << removed.error().message;
  ASSERT_TRUE(get_job("past-limits")["metadata"].contains("deletionTimestamp"));
  if (with_kubectl) {
    auto patched = kubectl(
        {"patch", "dtj/past-limits", "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
    ASSERT_EQ(patched.exit_code, 0) << patched.output;
  } else {
    merge_patch_job("past-limits", {{"metadata", {{"finalizers", nullptr}}}});
  }
  EXPECT_TRUE(wait_until([&] { return get_job("past-limits").empty(); }))
      << "the job was not deleted";
}

TEST_F(ControllerE2e, WorkersTheApiServerRefusesAreReportedWithTheFieldAndRecoverOnceFixed) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml"));
  WriteLog writes(cluster_->store());
  ASSERT_NO_FATAL_FAILURE(start_controller());
  json job = job_from("job.yaml", "refused", 0.1);
  const json good_models = job["spec"]["models"];
  // Valid for the controller, which leaves extended resources to the API server; the API server
  // (the dev cluster, as kube-apiserver) refuses a fraction of one with 422.
  for (auto& model : job["spec"]["models"])
    model["resources"] = {{"limits", {{"example.com/fpga", "500m"}}}};
  create_job(job);

  job = wait_job(
      "refused",
      [](const json& j) {
        return condition_status(j, "Valid") == "False" &&
               condition_reason(j, "Valid") == "RejectedByAPIServer";
      },
      "Valid=False, reason RejectedByAPIServer");
  const std::string field =
      "spec.containers[0].resources.limits[example.com/fpga]: Invalid value: \"500m\": must be an "
      "integer (from the job's spec.models[";
  EXPECT_THAT(condition_message(job, "Valid"), HasSubstr(field));
  EXPECT_EQ(job_phase(job), "Pending");
  EXPECT_TRUE(wait_until([&] {
    for (const auto& e : events_of("refused")) {
      if (e.value("reason", "") == "RejectedByAPIServer" && e.value("type", "") == "Warning" &&
          e.value("message", "").find(field) != std::string::npos)
        return true;
    }
    return false;
  })) << "no Warning Event RejectedByAPIServer naming the field";
  EXPECT_TRUE(pods_of("refused").empty());
  EXPECT_TRUE(pods_->created_for("refused").empty());
  // The same spec is not retried: its status was written for the plan and for the refusal, not
  // once per retry.
  const auto status_writes = [&] {
    return writes.count([](const Write& w) {
      return w.record.plural == "dependabletrainingjobs" && w.record.subresource == "status" &&
             w.record.name == "refused";
    });
  };
  EXPECT_LE(status_writes(), 3u);

  merge_patch_job("refused", {{"spec", {{"models", good_models}}}});
  job = wait_job(
      "refused", [](const json& j) { return condition_status(j, "Valid") == "True"; },
      "Valid=True after the fix");
  job = wait_succeeded("refused");
  EXPECT_FALSE(pods_->created_for("refused").empty());
}

TEST_F(ControllerE2e, InfeasibleJobWaitsPendingUntilNodesAreAdded) {
  ASSERT_NO_FATAL_FAILURE(start_cluster(""));  // no nodes at all
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "waiting", 0.1));

  json job = wait_job(
      "waiting", [](const json& j) { return condition_status(j, "Planned") == "False"; },
      "Planned=False");
  EXPECT_EQ(job_phase(job), "Pending");
  EXPECT_EQ(condition_reason(job, "Planned"), "Infeasible");
  EXPECT_THAT(condition_message(job, "Planned"), HasSubstr("no node pool"));
  EXPECT_TRUE(wait_until([&] { return has_event("waiting", "Infeasible"); }));
  EXPECT_TRUE(pods_of("waiting").empty());

  ASSERT_NO_FATAL_FAILURE(add_node("late-0", "fast", 2));
  job = wait_job(
      "waiting", [](const json& j) { return condition_status(j, "Planned") == "True"; },
      "Planned=True once a node exists");
  job = wait_succeeded("waiting");
  for (const auto& pod : pods_->created_for("waiting"))
    EXPECT_EQ(pod["spec"]["nodeSelector"].value("depl.dev/pool", ""), "fast");
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

TEST_F(ControllerE2e, TwoJobsCompetingForOneGpuBothCompleteWithoutOvercommit) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-single-gpu.yaml"));
  pods_->check_pools(true);
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "first", 0.05));
  create_job(job_from("job.yaml", "second", 0.05));

  const json first = wait_succeeded("first");
  const json second = wait_succeeded("second");
  EXPECT_FALSE(pods_->created_for("first").empty());
  EXPECT_FALSE(pods_->created_for("second").empty());
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

// The job each pod belongs to, in the order the pods were made, one entry per run of pods of
// the same job: {"a", "b"} when all of a's pods came before all of b's.
std::vector<std::string> jobs_in_pod_order(const std::vector<json>& pods) {
  std::vector<std::string> runs;
  for (const auto& pod : pods) {
    const std::string job = pod["metadata"]["labels"].value("depl.dev/job", "");
    if (runs.empty() || runs.back() != job) runs.push_back(job);
  }
  return runs;
}

// Three jobs applied in order on a pool of one GPU: each runs in turn, in that order (the one
// waiting longest gets the GPU each time it frees, however the wake-ups are ordered), and every
// one succeeds.
TEST_F(ControllerE2e, ThreeJobsForOneGpuRunInTheOrderTheyWereApplied) {
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools-single-gpu.yaml"));
  pods_->check_pools(true);
  ASSERT_NO_FATAL_FAILURE(start_controller());
  const std::vector<std::string> order = {"first", "second", "third"};
  for (const auto& name : order) create_job(job_from("job.yaml", name, 0.05));
  for (const auto& name : order) wait_succeeded(name);
  EXPECT_EQ(jobs_in_pod_order(pods_->created()), order);
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

// Three jobs applied in order while no node exists: each finds no room and waits. A node of one
// GPU then joins: they run in the order they were applied, although the node wakes all three at
// once (it moves the placement line's capacity epoch, so the earliest looks first).
TEST_F(ControllerE2e, JobsWaitingForANodeRunInTheOrderTheyWereAppliedWhenItJoins) {
  ASSERT_NO_FATAL_FAILURE(start_cluster(""));  // no nodes at all
  ASSERT_NO_FATAL_FAILURE(start_controller());
  const std::vector<std::string> order = {"first", "second", "third"};
  for (const auto& name : order) {
    create_job(job_from("job.yaml", name, 0.05));
    wait_job(
        name, [](const json& j) { return condition_reason(j, "Planned") == "Infeasible"; },
        "Planned=False for Infeasible");
  }
  ASSERT_NO_FATAL_FAILURE(add_node("late-0", "fast", 1));
  for (const auto& name : order) wait_succeeded(name);
  EXPECT_EQ(jobs_in_pod_order(pods_->created()), order);
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

}  // namespace
}  // namespace depl::e2e
