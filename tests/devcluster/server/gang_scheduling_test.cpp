// Gang scheduling as the coscheduling plugin does it: the pure placement of a pod group
// (place_gang) and the dev cluster's scheduler with DevClusterOptions::coscheduling, where a
// PodGroup's pods are bound all or nothing; and as Kubernetes does it with its own PodGroup API
// (scheduling.k8s.io/v1beta1, DevClusterOptions::workload_scheduling): served over HTTP as a
// built-in group, validated as kube-apiserver validates it, and bound all or nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "depl/devcluster/dev_cluster.hpp"
#include "sim/gang_scheduling.hpp"
#include "sim/scheduling.hpp"
#include "test_http.hpp"

namespace depl::devcluster {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

json gpu_node(const std::string& name, int gpus) {
  return {{"metadata", {{"name", name}}},
          {"status",
           {{"allocatable",
             {{"cpu", "64"},
              {"memory", "256Gi"},
              {"pods", "110"},
              {"nvidia.com/gpu", std::to_string(gpus)}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json gang_pod(const std::string& name, int gpus, const std::string& group = "gang") {
  return {{"metadata",
           {{"name", name}, {"namespace", "default"}, {"labels", {{kPodGroupLabel, group}}}}},
          {"spec",
           {{"containers",
             {{{"name", "c"},
               {"image", "sim"},
               {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
}

json pod_group(int min_member, json extra_spec = json::object()) {
  extra_spec["minMember"] = min_member;
  return {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", "gang"}, {"namespace", "default"}}},
          {"spec", extra_spec}};
}

struct Fixture {
  std::vector<json> node_objects;
  std::vector<NodeFacts> nodes;
  std::vector<json> pods;
  explicit Fixture(std::vector<json> n) : node_objects(std::move(n)) {
    for (const auto& node : node_objects) nodes.push_back(node_facts(node));
  }
  std::vector<const json*> waiting() const {
    std::vector<const json*> out;
    for (const auto& p : pods) out.push_back(&p);
    return out;
  }
};

TEST(PlaceGang, BindsNoneUntilMinMemberFitThenAllThatFit) {
  Fixture f(std::vector<json>{gpu_node("n0", 2), gpu_node("n1", 2)});
  for (int i = 0; i < 4; ++i) f.pods.push_back(gang_pod("w" + std::to_string(i), 1));
  const json group = pod_group(4);
  // 2 of the 4 GPUs are taken: 2 pods would fit, the group needs 4.
  NodeUsage used{{"n0", PodResources{0, 0, 2, 1}}};
  GangDecision d = place_gang(f.waiting(), 0, &group, f.nodes, used);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(d.nodes[i]) << i;
    EXPECT_THAT(d.messages[i], HasSubstr("fewer than minMember 4")) << i;
    EXPECT_THAT(d.messages[i], HasSubstr("Insufficient nvidia.com/gpu")) << i;
  }
  // Freed: all four are placed, two on each node.
  d = place_gang(f.waiting(), 0, &group, f.nodes, NodeUsage{});
  std::map<std::string, int> per_node;
  for (const auto& node : d.nodes) {
    ASSERT_TRUE(node);
    ++per_node[*node];
  }
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"n0", 2}, {"n1", 2}}));
  // Pods already bound count: 2 bound + 2 that fit reach minMember 4.
  f.pods.resize(2);
  d = place_gang(f.waiting(), 2, &group, f.nodes, used);
  EXPECT_TRUE(d.nodes[0] && d.nodes[1]);
}

TEST(PlaceGang, MissingGroupTooFewSiblingsAndResourceGapBindNothing) {
  Fixture f(std::vector<json>{gpu_node("n0", 8)});
  for (int i = 0; i < 3; ++i) f.pods.push_back(gang_pod("w" + std::to_string(i), 1));
  GangDecision d = place_gang(f.waiting(), 0, nullptr, f.nodes, NodeUsage{});
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(d.nodes[i]);
    EXPECT_THAT(d.messages[i],
                HasSubstr("PodGroup gang of pod w" + std::to_string(i) + " not found"));
  }
  const json four = pod_group(4);
  d = place_gang(f.waiting(), 0, &four, f.nodes, NodeUsage{});
  EXPECT_FALSE(d.nodes[0]);
  EXPECT_THAT(d.messages[0], HasSubstr("cannot find enough sibling pods, current pods number: 3, "
                                       "minMember of group: 4"));
  const json needs_gpus = pod_group(3, {{"minResources", {{"nvidia.com/gpu", "9"}}}});
  d = place_gang(f.waiting(), 0, &needs_gpus, f.nodes, NodeUsage{});
  EXPECT_FALSE(d.nodes[0]);
  EXPECT_THAT(d.messages[0], HasSubstr("resource gap: nvidia.com/gpu: 1"));
  const json fits = pod_group(3, {{"minResources", {{"nvidia.com/gpu", "8"}}}});
  d = place_gang(f.waiting(), 0, &fits, f.nodes, NodeUsage{});
  EXPECT_TRUE(d.nodes[0] && d.nodes[1] && d.nodes[2]);
}

TEST(PlaceGang, APodWithoutALabelHasNoGroup) {
  EXPECT_EQ(pod_group_of(json{{"metadata", {{"name", "p"}}}}), "");
  EXPECT_EQ(pod_group_of(gang_pod("p", 1, "g")), "g");
}

// Polls `ready` until it holds or `timeout` passes: the scheduler runs on its own thread; this
// waits for its effect, it does not stand in for synchronisation.
template <typename F>
bool eventually(F ready, std::chrono::seconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

class CoschedulingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DevClusterOptions options;
    options.insecure_http = true;
    options.pools_yaml = R"(pools:
  - {name: t4, gpuType: T4, gpus: 4, gpusPerNode: 4, gpuGflops: 8100, pricePerGpuHour: 0.35}
)";
    options.run_kubelet = false;  // bound pods hold their GPUs until deleted
    options.coscheduling = true;
    auto started = DevCluster::start(options);
    ASSERT_TRUE(started) << started.error().message;
    cluster_ = std::move(*started);
  }
  ApiStore& store() { return cluster_->store(); }
  void create(const json& object, const std::string& group, const std::string& version,
              const std::string& plural) {
    auto r = store().create(ResourceRef{group, version, plural, "default", "", ""}, object);
    ASSERT_TRUE(r.ok()) << r.body.dump();
  }
  void create_pod(json pod) {
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    create(pod, "", "v1", "pods");
  }
  json pod(const std::string& name) {
    return store().get(ResourceRef{"", "v1", "pods", "default", name, ""}).body;
  }
  std::string node_of(const std::string& name) { return pod(name)["spec"].value("nodeName", ""); }
  std::string unschedulable_message(const std::string& name) {
    const json p = pod(name);
    for (const auto& c : p.value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("reason", "") == "Unschedulable") {
        return c.value("message", "");
      }
    }
    return {};
  }
  std::unique_ptr<DevCluster> cluster_;
};

// The t4 node has 4 GPUs; a pod outside the group holds 2. A gang of 4 one-GPU workers would get
// 2 of them bound by a scheduler without coscheduling; here none is bound, and none holds a GPU,
// until the holder goes: then all 4 are bound.
TEST_F(CoschedulingTest, AGangThatDoesNotFitBindsNoPodThenRunsWhenCapacityFrees) {
  const ResourceRef crd{"apiextensions.k8s.io",          "v1", "customresourcedefinitions", "",
                        "podgroups.scheduling.x-k8s.io", ""};
  ASSERT_TRUE(store().get(crd).ok()) << "the PodGroup CRD is served";
  json holder = gang_pod("holder", 2);
  holder["metadata"].erase("labels");
  create_pod(holder);
  ASSERT_TRUE(eventually([&] { return node_of("holder") == "t4-0"; }));
  create(pod_group(4), "scheduling.x-k8s.io", "v1alpha1", "podgroups");
  for (int i = 0; i < 4; ++i) create_pod(gang_pod("w" + std::to_string(i), 1));
  // Settled once every worker carries the verdict taken with all four present.
  ASSERT_TRUE(eventually([&] {
    for (int i = 0; i < 4; ++i) {
      if (unschedulable_message("w" + std::to_string(i)).find("fewer than minMember 4") ==
          std::string::npos)
        return false;
    }
    return true;
  }));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(node_of("w" + std::to_string(i)), "") << i;
  EXPECT_THAT(unschedulable_message("w0"), HasSubstr("0 of its pods are bound and 2 more fit"));
  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(store().remove(ResourceRef{"", "v1", "pods", "default", "holder", ""}, now).ok());
  ASSERT_TRUE(eventually([&] {
    for (int i = 0; i < 4; ++i) {
      if (node_of("w" + std::to_string(i)).empty()) return false;
    }
    return true;
  }));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(node_of("w" + std::to_string(i)), "t4-0");
}

// A pod naming a group that does not exist waits (as the plugin's Permit denies it); the group's
// creation lets it be bound.
TEST_F(CoschedulingTest, PodsWaitForTheirPodGroupToExist) {
  create_pod(gang_pod("w0", 1));
  create_pod(gang_pod("w1", 1));
  ASSERT_TRUE(eventually(
      [&] { return unschedulable_message("w1").find("not found") != std::string::npos; }));
  EXPECT_EQ(node_of("w0"), "");
  create(pod_group(2), "scheduling.x-k8s.io", "v1alpha1", "podgroups");
  ASSERT_TRUE(eventually([&] { return !node_of("w0").empty() && !node_of("w1").empty(); }));
}

// The CRD's schema is enforced like any other: minMember is an integer; minResources holds
// quantities.
TEST_F(CoschedulingTest, PodGroupSchemaRefusesAWrongType) {
  create(pod_group(2, {{"minResources", {{"nvidia.com/gpu", "2"}, {"cpu", 1}}},
                       {"scheduleTimeoutSeconds", 30}}),
         "scheduling.x-k8s.io", "v1alpha1", "podgroups");
  json bad = pod_group(2);
  bad["metadata"]["name"] = "wrong-type";
  bad["spec"]["minMember"] = "two";
  auto r = store().create(
      ResourceRef{"scheduling.x-k8s.io", "v1alpha1", "podgroups", "default", "", ""}, bad);
  EXPECT_EQ(r.code, 422) << r.body.dump();
  EXPECT_THAT(r.body.dump(), HasSubstr("spec.minMember"));
  bad = pod_group(2, {{"minResources", {{"cpu", "lots"}}}});
  bad["metadata"]["name"] = "not-a-quantity";
  r = store().create(ResourceRef{"scheduling.x-k8s.io", "v1alpha1", "podgroups", "default", "", ""},
                     bad);
  EXPECT_EQ(r.code, 422) << r.body.dump();
}

json native_pod(const std::string& name, int gpus, const std::string& group = "gang") {
  json pod = gang_pod(name, gpus);
  pod["metadata"].erase("labels");
  pod["spec"]["schedulingGroup"] = {{"podGroupName", group}};
  return pod;
}

json native_group(json policy, const std::string& name = "gang") {
  return {{"apiVersion", "scheduling.k8s.io/v1beta1"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"schedulingPolicy", std::move(policy)}}}};
}

json gang_policy(int min_count) {
  return {{"gang", {{"minCount", min_count}}}};
}

TEST(PlaceNativeGang, GangPolicyBindsNoneUntilMinCountFitBasicPolicyBindsEach) {
  Fixture f(std::vector<json>{gpu_node("n0", 2), gpu_node("n1", 2)});
  for (int i = 0; i < 4; ++i) f.pods.push_back(native_pod("w" + std::to_string(i), 1));
  EXPECT_EQ(scheduling_group_of(f.pods[0]), "gang");
  EXPECT_EQ(pod_group_of(f.pods[0]), "") << "the label is the coscheduling plugin's, not set";
  const NodeUsage half_taken{{"n0", PodResources{0, 0, 2, 1}}};
  const json gang = native_group(gang_policy(4));
  GangDecision d = place_native_gang(f.waiting(), 0, &gang, f.nodes, half_taken);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(d.nodes[i]) << i;
    EXPECT_THAT(d.messages[i], HasSubstr("fewer than minCount 4")) << i;
  }
  d = place_native_gang(f.waiting(), 0, &gang, f.nodes, NodeUsage{});
  for (const auto& node : d.nodes) EXPECT_TRUE(node);
  // Three exist where four are needed: none is bound, even with room.
  f.pods.resize(3);
  d = place_native_gang(f.waiting(), 0, &gang, f.nodes, NodeUsage{});
  EXPECT_FALSE(d.nodes[0]);
  EXPECT_THAT(d.messages[0], HasSubstr("3 of its pods exist, fewer than minCount 4"));
  // Basic policy: each pod on its own (two fit).
  const json basic = native_group({{"basic", json::object()}});
  d = place_native_gang(f.waiting(), 0, &basic, f.nodes, half_taken);
  EXPECT_TRUE(d.nodes[0] && d.nodes[1]);
  EXPECT_FALSE(d.nodes[2]);
  d = place_native_gang(f.waiting(), 0, nullptr, f.nodes, NodeUsage{});
  EXPECT_FALSE(d.nodes[0]);
  EXPECT_THAT(d.messages[0], HasSubstr("PodGroup default/gang of pod w0 not found"));
}

class WorkloadSchedulingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DevClusterOptions options;
    options.insecure_http = true;
    options.pools_yaml = R"(pools:
  - {name: t4, gpuType: T4, gpus: 4, gpusPerNode: 4, gpuGflops: 8100, pricePerGpuHour: 0.35}
)";
    options.run_kubelet = false;  // bound pods hold their GPUs until deleted
    options.workload_scheduling = true;
    auto started = DevCluster::start(options);
    ASSERT_TRUE(started) << started.error().message;
    cluster_ = std::move(*started);
  }
  std::uint16_t port() const { return cluster_->port(); }
  testing::TestResponse send(const std::string& method, const std::string& path,
                             const json& body = nullptr) {
    return testing::http_request(port(), method, path, body.is_null() ? "" : body.dump(),
                                 body.is_null() ? "" : "application/json");
  }
  static constexpr const char* kGroups =
      "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups";
  void create_pod(json pod) {
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    auto r = send("POST", "/api/v1/namespaces/default/pods", pod);
    ASSERT_EQ(r.status, 201) << r.body;
  }
  json pod(const std::string& name) {
    return json::parse(send("GET", "/api/v1/namespaces/default/pods/" + name).body);
  }
  std::string node_of(const std::string& name) { return pod(name)["spec"].value("nodeName", ""); }
  std::string unschedulable_message(const std::string& name) {
    const json p = pod(name);
    for (const auto& c : p.value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("reason", "") == "Unschedulable") {
        return c.value("message", "");
      }
    }
    return {};
  }
  std::unique_ptr<DevCluster> cluster_;
};

// Discovery lists the group with both kinds; a PodGroup is created, read, listed, watched and
// deleted over HTTP like any built-in object.
TEST_F(WorkloadSchedulingTest, ServesTheGroupOverHttp) {
  const json groups = json::parse(send("GET", "/apis").body);
  bool listed = false;
  for (const auto& g : groups["groups"]) {
    if (g["name"] == "scheduling.k8s.io") {
      listed = true;
      EXPECT_EQ(g["preferredVersion"]["groupVersion"], "scheduling.k8s.io/v1beta1");
    }
  }
  EXPECT_TRUE(listed) << groups.dump();
  const json resources = json::parse(send("GET", "/apis/scheduling.k8s.io/v1beta1").body);
  std::vector<std::string> names;
  for (const auto& r : resources["resources"]) names.push_back(r["name"]);
  EXPECT_THAT(names, ::testing::IsSupersetOf({"podgroups", "podgroups/status", "workloads"}));

  testing::TestStream watch(port(), std::string(kGroups) + "?watch=true");
  ASSERT_EQ(watch.status(), 200);
  auto created = send("POST", kGroups, native_group(gang_policy(4)));
  ASSERT_EQ(created.status, 201) << created.body;
  auto event = watch.next_line(std::chrono::seconds(10));
  ASSERT_TRUE(event);
  EXPECT_THAT(*event, HasSubstr("\"ADDED\""));
  const json got = json::parse(send("GET", std::string(kGroups) + "/gang").body);
  EXPECT_EQ(got["spec"]["schedulingPolicy"]["gang"]["minCount"], 4);
  EXPECT_EQ(json::parse(send("GET", kGroups).body)["items"].size(), 1u);
  // minCount may change; the policy kind may not.
  json changed = got;
  changed["spec"]["schedulingPolicy"]["gang"]["minCount"] = 2;
  EXPECT_EQ(send("PUT", std::string(kGroups) + "/gang", changed).status, 200);
  json basic = json::parse(send("GET", std::string(kGroups) + "/gang").body);
  basic["spec"]["schedulingPolicy"] = {{"basic", json::object()}};
  auto refused = send("PUT", std::string(kGroups) + "/gang", basic);
  EXPECT_EQ(refused.status, 422) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("spec.schedulingPolicy.gang"));
  EXPECT_EQ(send("DELETE", std::string(kGroups) + "/gang").status, 200);
  EXPECT_EQ(send("GET", std::string(kGroups) + "/gang").status, 404);
}

// What kube-apiserver refuses, it refuses, naming the field.
TEST_F(WorkloadSchedulingTest, RefusesInvalidGroupsWorkloadsAndPodsNamingTheField) {
  struct Case {
    json policy;
    std::string field;
    std::string message;
  };
  const std::vector<Case> cases = {
      {json::object(), "spec.schedulingPolicy", "must specify one of: `basic`, `gang`"},
      {{{"basic", json::object()}, {"gang", {{"minCount", 2}}}},
       "spec.schedulingPolicy",
       "exactly one of `basic`, `gang` is required"},
      {{{"gang", json::object()}}, "spec.schedulingPolicy.gang.minCount", "Required value"},
      {gang_policy(-1), "spec.schedulingPolicy.gang.minCount", "must be greater than zero"},
  };
  for (const auto& c : cases) {
    auto r = send("POST", kGroups, native_group(c.policy, "bad"));
    EXPECT_EQ(r.status, 422) << c.policy.dump() << " " << r.body;
    const json status = json::parse(r.body);
    ASSERT_FALSE(status["details"]["causes"].empty()) << r.body;
    EXPECT_EQ(status["details"]["causes"][0]["field"], c.field) << r.body;
    EXPECT_THAT(r.body, HasSubstr(c.message));
  }
  json typo = native_group(gang_policy(2), "typo");
  typo["spec"]["schedulingPolicy"]["gang"]["minCont"] = 2;
  auto strict = send("POST", std::string(kGroups) + "?fieldValidation=Strict", typo);
  EXPECT_EQ(strict.status, 400) << strict.body;  // a strict decoding error
  EXPECT_THAT(strict.body, HasSubstr("spec.schedulingPolicy.gang.minCont"));

  const std::string workloads = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads";
  json workload = {{"apiVersion", "scheduling.k8s.io/v1beta1"},
                   {"kind", "Workload"},
                   {"metadata", {{"name", "w"}}},
                   {"spec",
                    {{"podGroupTemplates",
                      {{{"name", "workers"}, {"schedulingPolicy", gang_policy(4)}},
                       {{"name", "workers"}, {"schedulingPolicy", gang_policy(0)}}}}}}};
  auto r = send("POST", workloads, workload);
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_THAT(r.body, HasSubstr("spec.podGroupTemplates[1].schedulingPolicy.gang.minCount"));
  EXPECT_THAT(r.body, HasSubstr("Duplicate value"));
  workload["spec"]["podGroupTemplates"] = json::array();
  EXPECT_THAT(send("POST", workloads, workload).body, HasSubstr("must have at least one item"));
  workload["spec"]["podGroupTemplates"] = {
      {{"name", "workers"}, {"schedulingPolicy", gang_policy(4)}}};
  EXPECT_EQ(send("POST", workloads, workload).status, 201);

  json pod = native_pod("p", 1, "Not_A_Name");
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  r = send("POST", "/api/v1/namespaces/default/pods", pod);
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_THAT(r.body, HasSubstr("spec.schedulingGroup.podGroupName"));
}

// The t4 node has 4 GPUs; a pod outside the group holds 2. A gang of 4 one-GPU workers would get
// 2 of them bound by a scheduler without gang scheduling; here none is bound until the holder
// goes: then all 4 are. Pods naming a group that does not exist yet wait for it.
TEST_F(WorkloadSchedulingTest, AGangOfFourIsBoundAllOrNothing) {
  json holder = gang_pod("holder", 2);
  holder["metadata"].erase("labels");
  create_pod(holder);
  ASSERT_TRUE(eventually([&] { return node_of("holder") == "t4-0"; }));
  for (int i = 0; i < 4; ++i) create_pod(native_pod("w" + std::to_string(i), 1));
  ASSERT_TRUE(eventually(
      [&] { return unschedulable_message("w3").find("not found") != std::string::npos; }));
  ASSERT_EQ(send("POST", kGroups, native_group(gang_policy(4))).status, 201);
  ASSERT_TRUE(eventually([&] {
    for (int i = 0; i < 4; ++i) {
      if (unschedulable_message("w" + std::to_string(i)).find("fewer than minCount 4") ==
          std::string::npos)
        return false;
    }
    return true;
  }));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(node_of("w" + std::to_string(i)), "") << i;
  EXPECT_THAT(unschedulable_message("w0"), HasSubstr("0 of its pods are bound and 2 more fit"));
  ASSERT_EQ(send("DELETE", "/api/v1/namespaces/default/pods/holder?gracePeriodSeconds=0").status,
            200);
  ASSERT_TRUE(eventually([&] {
    for (int i = 0; i < 4; ++i) {
      if (node_of("w" + std::to_string(i)).empty()) return false;
    }
    return true;
  }));
}

// Without the API, the group is not served and the field means nothing to the scheduler.
TEST(WorkloadSchedulingOff, TheGroupIsNotServed) {
  DevClusterOptions options;
  options.insecure_http = true;
  options.run_kubelet = false;
  options.pools_yaml = R"(pools:
  - {name: t4, gpuType: T4, gpus: 4, gpusPerNode: 4, gpuGflops: 8100, pricePerGpuHour: 0.35}
)";
  auto started = DevCluster::start(options);
  ASSERT_TRUE(started) << started.error().message;
  const auto groups = testing::http_request((*started)->port(), "GET", "/apis");
  EXPECT_THAT(groups.body, ::testing::Not(HasSubstr("scheduling.k8s.io")));
}

}  // namespace
}  // namespace depl::devcluster
