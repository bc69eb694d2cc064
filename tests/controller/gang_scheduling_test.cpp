// Gang scheduling through Kubernetes' PodGroup or the coscheduling plugin's: who asks for it,
// which API discovery finds, the PodGroup a round gets, and decide() creating it before the
// round's workers, which name it.
#include "depl/controller/gang_scheduling.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/controller/job_decision.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/kube/testing/scripted_transport.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

const auto kStart = std::chrono::system_clock::from_time_t(1'800'000'000);

// The quickstart job with exactly `workers` workers per phase.
json job_with_workers(int workers, const json& spec = json::object()) {
  std::ifstream in(std::string(DEPL_SOURCE_DIR) + "/examples/quickstart/job.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = yaml_to_json(text.str());
  EXPECT_TRUE(parsed.has_value());
  json job = *parsed;
  job["metadata"]["namespace"] = "default";
  job["metadata"]["uid"] = "uid-quickstart";
  job["metadata"]["generation"] = 1;
  job["metadata"]["creationTimestamp"] = "2027-01-15T08:00:00Z";
  job["spec"]["training"]["workers"] = {{"min", workers}, {"max", workers}};
  for (const auto& [k, v] : spec.items()) job["spec"][k] = v;
  return job;
}

SharedObjects a100_nodes() {
  SharedObjects out;
  for (const char* name : {"a100-0", "a100-1"}) {
    out.push_back(std::make_shared<const json>(
        json{{"metadata",
              {{"name", name},
               {"labels", {{"depl.dev/pool", "a100"}, {"nvidia.com/gpu.product", "a100"}}},
               {"annotations",
                {{"depl.dev/gpu-gflops", "120000"},
                 {"depl.dev/price-per-gpu-hour", "2.5"},
                 {"depl.dev/bandwidth", "12.5G"},
                 {"depl.dev/storage-bandwidth", "1G"}}}}},
             {"status",
              {{"allocatable", {{"nvidia.com/gpu", "8"}}},
               {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}}));
  }
  return out;
}

JobView view_of(json job, GangApi api) {
  JobView v;
  v.job = std::move(job);
  v.nodes = a100_nodes();
  v.new_token_secret = "quickstart-progress-a1b2c3d4";
  v.now = kStart;
  v.gang_api = api;
  return v;
}

DecideOptions options(bool gang_by_default = false) {
  DecideOptions o;
  o.progress_url = "http://127.0.0.1:9999";
  o.seconds_now = [] { return 0.0; };
  o.gang_scheduling = gang_by_default;
  return o;
}

bool has_event(const Decision& d, const std::string& reason) {
  for (const auto& e : d.events) {
    if (e.reason == reason) return true;
  }
  return false;
}

TEST(GangScheduling, TheJobAsksOrTheOperatorDefaultHolds) {
  EXPECT_FALSE(gang_scheduling_asked(json{{"spec", json::object()}}, false));
  EXPECT_TRUE(gang_scheduling_asked(json{{"spec", json::object()}}, true));
  EXPECT_TRUE(gang_scheduling_asked(json{{"spec", {{"gangScheduling", true}}}}, false));
  EXPECT_FALSE(gang_scheduling_asked(json{{"spec", {{"gangScheduling", false}}}}, true));
}

TEST(GangScheduling, APodGroupIsOwnedByTheJobWithMinMember) {
  const json job = job_with_workers(4);
  const json group = build_pod_group(job, "quickstart-p0-v1-r1", 4);
  EXPECT_EQ(group["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(group["kind"], "PodGroup");
  EXPECT_EQ(group["metadata"]["name"], "quickstart-p0-v1-r1");
  EXPECT_EQ(group["metadata"]["namespace"], "default");
  EXPECT_EQ(group["metadata"]["ownerReferences"][0]["uid"], "uid-quickstart");
  EXPECT_EQ(group["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(group["spec"], (json{{"minMember", 4}}));
  EXPECT_EQ(pod_group_resource_of(group).group, "scheduling.x-k8s.io");

  const json native = build_pod_group(job, "quickstart-p0-v1-r1", 4, GangApi::Native);
  EXPECT_EQ(native["apiVersion"], "scheduling.k8s.io/v1beta1");
  EXPECT_EQ(native["kind"], "PodGroup");
  EXPECT_EQ(native["metadata"]["ownerReferences"][0]["uid"], "uid-quickstart");
  EXPECT_EQ(native["spec"], (json{{"schedulingPolicy", {{"gang", {{"minCount", 4}}}}}}));
  EXPECT_EQ(pod_group_resource_of(native).group, "scheduling.k8s.io");
  EXPECT_EQ(pod_group_resource_of(native).version, "v1beta1");
}

TEST(GangScheduling, DiscoveryListsPodGroupsOrNot) {
  EXPECT_TRUE(lists_pod_groups(json{{"resources", {{{"name", "podgroups"}}, {{"name", "x"}}}}}));
  EXPECT_FALSE(lists_pod_groups(json{{"resources", {{{"name", "elasticquotas"}}}}}));
  EXPECT_FALSE(lists_pod_groups(json::object()));
}

// A multi-worker round gets its PodGroup first, then its workers, each naming it.
TEST(GangScheduling, AMultiWorkerRoundCreatesItsPodGroupBeforeItsWorkers) {
  for (const auto& [spec, by_default] :
       {std::pair{json{{"gangScheduling", true}}, false}, std::pair{json::object(), true}}) {
    const Decision d =
        decide(view_of(job_with_workers(2, spec), GangApi::Coscheduling), options(by_default));
    ASSERT_TRUE(d.status);
    int group_at = -1, first_pod_at = -1, pods = 0;
    for (std::size_t i = 0; i < d.create.size(); ++i) {
      const json& o = d.create[i];
      if (o["kind"] == "PodGroup") {
        group_at = static_cast<int>(i);
        EXPECT_EQ(o["metadata"]["name"], "quickstart-p0-v1-r1");
        EXPECT_EQ(o["spec"]["minMember"], 2);
      } else if (o["kind"] == "Pod") {
        if (first_pod_at < 0) first_pod_at = static_cast<int>(i);
        ++pods;
        EXPECT_EQ(o["metadata"]["labels"][kGangLabel], "quickstart-p0-v1-r1");
      }
    }
    EXPECT_EQ(pods, 2);
    ASSERT_GE(group_at, 0) << "no PodGroup";
    EXPECT_LT(group_at, first_pod_at);
  }
}

// With Kubernetes' API, the round's PodGroup is scheduling.k8s.io/v1beta1 with a gang policy, and
// each worker names it in spec.schedulingGroup (and carries no coscheduling label).
TEST(GangScheduling, WithTheNativeApiTheWorkersNameTheGroupInTheirSpec) {
  const Decision d =
      decide(view_of(job_with_workers(4, {{"gangScheduling", true}}), GangApi::Native), options());
  ASSERT_TRUE(d.status);
  int group_at = -1, first_pod_at = -1, pods = 0;
  for (std::size_t i = 0; i < d.create.size(); ++i) {
    const json& o = d.create[i];
    if (o["kind"] == "PodGroup") {
      group_at = static_cast<int>(i);
      EXPECT_EQ(o["apiVersion"], "scheduling.k8s.io/v1beta1");
      EXPECT_EQ(o["metadata"]["name"], "quickstart-p0-v1-r1");
      EXPECT_EQ(o["spec"]["schedulingPolicy"]["gang"]["minCount"], 4);
    } else if (o["kind"] == "Pod") {
      if (first_pod_at < 0) first_pod_at = static_cast<int>(i);
      ++pods;
      EXPECT_EQ(o["spec"]["schedulingGroup"]["podGroupName"], "quickstart-p0-v1-r1");
      EXPECT_FALSE(o["metadata"]["labels"].contains(kGangLabel));
    }
  }
  EXPECT_EQ(pods, 4);
  ASSERT_GE(group_at, 0) << "no PodGroup";
  EXPECT_LT(group_at, first_pod_at);
  EXPECT_FALSE(has_event(d, "GangSchedulingUnavailable"));
}

// One worker needs no gang; a job that declines gets none; an API server without the PodGroup
// API gets the workers as without it, and a Warning says so.
TEST(GangScheduling, NoGangForOneWorkerADecliningJobOrWithoutTheApi) {
  auto kinds = [](const Decision& d) {
    std::vector<std::string> out;
    for (const auto& o : d.create) {
      out.push_back(o["kind"].get<std::string>());
      if (o["kind"] == "Pod") {
        EXPECT_FALSE(o["metadata"]["labels"].contains(kGangLabel));
        EXPECT_FALSE(o["spec"].contains("schedulingGroup"));
      }
    }
    return out;
  };
  const Decision one = decide(view_of(job_with_workers(1), GangApi::Native), options(true));
  EXPECT_EQ(kinds(one), (std::vector<std::string>{"Service", "Pod"}));
  const Decision declined = decide(
      view_of(job_with_workers(2, {{"gangScheduling", false}}), GangApi::Native), options(true));
  EXPECT_EQ(kinds(declined), (std::vector<std::string>{"Service", "Pod", "Pod"}));
  EXPECT_FALSE(has_event(declined, "GangSchedulingUnavailable"));
  const Decision unserved =
      decide(view_of(job_with_workers(2, {{"gangScheduling", true}}), GangApi::None), options());
  EXPECT_EQ(kinds(unserved), (std::vector<std::string>{"Service", "Pod", "Pod"}));
  EXPECT_TRUE(has_event(unserved, "GangSchedulingUnavailable"));
}

json lists_podgroups(const std::string& group_version) {
  return {{"kind", "APIResourceList"},
          {"groupVersion", group_version},
          {"resources", {{{"name", "podgroups"}, {"kind", "PodGroup"}}}}};
}

// Kubernetes' API is asked first, then the coscheduling plugin's. "Served" is remembered, "not
// served" for 5 minutes; a failed request is an error, not an answer. Kubernetes' API, once it
// appears, is preferred over the plugin's.
TEST(GangScheduling, DiscoveryPrefersTheNativeApiRemembersServedAndRechecksNotServed) {
  auto transport = std::make_shared<kube::testing::ScriptedTransport>();
  auto clock = std::make_shared<FakeClock>();
  kube::ClientOptions client_options;
  client_options.clock = clock;
  client_options.random = std::make_shared<RandomSource>(5);
  client_options.rate_limit = {0, 0};
  client_options.retry.max_attempts = 1;
  kube::Client client(transport, nullptr, client_options);
  PodGroupDiscovery discovery(client, *clock);
  const char* kNotFound = "the server could not find the requested resource";

  transport->push_status(500, "InternalError", "etcd is gone");
  auto answer = discovery.served();
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().message.find("etcd is gone"), std::string::npos)
      << answer.error().message;

  transport->push_status(404, "NotFound", kNotFound);
  transport->push_status(404, "NotFound", kNotFound);
  answer = discovery.served();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, GangApi::None);
  ASSERT_EQ(transport->request_count(), 3u);
  EXPECT_EQ(transport->requests()[1].request.path, "/apis/scheduling.k8s.io/v1beta1");
  EXPECT_EQ(transport->requests()[2].request.path, "/apis/scheduling.x-k8s.io/v1alpha1");
  clock->advance(std::chrono::minutes(4));
  answer = discovery.served();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, GangApi::None);
  EXPECT_EQ(transport->request_count(), 3u) << "asked again within 5 minutes";

  // The plugin is installed; Kubernetes' API is still off.
  clock->advance(std::chrono::minutes(1));
  transport->push_status(404, "NotFound", kNotFound);
  transport->push_json(200, lists_podgroups("scheduling.x-k8s.io/v1alpha1"));
  answer = discovery.served();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, GangApi::Coscheduling);
  EXPECT_EQ(transport->request_count(), 5u);
  answer = discovery.served();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, GangApi::Coscheduling);
  EXPECT_EQ(transport->request_count(), 5u) << "served is remembered";

  // Kubernetes' API is turned on: preferred from the next look on, and remembered.
  clock->advance(std::chrono::minutes(5));
  transport->push_json(200, lists_podgroups("scheduling.k8s.io/v1beta1"));
  answer = discovery.served();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, GangApi::Native);
  ASSERT_EQ(transport->request_count(), 6u);
  EXPECT_EQ(transport->requests()[5].request.path, "/apis/scheduling.k8s.io/v1beta1");
  answer = discovery.served();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, GangApi::Native);
  EXPECT_EQ(transport->request_count(), 6u);
}

}  // namespace
}  // namespace depl::controller
