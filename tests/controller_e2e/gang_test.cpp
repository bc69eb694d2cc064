// A gang-scheduled job end to end on a dev cluster with the coscheduling plugin, and on one that
// also serves Kubernetes' own PodGroup API (preferred then): each round of its 4-worker phases is
// a PodGroup whose minimum is 4; while only 2 of the pool's 4 GPUs are free no worker is bound
// (none holds a GPU), and once they free the whole round runs and the job succeeds. Kueue's gate
// (as the dev cluster plays it) holds the first round until the test has taken 2 GPUs, so the
// order of events is fixed by the test, not by timing.
#include <gmock/gmock.h>

#include "depl/controller/gang_scheduling.hpp"
#include "depl/kube/resource.hpp"
#include "e2e_fixture.hpp"

namespace depl::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string unschedulable_message(const json& pod) {
  for (const auto& c : pod.value("status", json::object()).value("conditions", json::array())) {
    if (c.value("type", "") == "PodScheduled" && c.value("reason", "") == "Unschedulable") {
      return c.value("message", "");
    }
  }
  return {};
}

// The PodGroup a worker names: its spec.schedulingGroup with Kubernetes' API, else its
// coscheduling label.
std::string group_of(const json& pod, bool native) {
  if (native) {
    return pod["spec"].value("schedulingGroup", json::object()).value("podGroupName", "");
  }
  return pod["metadata"]["labels"].value(controller::kGangLabel, "");
}

class GangE2e : public ControllerE2e {
 protected:
  void run_gang(bool native);
};

void GangE2e::run_gang(bool native) {
  ClusterSetup setup;
  setup.kueue_pod_webhook = true;
  setup.coscheduling = true;
  setup.workload_scheduling = native;
  setup.image_map["registry.example.com/holder"] = "/bin/sleep";  // runs until deleted
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml", setup));    // 2 nodes of 2 GPUs
  pods_->check_pools(true);
  ASSERT_NO_FATAL_FAILURE(start_controller());
  json job = job_from("job.yaml", "gang", 0.05);
  job["spec"]["queueName"] = "team-a";
  job["spec"]["gangScheduling"] = true;
  job["spec"]["training"]["workers"] = {{"min", 4}, {"max", 4}};
  create_job(job);

  std::vector<json> pods;
  ASSERT_TRUE(wait_until([&] {
    pods = pods_of("gang");
    return pods.size() == 4 && std::all_of(pods.begin(), pods.end(), scheduling_gated);
  })) << "no 4 gated workers";
  const std::string group = group_of(pods[0], native);
  ASSERT_FALSE(group.empty()) << pods[0].dump();
  for (const auto& pod : pods) {
    EXPECT_EQ(group_of(pod, native), group);
    EXPECT_EQ(group_of(pod, !native), "") << "named in one API only";
  }
  auto pod_group = client_->get(
      native ? controller::native_pod_group_resource() : controller::pod_group_resource(),
      "default", group);
  ASSERT_TRUE(pod_group) << pod_group.error().message;
  if (native) {
    EXPECT_EQ((*pod_group)["spec"]["schedulingPolicy"]["gang"]["minCount"], 4);
  } else {
    EXPECT_EQ((*pod_group)["spec"]["minMember"], 4);
  }
  EXPECT_EQ((*pod_group)["metadata"]["ownerReferences"][0]["name"], "gang");

  // Another workload takes 2 of the 4 GPUs before the queue admits the round.
  const json holder = {{"apiVersion", "v1"},
                       {"kind", "Pod"},
                       {"metadata", {{"name", "holder"}, {"namespace", "default"}}},
                       {"spec",
                        {{"restartPolicy", "Never"},
                         {"containers",
                          {{{"name", "c"},
                            {"image", "registry.example.com/holder:1"},
                            {"command", {"sleep", "600"}},
                            {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}}};
  ASSERT_TRUE(client_->create(kube::resources::pods(), "default", holder));
  ASSERT_TRUE(wait_until([&] {
    auto p = client_->get(kube::resources::pods(), "default", "holder");
    return p && !(*p)["spec"].value("nodeName", "").empty();
  }));
  for (const auto& pod : pods) ASSERT_TRUE(admit(pod));
  // Settled once every worker carries the scheduler's verdict on the whole gang: none bound.
  const std::string refusal = native ? "fewer than minCount 4" : "fewer than minMember 4";
  ASSERT_TRUE(wait_until([&] {
    pods = pods_of("gang");
    return pods.size() == 4 && std::all_of(pods.begin(), pods.end(), [&](const json& p) {
             return unschedulable_message(p).find(refusal) != std::string::npos;
           });
  })) << "the gang was not refused whole";
  for (const auto& pod : pods) {
    EXPECT_EQ(pod["spec"].value("nodeName", ""), "") << pod["metadata"]["name"];
    EXPECT_THAT(unschedulable_message(pod), HasSubstr("0 of its pods are bound and 2 more fit"));
  }

  // The GPUs free: the round runs whole, and every later round is admitted as Kueue would.
  ASSERT_TRUE(client_->remove(kube::resources::pods(), "default", "holder"));
  json done = wait_ended_admitting_gated("gang");
  EXPECT_EQ(job_phase(done), "Succeeded") << done["status"].dump(2);
  for (const auto& pod : pods_->created_for("gang")) {
    EXPECT_FALSE(group_of(pod, native).empty()) << pod["metadata"]["name"];
  }
  EXPECT_FALSE(has_event("gang", "WorkerFailed"));
  EXPECT_FALSE(has_event("gang", "GangSchedulingUnavailable"));
  EXPECT_THAT(pods_->violations(), IsEmpty());
}

TEST_F(GangE2e, AGangThatDoesNotFitHoldsNoGpuAndRunsWhenTheyFree) {
  run_gang(false);
}

// Kubernetes' API served beside the plugin's: the workers name a scheduling.k8s.io/v1beta1
// PodGroup in spec.schedulingGroup, and the gang of 4 never starts partially.
TEST_F(GangE2e, ANativeGangOfFourNeverStartsPartially) {
  run_gang(true);
}

}  // namespace
}  // namespace depl::e2e
