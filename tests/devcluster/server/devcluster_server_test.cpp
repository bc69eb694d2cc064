// The dev cluster without kubectl: HTTP routing, discovery, OpenAPI, watches (timeout, 410),
// fault injection, the scheduler and the kubelet, through a real socket or the store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "depl/devcluster/dev_cluster.hpp"
#include "test_http.hpp"

namespace depl::devcluster::testing {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kPools = R"(pools:
  - {name: a100, gpuType: A100, nodes: 2, gpusPerNode: 8, gpuGflops: 19500, pricePerGpuHour: 2.9}
  - {name: t4, gpuType: T4, gpus: 4, gpusPerNode: 4, gpuGflops: 8100, pricePerGpuHour: 0.35}
)";

// Polls `ready` until it holds or `timeout` passes (the cluster's loops run on their own
// threads; this waits for their effect, it does not stand in for synchronisation).
template <typename F>
bool eventually(F ready, std::chrono::seconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

class DevClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DevClusterOptions options;
    options.insecure_http = true;  // the test client speaks plain HTTP
    options.pools_yaml = kPools;
    options.image_map["busybox"] = "/bin/sh";
    options.simulated_pod_duration = std::chrono::milliseconds(200);
    options.restart_backoff = std::chrono::milliseconds(50);
    auto started = DevCluster::start(options);
    ASSERT_TRUE(started) << started.error().message;
    cluster_ = std::move(*started);
  }

  ApiStore& store() { return cluster_->store(); }
  std::uint16_t port() { return cluster_->port(); }

  json pod(const std::string& name) {
    return store().get(ResourceRef{"", "v1", "pods", "default", name, ""}).body;
  }
  void create_pod(const json& spec, const std::string& name) {
    json object = {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata", {{"name", name}, {"namespace", "default"}}},
                   {"spec", spec}};
    auto r = store().create(ResourceRef{"", "v1", "pods", "default", "", ""}, object);
    ASSERT_TRUE(r.ok()) << r.body.dump();
  }
  static json shell_container(const std::string& script) {
    return {{"name", "main"}, {"image", "busybox"}, {"command", {"sh", "-c", script}}};
  }
  std::string phase(const std::string& name) {
    const json p = pod(name);
    return p.contains("status") ? p["status"].value("phase", "") : "";
  }

  std::unique_ptr<DevCluster> cluster_;
};

TEST_F(DevClusterTest, ServesVersionDiscoveryAndOpenApi) {
  auto version = http_request(port(), "GET", "/version");
  ASSERT_EQ(version.status, 200) << version.body;
  EXPECT_EQ(json::parse(version.body)["major"], "1");
  auto core = json::parse(http_request(port(), "GET", "/api/v1").body);
  std::vector<std::string> names;
  for (const auto& r : core["resources"]) names.push_back(r["name"]);
  EXPECT_THAT(names, ::testing::IsSupersetOf({"pods", "pods/status", "pods/binding", "pods/log",
                                              "nodes", "namespaces", "configmaps", "secrets"}));
  for (const auto& r : core["resources"]) {
    if (r["name"] != "pods/binding") continue;
    EXPECT_EQ(r["kind"], "Binding");
    EXPECT_EQ(r["namespaced"], true);
    EXPECT_EQ(r["verbs"], json::array({"create"}));
  }
  auto groups = http_request(port(), "GET", "/apis");
  EXPECT_THAT(groups.body, HasSubstr("\"apps\""));
  EXPECT_THAT(groups.body, HasSubstr("apiextensions.k8s.io"));
  auto index = json::parse(http_request(port(), "GET", "/openapi/v3").body);
  ASSERT_TRUE(index["paths"].contains("api/v1"));
  const std::string doc_url = index["paths"]["api/v1"]["serverRelativeURL"];
  auto doc = json::parse(http_request(port(), "GET", doc_url).body);
  const json& patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"]["kind"], "Pod");
  bool field_validation = false;
  for (const auto& p : patch["parameters"]) field_validation |= p["name"] == "fieldValidation";
  EXPECT_TRUE(field_validation);
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/nosuchthings").status, 404);
  EXPECT_EQ(http_request(port(), "GET", "/healthz").body, "ok");
}

TEST_F(DevClusterTest, WatchStreamsEventsAndHonoursTimeoutSeconds) {
  TestStream watch(port(), "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1");
  ASSERT_EQ(watch.status(), 200);
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c1"}}}};
  ASSERT_TRUE(store().create(ResourceRef{"", "v1", "configmaps", "default", "", ""}, cm).ok());
  auto line = watch.next_line(std::chrono::seconds(10));
  ASSERT_TRUE(line);
  auto event = json::parse(*line);
  EXPECT_EQ(event["type"], "ADDED");
  EXPECT_EQ(event["object"]["metadata"]["name"], "c1");
  // timeoutSeconds=1 ends the response.
  EXPECT_FALSE(watch.next_line(std::chrono::seconds(10)));
  EXPECT_TRUE(watch.ended());
}

TEST_F(DevClusterTest, CompactedHistoryGivesAnError410Event) {
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c1"}}}};
  auto created = store().create(ResourceRef{"", "v1", "configmaps", "default", "", ""}, cm);
  ASSERT_TRUE(created.ok());
  const std::string rv = created.body["metadata"]["resourceVersion"];
  cm["metadata"]["name"] = "c2";
  ASSERT_TRUE(store().create(ResourceRef{"", "v1", "configmaps", "default", "", ""}, cm).ok());
  cluster_->compact_history();
  TestStream watch(port(), "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + rv);
  auto line = watch.next_line(std::chrono::seconds(10));
  ASSERT_TRUE(line);
  auto event = json::parse(*line);
  EXPECT_EQ(event["type"], "ERROR");
  EXPECT_EQ(event["object"]["code"], 410);
}

TEST_F(DevClusterTest, DroppedWatchesEnd) {
  TestStream watch(port(), "/api/v1/pods?watch=1");
  ASSERT_EQ(watch.status(), 200);
  cluster_->drop_watches();
  EXPECT_FALSE(watch.next_line(std::chrono::seconds(10)));
  EXPECT_TRUE(watch.ended());
}

TEST_F(DevClusterTest, HeldWatchEventsWaitInOrderUntilReleased) {
  TestStream configmaps(port(), "/api/v1/namespaces/default/configmaps?watch=1");
  TestStream secrets(port(), "/api/v1/namespaces/default/secrets?watch=1");
  ASSERT_EQ(configmaps.status(), 200);
  ASSERT_EQ(secrets.status(), 200);
  cluster_->hold_watch_events("configmaps");
  auto create = [&](const std::string& plural, const std::string& kind, const std::string& name) {
    json object = {{"apiVersion", "v1"}, {"kind", kind}, {"metadata", {{"name", name}}}};
    ASSERT_TRUE(store().create(ResourceRef{"", "v1", plural, "default", "", ""}, object).ok());
  };
  create("configmaps", "ConfigMap", "c1");
  create("configmaps", "ConfigMap", "c2");
  create("secrets", "Secret", "s1");
  // Other resources' watches are not held; the held one is served as usual otherwise.
  auto secret = secrets.next_line(std::chrono::seconds(10));
  ASSERT_TRUE(secret);
  EXPECT_EQ(json::parse(*secret)["object"]["metadata"]["name"], "s1");
  EXPECT_EQ(store().get(ResourceRef{"", "v1", "configmaps", "default", "c2", ""}).code, 200);
  // A watch opened now lags as well (it ends when its wait for a line times out).
  TestStream late(port(), "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0");
  ASSERT_EQ(late.status(), 200);
  EXPECT_FALSE(late.next_line(std::chrono::milliseconds(300))) << "an event was not held";
  cluster_->release_watch_events();
  create("configmaps", "ConfigMap", "c3");
  for (const char* name : {"c1", "c2", "c3"}) {
    auto line = configmaps.next_line(std::chrono::seconds(10));
    ASSERT_TRUE(line) << name;
    EXPECT_EQ(json::parse(*line)["object"]["metadata"]["name"], name);
  }
}

TEST_F(DevClusterTest, FailsTheNextRequestsOnDemand) {
  cluster_->fail_next_requests(2, 429);
  auto first = http_request(port(), "GET", "/api/v1/namespaces");
  EXPECT_EQ(first.status, 429);
  EXPECT_EQ(first.headers["retry-after"], "1");
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/namespaces").status, 429);
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/namespaces").status, 200);
  cluster_->fail_next_requests(1, 409);
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/nodes").status, 409);
  cluster_->fail_next_requests(1, 500);
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/nodes").status, 500);
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/nodes").status, 200);
}

TEST_F(DevClusterTest, FailsOneClientsRequestsUntilCleared) {
  cluster_->fail_requests_where(
      [](const RequestSummary& r) {
        return r.method == "PUT" && r.user_agent.find("(identity=a)") != std::string::npos;
      },
      503);
  const std::map<std::string, std::string> a = {{"User-Agent", "depl-controller/0.1 (identity=a)"}};
  const std::map<std::string, std::string> b = {{"User-Agent", "depl-controller/0.1 (identity=b)"}};
  const std::string map = R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"}})";
  ASSERT_EQ(http_request(port(), "POST", "/api/v1/namespaces/default/configmaps", map,
                         "application/json", a)
                .status,
            201);
  auto refused = http_request(port(), "PUT", "/api/v1/namespaces/default/configmaps/m", map,
                              "application/json", a);
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.headers["retry-after"], "1");
  EXPECT_EQ(http_request(port(), "PUT", "/api/v1/namespaces/default/configmaps/m", map,
                         "application/json", b)
                .status,
            200);
  cluster_->fail_requests_where(nullptr, 0);
  EXPECT_EQ(http_request(port(), "PUT", "/api/v1/namespaces/default/configmaps/m", map,
                         "application/json", a)
                .status,
            200);
}

TEST_F(DevClusterTest, UnavailableServerRefusesThenComesBack) {
  cluster_->make_unavailable(std::chrono::milliseconds(500), DevCluster::Outage::Refuse);
  EXPECT_EQ(http_request(port(), "GET", "/version").status, 0);
  EXPECT_TRUE(eventually([&] { return http_request(port(), "GET", "/version").status == 200; }));
  cluster_->make_unavailable(std::chrono::milliseconds(500),
                             DevCluster::Outage::ServiceUnavailable);
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/pods").status, 503);
  EXPECT_TRUE(
      eventually([&] { return http_request(port(), "GET", "/api/v1/pods").status == 200; }));
}

TEST_F(DevClusterTest, SchedulerBindsByResourcesSelectorAndReportsUnschedulable) {
  json on_t4 = {{"nodeSelector", {{"depl.dev/pool", "t4"}}},
                {"containers",
                 {{{"name", "c"},
                   {"image", "sim"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}};
  create_pod(on_t4, "small");
  ASSERT_TRUE(eventually([&] { return pod("small")["spec"].value("nodeName", "") == "t4-0"; }));
  // An extended resource needs a limit (a request alone is refused, as by kube-apiserver).
  json too_big = {
      {"containers",
       {{{"name", "c"},
         {"image", "sim"},
         {"resources",
          {{"limits", {{"nvidia.com/gpu", "9"}}}, {"requests", {{"nvidia.com/gpu", "9"}}}}}}}}};
  create_pod(too_big, "big");
  ASSERT_TRUE(eventually([&] {
    const json p = pod("big");
    if (!p.contains("status") || !p["status"].contains("conditions")) return false;
    for (const auto& c : p["status"]["conditions"]) {
      if (c["type"] == "PodScheduled" && c["status"] == "False" && c["reason"] == "Unschedulable") {
        return c["message"].get<std::string>().find("Insufficient nvidia.com/gpu") !=
               std::string::npos;
      }
    }
    return false;
  }));
  json affinity = {
      {"affinity",
       {{"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             {{{"matchExpressions",
                {{{"key", "depl.dev/pool"}, {"operator", "NotIn"}, {"values", {"t4"}}}}}}}}}}}}}},
      {"containers", {{{"name", "c"}, {"image", "sim"}}}}};
  create_pod(affinity, "not-t4");
  ASSERT_TRUE(eventually(
      [&] { return pod("not-t4")["spec"].value("nodeName", "").rfind("a100-", 0) == 0; }));
}

// GPUs in use are those of bound pods that have not finished: a pod waits while they are taken,
// and is bound once the pod holding them is deleted or has finished.
TEST_F(DevClusterTest, SchedulerCountsGpusUntilThePodHoldingThemIsGoneOrDone) {
  auto on_t4 = [](int gpus, json container) {
    container["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
    return json{{"nodeSelector", {{"depl.dev/pool", "t4"}}},
                {"restartPolicy", "Never"},
                {"containers", json::array({container})}};
  };
  auto unschedulable = [&](const std::string& name) {
    const json p = pod(name);
    if (!p.contains("status") || !p["status"].contains("conditions")) return false;
    for (const auto& c : p["status"]["conditions"]) {
      if (c["type"] == "PodScheduled" && c["reason"] == "Unschedulable") return true;
    }
    return false;
  };
  auto node_of = [&](const std::string& name) { return pod(name)["spec"].value("nodeName", ""); };
  create_pod(on_t4(4, shell_container("sleep 60")), "holder");
  ASSERT_TRUE(eventually([&] { return node_of("holder") == "t4-0"; }));
  // A simulated container: it finishes on its own 200 ms after it starts.
  create_pod(on_t4(2, {{"name", "main"}, {"image", "sim"}}), "short");
  ASSERT_TRUE(eventually([&] { return unschedulable("short"); }));
  EXPECT_EQ(node_of("short"), "");
  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(store().remove(ResourceRef{"", "v1", "pods", "default", "holder", ""}, now).ok());
  ASSERT_TRUE(eventually([&] { return node_of("short") == "t4-0"; }));
  // The 2 GPUs of "short" are in use until it has finished; then all 4 are free again.
  create_pod(on_t4(4, shell_container("sleep 60")), "whole");
  ASSERT_TRUE(eventually([&] { return phase("short") == "Succeeded"; }));
  ASSERT_TRUE(eventually([&] { return node_of("whole") == "t4-0"; }));
}

// Pods created together are placed together: each binding counts against the node at once,
// before its event comes back, so a burst never puts more on a node than it has.
TEST_F(DevClusterTest, SchedulerNeverBindsMoreThanANodeHoldsInABurst) {
  json one_gpu = {
      {"nodeSelector", {{"depl.dev/pool", "t4"}}},
      {"containers", json::array({{{"name", "main"},
                                   {"image", "busybox"},
                                   {"command", {"sh", "-c", "sleep 60"}},
                                   {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}};
  auto worker = [](int i) {
    std::string name = "w";
    name += std::to_string(i);
    return name;
  };
  for (int i = 0; i < 12; ++i) create_pod(one_gpu, worker(i));
  auto settled = [&](int& bound) {
    bound = 0;
    int refused = 0;
    for (int i = 0; i < 12; ++i) {
      const json p = pod(worker(i));
      if (!p["spec"].value("nodeName", "").empty()) ++bound;
      for (const auto& c : p.value("status", json::object()).value("conditions", json::array())) {
        if (c.value("type", "") == "PodScheduled" && c.value("reason", "") == "Unschedulable")
          ++refused;
      }
    }
    return bound + refused == 12;
  };
  int bound = 0;
  ASSERT_TRUE(eventually([&] { return settled(bound); }));
  EXPECT_EQ(bound, 4) << "the t4 node has 4 GPUs";
}

TEST_F(DevClusterTest, KubeletReportsExitCodesAndRestarts) {
  create_pod({{"restartPolicy", "Never"}, {"containers", {shell_container("exit 3")}}}, "fails");
  ASSERT_TRUE(eventually([&] { return phase("fails") == "Failed"; }));
  const json state = pod("fails")["status"]["containerStatuses"][0]["state"];
  EXPECT_EQ(state["terminated"]["exitCode"], 3);
  EXPECT_EQ(state["terminated"]["reason"], "Error");

  create_pod(
      {{"restartPolicy", "OnFailure"},
       {"containers", {shell_container("[ -e restarted ] && exit 0; touch restarted; exit 1")}}},
      "retries");
  ASSERT_TRUE(eventually([&] { return phase("retries") == "Succeeded"; }));
  EXPECT_EQ(pod("retries")["status"]["containerStatuses"][0]["restartCount"], 1);

  create_pod({{"restartPolicy", "Never"}, {"containers", {{{"name", "c"}, {"image", "unmapped"}}}}},
             "simulated");
  ASSERT_TRUE(eventually([&] { return phase("simulated") == "Succeeded"; }));
}

TEST_F(DevClusterTest, KubeletResolvesEnvironmentFromSecretsAndConfigMaps) {
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "s"}}},
                 {"data", {{"token", "c2VjcmV0"}}}};
  ASSERT_TRUE(store().create(ResourceRef{"", "v1", "secrets", "default", "", ""}, secret).ok());
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "cm"}}},
             {"data", {{"mode", "fast"}}}};
  ASSERT_TRUE(store().create(ResourceRef{"", "v1", "configmaps", "default", "", ""}, cm).ok());
  json container = shell_container("echo $TOKEN $MODE $NS $IP");
  container["env"] = {
      {{"name", "TOKEN"}, {"valueFrom", {{"secretKeyRef", {{"name", "s"}, {"key", "token"}}}}}},
      {{"name", "MODE"}, {"valueFrom", {{"configMapKeyRef", {{"name", "cm"}, {"key", "mode"}}}}}},
      {{"name", "NS"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.namespace"}}}}}},
      {{"name", "IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}}};
  create_pod({{"restartPolicy", "Never"}, {"containers", {container}}}, "env");
  ASSERT_TRUE(eventually([&] { return phase("env") == "Succeeded"; }));
  const std::string ip = pod("env")["status"]["podIP"];
  auto logs = http_request(port(), "GET", "/api/v1/namespaces/default/pods/env/log");
  ASSERT_EQ(logs.status, 200) << logs.body;
  EXPECT_EQ(logs.body, "secret fast default " + ip + "\n");
}

// Secret and projected volumes are written for the process, which finds their files at the paths
// its spec names (in its environment and workingDir); a missing Secret holds the container in
// ContainerCreating until it appears.
TEST_F(DevClusterTest, KubeletMaterialisesSecretAndProjectedVolumes) {
  json container =
      shell_container("cat $TOKEN_FILE; echo; cat $ALL/token $ALL/other; echo; cat token; echo");
  container["env"] = {
      {{"name", "TOKEN_FILE"}, {"value", "/var/run/secrets/kubeflow/trainer/token"}},
      {{"name", "ALL"}, {"value", "/etc/all"}}};
  container["workingDir"] = "/var/run/secrets/kubeflow/trainer";
  container["volumeMounts"] = {
      {{"name", "trainer"}, {"mountPath", "/var/run/secrets/kubeflow/trainer"}, {"readOnly", true}},
      {{"name", "all"}, {"mountPath", "/etc/all"}}};
  const json volumes = {
      {{"name", "trainer"},
       {"projected",
        {{"sources",
          {{{"secret", {{"name", "s"}, {"items", {{{"key", "token"}, {"path", "token"}}}}}}}}}}}},
      {{"name", "all"}, {"secret", {{"secretName", "s"}}}}};
  create_pod({{"restartPolicy", "Never"}, {"containers", {container}}, {"volumes", volumes}},
             "volumes");
  ASSERT_TRUE(eventually([&] {
    const json p = pod("volumes");
    return p.contains("/status/containerStatuses/0/state/waiting/message"_json_pointer) &&
           p["/status/containerStatuses/0/state/waiting/message"_json_pointer]
                   .get<std::string>()
                   .find("secret \"s\" not found") != std::string::npos;
  })) << pod("volumes").dump();
  EXPECT_EQ(phase("volumes"), "Pending");
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "s"}}},
                 {"data", {{"token", "c2VjcmV0"}, {"other", "b3RoZXI="}}}};
  ASSERT_TRUE(store().create(ResourceRef{"", "v1", "secrets", "default", "", ""}, secret).ok());
  ASSERT_TRUE(eventually([&] { return phase("volumes") == "Succeeded"; })) << pod("volumes").dump();
  auto logs = http_request(port(), "GET", "/api/v1/namespaces/default/pods/volumes/log");
  ASSERT_EQ(logs.status, 200) << logs.body;
  EXPECT_EQ(logs.body, "secret\nsecretother\nsecret\n");
}

// A simulated container's log is its one line, kept in memory: simulating a pod writes nothing
// to disk (a burst of thousands of pods spent more on creating files than on the pods).
TEST_F(DevClusterTest, SimulatedContainersLogOneLineAndTouchNoDisk) {
  create_pod({{"restartPolicy", "Never"}, {"containers", {{{"name", "main"}, {"image", "sim"}}}}},
             "simulated");
  ASSERT_TRUE(eventually([&] { return phase("simulated") == "Succeeded"; }));
  const std::string line = "simulated container main (image sim) started\n";
  auto logs = http_request(port(), "GET", "/api/v1/namespaces/default/pods/simulated/log");
  ASSERT_EQ(logs.status, 200) << logs.body;
  EXPECT_EQ(logs.body, line);
  auto followed =
      http_request(port(), "GET", "/api/v1/namespaces/default/pods/simulated/log?follow=true");
  ASSERT_EQ(followed.status, 200) << followed.body;
  EXPECT_EQ(followed.body, line);
  // Pod directories are <work dir>/pods/<namespace>_<name>_<uid>.
  const auto pods_dir = std::filesystem::path(cluster_->kubeconfig_path()).parent_path() / "pods";
  ASSERT_TRUE(std::filesystem::is_directory(pods_dir)) << pods_dir;
  for (const auto& entry : std::filesystem::directory_iterator(pods_dir)) {
    EXPECT_EQ(entry.path().filename().string().find("default_simulated_"), std::string::npos)
        << entry.path();
  }
}

// A followed log of a container that has printed nothing yet stays open: its first, empty read
// must not go out as a zero-length chunk (the chunked encoding's end), which would end
// `kubectl logs -f` at once with nothing.
TEST_F(DevClusterTest, FollowedLogOfAQuietContainerWaitsForItsOutput) {
  create_pod(
      {{"restartPolicy", "Never"}, {"containers", {shell_container("sleep 1; echo woke up")}}},
      "quiet");
  ASSERT_TRUE(eventually([&] { return phase("quiet") == "Running"; }));
  auto followed =
      http_request(port(), "GET", "/api/v1/namespaces/default/pods/quiet/log?follow=true");
  ASSERT_EQ(followed.status, 200) << followed.body;
  EXPECT_EQ(followed.body, "woke up\n");
}

// Bearer tokens authenticate and RBAC authorizes, also over plain HTTP: an unknown token is a
// 401, a service account without a binding gets kube's 403, one with a Role gets what it grants,
// the reviews answer, and a token stops working with its service account.
TEST_F(DevClusterTest, TokensAreAuthenticatedAndTheirUsersAuthorized) {
  auto created = store().create(ResourceRef{"", "v1", "serviceaccounts", "default", "", ""},
                                json{{"metadata", {{"name", "robot"}}}});
  ASSERT_TRUE(created.ok()) << created.body.dump();
  auto token = cluster_->service_account_token("default", "robot");
  ASSERT_TRUE(token) << token.error().message;
  const std::map<std::string, std::string> as_robot = {{"Authorization", "Bearer " + *token}};
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/namespaces/default/pods", "", "",
                         {{"Authorization", "Bearer nope"}})
                .status,
            401);
  auto refused = http_request(port(), "GET", "/api/v1/namespaces/default/pods", "", "", as_robot);
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(json::parse(refused.body)["message"],
            "pods is forbidden: User \"system:serviceaccount:default:robot\" cannot list "
            "resource \"pods\" in API group \"\" in the namespace \"default\"");
  EXPECT_EQ(http_request(port(), "GET", "/api/v1", "", "", as_robot).status, 200);  // discovery
  const ResourceRef roles{"rbac.authorization.k8s.io", "v1", "roles", "default", "", ""};
  ASSERT_TRUE(store()
                  .create(roles, json::parse(R"({"metadata":{"name":"read"},"rules":[
                    {"apiGroups":[""],"resources":["pods"],"verbs":["list"]}]})"))
                  .ok());
  ASSERT_TRUE(store()
                  .create({"rbac.authorization.k8s.io", "v1", "rolebindings", "default", "", ""},
                          json::parse(R"({"metadata":{"name":"read"},
                    "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"read"},
                    "subjects":[{"kind":"ServiceAccount","name":"robot","namespace":"default"}]})"))
                  .ok());
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/namespaces/default/pods", "", "", as_robot).status,
            200);
  auto review =
      http_request(port(), "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                   R"({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",
          "spec":{"resourceAttributes":{"namespace":"default","verb":"delete","resource":"pods"}}})",
                   "application/json", as_robot);
  ASSERT_EQ(review.status, 201) << review.body;
  EXPECT_EQ(json::parse(review.body)["status"]["allowed"], false);
  auto whoami = http_request(port(), "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             R"({"apiVersion":"authentication.k8s.io/v1",
                                 "kind":"SelfSubjectReview"})",
                             "application/json", as_robot);
  ASSERT_EQ(whoami.status, 201) << whoami.body;
  EXPECT_EQ(json::parse(whoami.body)["status"]["userInfo"]["username"],
            "system:serviceaccount:default:robot");
  ASSERT_TRUE(
      store().remove(ResourceRef{"", "v1", "serviceaccounts", "default", "robot", ""}).ok());
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/namespaces/default/pods", "", "", as_robot).status,
            401);
}

// A protobuf body as client-go sends it: "k8s\0", then runtime.Unknown{typeMeta{apiVersion,
// kind}, raw: ConfigMap{metadata{name}, data{a: b}}}.
TEST_F(DevClusterTest, ProtobufBodiesOfBuiltInKindsAreDecoded) {
  auto field = [](int tag, const std::string& bytes) {
    std::string out;
    out.push_back(static_cast<char>(tag << 3 | 2));
    out.push_back(static_cast<char>(bytes.size()));
    return out + bytes;
  };
  const std::string meta = field(1, "cm");
  const std::string entry = field(1, "a") + field(2, "b");
  const std::string config_map = field(1, meta) + field(2, entry);
  const std::string type_meta = field(1, "v1") + field(2, "ConfigMap");
  const std::string body = std::string("k8s\0", 4) + field(1, type_meta) + field(2, config_map);
  auto made = http_request(port(), "POST", "/api/v1/namespaces/default/configmaps", body,
                           "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(made.status, 201) << made.body;
  const json stored = store().get(ResourceRef{"", "v1", "configmaps", "default", "cm", ""}).body;
  EXPECT_EQ(stored["data"], json({{"a", "b"}}));
  // A field number the schema does not know is named.
  const std::string unknown = std::string("k8s\0", 4) + field(1, type_meta) +
                              field(2, field(1, field(1, "cm2")) + field(9, "x"));
  auto refused = http_request(port(), "POST", "/api/v1/namespaces/default/configmaps", unknown,
                              "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("io.k8s.api.core.v1.ConfigMap has no field number 9"),
            std::string::npos)
      << refused.body;
  // A creationTimestamp (ObjectMeta field 8, a Time of seconds and nanos) past the year 9999,
  // which RFC 3339 cannot write, is refused naming the field, not stored as a garbled date.
  auto varint_field = [](int tag, std::uint64_t value) {
    std::string out(1, static_cast<char>(tag << 3));
    do {
      const auto low = static_cast<char>(value & 0x7f);
      value >>= 7;
      out.push_back(static_cast<char>(low | (value != 0 ? 0x80 : 0)));
    } while (value != 0);
    return out;
  };
  auto with_time = [&](std::uint64_t seconds) {
    return std::string("k8s\0", 4) + field(1, type_meta) +
           field(2, field(1, field(1, "cm3") + field(8, varint_field(1, seconds))));
  };
  auto far = http_request(port(), "POST", "/api/v1/namespaces/default/configmaps",
                          with_time(300000000000), "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(far.status, 400);
  EXPECT_NE(far.body.find("creationTimestamp: seconds 300000000000 and nanos 0 are not a time"),
            std::string::npos)
      << far.body;
  auto near = http_request(port(), "POST", "/api/v1/namespaces/default/configmaps",
                           with_time(1795323843), "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(near.status, 201) << near.body;
}

TEST_F(DevClusterTest, ContainersInheritNoFileDescriptorsBeyondTheirStdio) {
  // The test process holds the API server's listening socket (and more): a container that
  // inherited them would keep the port bound after the server stops.
  create_pod(
      {{"restartPolicy", "Never"},
       {"containers",
        {shell_container("for f in /proc/self/fd/*; do echo \"${f##*/} $(readlink $f)\"; done")}}},
      "fds");
  ASSERT_TRUE(eventually([&] { return phase("fds") == "Succeeded"; }));
  auto logs = http_request(port(), "GET", "/api/v1/namespaces/default/pods/fds/log");
  ASSERT_EQ(logs.status, 200) << logs.body;
  EXPECT_EQ(logs.body.find("socket:"), std::string::npos) << logs.body;
  EXPECT_NE(logs.body.find("0 /dev/null"), std::string::npos) << logs.body;
}

TEST_F(DevClusterTest, DeletionSendsSigtermThenSigkillAfterTheGracePeriod) {
  // Handles SIGTERM: gone well before a long grace period.
  create_pod(
      {{"terminationGracePeriodSeconds", 30},
       {"containers",
        {shell_container("trap 'exit 0' TERM; echo ready; while true; do sleep 0.05; done")}}},
      "polite");
  // Ignores SIGTERM: killed once its 3 s grace period is over (long enough that the polite pod,
  // which exits on SIGTERM, is gone first even on a loaded machine).
  create_pod({{"terminationGracePeriodSeconds", 3},
              {"containers",
               {shell_container("trap '' TERM; echo ready; while true; do sleep 0.05; done")}}},
             "stubborn");
  // Running is reported once the process exists; its trap is set only when it prints "ready".
  auto ready = [&](const char* name) {
    auto logs = http_request(port(), "GET",
                             std::string("/api/v1/namespaces/default/pods/") + name + "/log");
    return logs.status == 200 && logs.body.find("ready") != std::string::npos;
  };
  ASSERT_TRUE(eventually([&] { return ready("polite") && ready("stubborn"); }));
  const auto start = std::chrono::steady_clock::now();
  for (const char* name : {"polite", "stubborn"}) {
    auto r = store().remove(ResourceRef{"", "v1", "pods", "default", name, ""});
    ASSERT_TRUE(r.ok()) << r.body.dump();
  }
  auto gone = [&](const char* name) {
    return store().get(ResourceRef{"", "v1", "pods", "default", name, ""}).code == 404;
  };
  ASSERT_TRUE(eventually([&] { return gone("polite"); }));
  EXPECT_FALSE(gone("stubborn"))
      << "a process ignoring SIGTERM must outlive its grace period start";
  ASSERT_TRUE(eventually([&] { return gone("stubborn"); }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2900));
}

TEST_F(DevClusterTest, NotReadyNodeFailsItsPodsAndDeletedNodeRemovesThem) {
  json spec = {{"nodeSelector", {{"kubernetes.io/hostname", "a100-1"}}},
               {"containers", {shell_container("while true; do sleep 0.05; done")}}};
  create_pod(spec, "lost");
  ASSERT_TRUE(eventually([&] { return phase("lost") == "Running"; }));
  ASSERT_TRUE(cluster_->set_node_ready("a100-1", false));
  ASSERT_TRUE(eventually([&] { return phase("lost") == "Failed"; }));
  EXPECT_EQ(pod("lost")["status"]["reason"], "NodeLost");
  spec["nodeSelector"]["kubernetes.io/hostname"] = "t4-0";
  create_pod(spec, "orphan");
  ASSERT_TRUE(eventually([&] { return phase("orphan") == "Running"; }));
  ASSERT_TRUE(cluster_->delete_node("t4-0"));
  ASSERT_TRUE(eventually([&] {
    return store().get(ResourceRef{"", "v1", "pods", "default", "orphan", ""}).code == 404;
  }));
}

// A deleted node's machine is gone: its processes die at once, and the pod garbage collector
// does what kube-controller-manager's podgc does with the pods bound to it, even to one bound
// after the node went: marks them Failed (DisruptionTarget, DeletionByPodGC), then deletes them.
TEST_F(DevClusterTest, PodGcFailsThenDeletesThePodsOfADeletedNode) {
  auto watch =
      store().watch(ResourceRef{"", "v1", "pods", "default", "", ""}, observer_watch_options());
  ASSERT_TRUE(watch);
  create_pod({{"nodeSelector", {{"kubernetes.io/hostname", "t4-0"}}},
              {"containers", {shell_container("while true; do sleep 0.05; done")}}},
             "stranded");
  ASSERT_TRUE(eventually([&] { return phase("stranded") == "Running"; }));
  const int pid = cluster_->container_pid("default", "stranded", "main");
  ASSERT_GT(pid, 0);
  // One in its grace period when the node goes: it ignores SIGTERM.
  create_pod({{"nodeSelector", {{"kubernetes.io/hostname", "t4-0"}}},
              {"containers", {shell_container("trap '' TERM; while true; do sleep 0.05; done")}}},
             "terminating");
  ASSERT_TRUE(eventually([&] { return phase("terminating") == "Running"; }));
  ASSERT_TRUE(store().remove(ResourceRef{"", "v1", "pods", "default", "terminating", ""}).ok());
  ASSERT_TRUE(pod("terminating")["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(cluster_->delete_node("t4-0"));
  // Bound (by hand, past the scheduler) to the node that is gone.
  create_pod({{"nodeName", "t4-0"}, {"containers", {shell_container("sleep 60")}}}, "late");

  std::map<std::string, json> last_seen;  // before deletion
  std::set<std::string> deleted;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (deleted.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    auto event = (*watch)->next(std::chrono::milliseconds(100));
    if (!event || !event->object) continue;
    const std::string name = (*event->object)["metadata"].value("name", "");
    if (event->type == "DELETED") {
      deleted.insert(name);
    } else {
      last_seen[name] = *event->object;
    }
  }
  // Well before the 30 s grace period of "terminating" is over.
  ASSERT_EQ(deleted, (std::set<std::string>{"late", "stranded", "terminating"}));
  ASSERT_EQ(last_seen.size(), 3u);
  for (const auto& [name, pod] : last_seen) {
    const json& status = pod["status"];
    EXPECT_EQ(status.value("phase", ""), "Failed") << name;
    bool disrupted = false;
    for (const auto& c : status.value("conditions", json::array())) {
      disrupted |= c.value("type", "") == "DisruptionTarget" && c.value("status", "") == "True" &&
                   c.value("reason", "") == "DeletionByPodGC";
    }
    EXPECT_TRUE(disrupted) << name << ": " << status.dump();
  }
  // Killed and reaped by the kubelet when the node went.
  EXPECT_TRUE(eventually([&] { return ::kill(pid, 0) != 0; }));
  EXPECT_EQ(cluster_->container_pid("default", "stranded", "main"), 0);
}

// A node the collector never saw is given the quarantine (kube-controller-manager's 40 s; a node
// may register late) before its pods count as orphaned.
TEST(DevClusterPodGc, PodOfANeverSeenNodeGoesAfterTheQuarantine) {
  DevClusterOptions options;
  options.insecure_http = true;  // the test client speaks plain HTTP
  options.pools_yaml = kPools;
  options.orphan_pod_quarantine = std::chrono::milliseconds(500);
  auto started = DevCluster::start(options);
  ASSERT_TRUE(started) << started.error().message;
  DevCluster& cluster = **started;
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "nowhere"}, {"namespace", "default"}}},
              {"spec",
               {{"nodeName", "no-such-node"},
                {"containers", {{{"name", "c"}, {"image", "registry.example.com/w:1"}}}}}}};
  const auto created = std::chrono::steady_clock::now();
  ASSERT_TRUE(cluster.store().create(ResourceRef{"", "v1", "pods", "default", "", ""}, pod).ok());
  const ResourceRef ref{"", "v1", "pods", "default", "nowhere", ""};
  ASSERT_TRUE(eventually([&] { return cluster.store().get(ref).code == 404; }));
  EXPECT_GE(std::chrono::steady_clock::now() - created, std::chrono::milliseconds(500));
}

constexpr const char* kSpotPools = R"(pools:
  - {name: spot, gpuType: T4, nodes: 1, gpusPerNode: 4, gpuGflops: 8100, pricePerGpuHour: 0.1,
     capacityType: Spot, interruptionsPerHour: 0.5, reclaimNoticeSeconds: 20,
     taints: [{key: karpenter.sh/capacity-type, value: spot, effect: NoSchedule}]}
)";

// A spot reclaim, as Karpenter drains a node the cloud takes back: the node is tainted, its pods
// get DisruptionTarget and SIGTERM with their grace period cut to the notice, the node goes once
// they are gone (or the notice is over) and a replacement registers later.
TEST(DevClusterSpotReclaim, PodsGetSigtermAndDisruptionTargetThenTheNodeIsReplaced) {
  DevClusterOptions options;
  options.insecure_http = true;
  options.pools_yaml = kSpotPools;
  options.image_map["busybox"] = "/bin/sh";
  auto started = DevCluster::start(options);
  ASSERT_TRUE(started) << started.error().message;
  DevCluster& cluster = **started;
  ApiStore& store = cluster.store();
  const ResourceRef node_ref{"", "v1", "nodes", "", "spot-0", ""};
  const json node = store.get(node_ref).body;
  EXPECT_EQ(node["metadata"]["labels"]["karpenter.sh/capacity-type"], "spot");
  EXPECT_EQ(node["metadata"]["annotations"]["depl.dev/interruptions-per-hour"], "0.5");
  EXPECT_EQ(node["metadata"]["finalizers"], json::array({"karpenter.sh/termination"}));

  auto watch =
      store.watch(ResourceRef{"", "v1", "pods", "default", "", ""}, observer_watch_options());
  ASSERT_TRUE(watch);
  const json toleration = {{"key", "karpenter.sh/capacity-type"},
                           {"operator", "Equal"},
                           {"value", "spot"},
                           {"effect", "NoSchedule"}};
  auto create = [&](const std::string& name, const std::string& script) {
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"namespace", "default"}}},
        {"spec",
         {{"restartPolicy", "Never"},
          {"terminationGracePeriodSeconds", 60},
          {"tolerations", json::array({toleration})},
          {"containers",
           {{{"name", "main"}, {"image", "busybox"}, {"command", {"sh", "-c", script}}}}}}}};
    ASSERT_TRUE(store.create(ResourceRef{"", "v1", "pods", "default", "", ""}, pod).ok());
  };
  create("polite", "trap 'exit 0' TERM; echo ready; while true; do sleep 0.05; done");
  create("stubborn", "trap '' TERM; echo ready; while true; do sleep 0.05; done");
  auto logged_ready = [&](const std::string& name) {
    auto log = store.get(ResourceRef{"", "v1", "pods", "default", name, ""});
    const std::string phase =
        log.body.contains("status") ? log.body["status"].value("phase", "") : "";
    return phase == "Running" && cluster.container_pid("default", name, "main") > 0;
  };
  ASSERT_TRUE(eventually([&] { return logged_ready("polite") && logged_ready("stubborn"); }));
  // Both started their trap (the kubelet reports Running once the process exists).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  const auto reclaimed = std::chrono::steady_clock::now();
  DevCluster::ReclaimOptions reclaim;
  reclaim.notice = std::chrono::seconds(2);
  reclaim.replacement_after = std::chrono::milliseconds(300);
  ASSERT_TRUE(cluster.reclaim_node("spot-0", reclaim));
  ASSERT_TRUE(eventually([&] {
    const json n = store.get(node_ref).body;
    for (const auto& t : n["spec"].value("taints", json::array())) {
      if (t.value("key", "") == "karpenter.sh/disrupted") return true;
    }
    return false;
  }));

  std::map<std::string, json> last_seen;
  std::map<std::string, std::chrono::steady_clock::time_point> deleted_at;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (deleted_at.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    auto event = (*watch)->next(std::chrono::milliseconds(100));
    if (!event || !event->object) continue;
    const std::string name = (*event->object)["metadata"].value("name", "");
    if (event->type == "DELETED") {
      deleted_at.emplace(name, std::chrono::steady_clock::now());
    } else {
      last_seen[name] = *event->object;
    }
  }
  ASSERT_EQ(deleted_at.size(), 2u);
  for (const char* name : {"polite", "stubborn"}) {
    const json& pod = last_seen[name];
    ASSERT_TRUE(pod["metadata"].contains("deletionTimestamp")) << name;
    bool disrupted = false;
    for (const auto& c : pod["status"].value("conditions", json::array())) {
      disrupted |= c.value("type", "") == "DisruptionTarget" &&
                   c.value("reason", "") == "EvictionByEvictionAPI";
    }
    EXPECT_TRUE(disrupted) << name << ": " << pod["status"].dump();
  }
  // SIGTERM ends the polite pod at once; the stubborn one lasts until the notice's SIGKILL, not
  // its own 60 s grace period.
  EXPECT_LT(deleted_at["polite"] - reclaimed, std::chrono::milliseconds(1800));
  EXPECT_GE(deleted_at["stubborn"] - reclaimed, std::chrono::milliseconds(1000));
  EXPECT_LT(deleted_at["stubborn"] - reclaimed, std::chrono::seconds(10));

  ASSERT_TRUE(eventually([&] { return store.get(node_ref).code == 404; }));
  const ResourceRef replacement{"", "v1", "nodes", "", "spot-1", ""};
  ASSERT_TRUE(eventually([&] { return store.get(replacement).ok(); }));
  const json fresh = store.get(replacement).body;
  EXPECT_EQ(fresh["metadata"]["labels"]["depl.dev/pool"], "spot");
  EXPECT_EQ(fresh["spec"]["taints"].size(), 1u) << "the spot taint only, not disrupted";
  EXPECT_EQ(cluster.reclaim_node("nope").error().message, "node nope not found");
}

TEST_F(DevClusterTest, OnDemandNodesAreNotReclaimedButDeleted) {
  auto refused = cluster_->reclaim_node("t4-0");
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("not spot capacity"));
}

TEST_F(DevClusterTest, KillContainerSigkillsItsProcessesAndTheExitIsReported) {
  create_pod({{"restartPolicy", "Never"},
              {"containers", {shell_container("while true; do sleep 0.05; done")}}},
             "crashing");
  ASSERT_TRUE(eventually([&] { return phase("crashing") == "Running"; }));
  ASSERT_TRUE(cluster_->kill_container("default", "crashing"));
  ASSERT_TRUE(eventually([&] { return phase("crashing") == "Failed"; }));
  const json state = pod("crashing")["status"]["containerStatuses"][0]["state"];
  EXPECT_EQ(state["terminated"]["exitCode"], 137);  // 128 + SIGKILL
  EXPECT_EQ(state["terminated"]["reason"], "Error");
  EXPECT_FALSE(cluster_->kill_container("default", "crashing"));  // nothing left to kill
  EXPECT_FALSE(cluster_->kill_container("default", "no-such-pod"));

  // With restartPolicy OnFailure it is started again, as after any crash.
  create_pod({{"restartPolicy", "OnFailure"},
              {"containers", {shell_container("while true; do sleep 0.05; done")}}},
             "restarting");
  ASSERT_TRUE(eventually([&] { return phase("restarting") == "Running"; }));
  ASSERT_TRUE(cluster_->kill_container("default", "restarting", "main"));
  ASSERT_TRUE(eventually([&] {
    const json p = pod("restarting");
    return p["status"]["containerStatuses"][0].value("restartCount", 0) == 1 &&
           cluster_->container_pid("default", "restarting", "main") > 0;
  }));
  EXPECT_EQ(
      pod("restarting")["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"],
      137);
}

TEST_F(DevClusterTest, RequestObserverSeesEachListAndWatchWithItsUserAgent) {
  std::mutex mutex;
  std::vector<RequestSummary> seen;
  cluster_->observe_requests([&](const RequestSummary& r) {
    std::lock_guard lock(mutex);
    seen.push_back(r);
  });
  const std::map<std::string, std::string> agent = {{"User-Agent", "observed/1.0"}};
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/namespaces/default/pods", "", "", agent).status,
            200);
  {
    TestStream watch(port(), "/api/v1/namespaces/default/pods?watch=true", agent);
    EXPECT_EQ(watch.status(), 200);
  }
  {
    TestStream legacy(port(), "/api/v1/watch/namespaces/default/pods", agent);
    EXPECT_EQ(legacy.status(), 200);
  }
  EXPECT_EQ(http_request(port(), "GET", "/version").status, 200);  // not a resource request
  cluster_->observe_requests(nullptr);
  EXPECT_EQ(http_request(port(), "GET", "/api/v1/nodes").status, 200);
  std::lock_guard lock(mutex);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].path, "/api/v1/namespaces/default/pods");
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].user_agent, "observed/1.0");
  EXPECT_FALSE(seen[0].watch);
  EXPECT_TRUE(seen[1].watch);
  EXPECT_TRUE(seen[2].watch);
}

// The scheduler's success path is one pods/binding write per pod. The kubelet is off so that
// the PodScheduled=True condition seen here can only come from that write.
TEST(DevClusterScheduler, BindsEachPodWithOneBindingWrite) {
  DevClusterOptions options;
  options.insecure_http = true;  // the test client speaks plain HTTP
  options.pools_yaml = kPools;
  options.run_kubelet = false;
  auto started = DevCluster::start(options);
  ASSERT_TRUE(started) << started.error().message;
  DevCluster& cluster = **started;
  // Shared with the recorder, which the scheduler may still call after this body ends.
  struct Writes {
    std::mutex mutex;
    std::vector<WriteRecord> records;
  };
  auto writes = std::make_shared<Writes>();
  cluster.store().set_write_recorder([writes](const WriteRecord& r) {
    std::lock_guard lock(writes->mutex);
    if (r.user_agent == "depl-devcluster/scheduler") writes->records.push_back(r);
  });
  auto scheduler_writes = [writes] {
    std::lock_guard lock(writes->mutex);
    return writes->records;
  };
  for (const std::string name : {"first", "second"}) {
    const json pod = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", name}}},
                      {"spec", {{"containers", {{{"name", "c"}, {"image", "sim"}}}}}}};
    ASSERT_TRUE(cluster.store().create(ResourceRef{"", "v1", "pods", "default", "", ""}, pod).ok());
  }
  ASSERT_TRUE(eventually([&] { return scheduler_writes().size() >= 2; }));
  for (const std::string name : {"first", "second"}) {
    const json p = cluster.store().get(ResourceRef{"", "v1", "pods", "default", name, ""}).body;
    EXPECT_NE(p["spec"].value("nodeName", ""), "") << name;
    bool scheduled = false;
    for (const auto& c : p["status"].value("conditions", json::array())) {
      scheduled |= c["type"] == "PodScheduled" && c["status"] == "True";
    }
    EXPECT_TRUE(scheduled) << p.dump();
  }
  // No second write follows (the old way was a status patch, then a spec patch).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto seen = scheduler_writes();
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& w : seen) {
    EXPECT_EQ(w.verb, "create") << w.name;
    EXPECT_EQ(w.plural, "pods") << w.name;
    EXPECT_EQ(w.subresource, "binding") << w.name;
    EXPECT_EQ(w.code, 201) << w.name;
  }
  EXPECT_NE(seen[0].name, seen[1].name);
}

// POST /api/v1/namespaces/<ns>/pods/<name>/binding as kube-scheduler sends it, on a cluster whose
// own scheduler and kubelet are off (nothing else touches the pod).
TEST(DevClusterPodsBinding, PostBindsThePodAndAnswersASuccessStatus) {
  DevClusterOptions options;
  options.insecure_http = true;  // the test client speaks plain HTTP
  options.pools_yaml = kPools;
  options.run_scheduler = false;
  options.run_kubelet = false;
  auto started = DevCluster::start(options);
  ASSERT_TRUE(started) << started.error().message;
  DevCluster& cluster = **started;
  const std::string pod =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
          "spec":{"containers":[{"name":"c","image":"sim"}]}})";
  ASSERT_EQ(http_request(cluster.port(), "POST", "/api/v1/namespaces/default/pods", pod,
                         "application/json")
                .status,
            201);
  const std::string path = "/api/v1/namespaces/default/pods/p/binding";
  auto binding_of = [](const std::string& name) {
    return json{{"apiVersion", "v1"},
                {"kind", "Binding"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "t4-0"}}}}
        .dump();
  };
  const std::string binding = binding_of("p");
  // Fault injection covers it like any other resource request.
  cluster.fail_next_requests(1, 500);
  EXPECT_EQ(http_request(cluster.port(), "POST", path, binding, "application/json").status, 500);
  EXPECT_FALSE(cluster.store()
                   .get(ResourceRef{"", "v1", "pods", "default", "p", ""})
                   .body["spec"]
                   .contains("nodeName"));

  auto bound = http_request(cluster.port(), "POST", path, binding, "application/json");
  ASSERT_EQ(bound.status, 201) << bound.body;
  EXPECT_EQ(json::parse(bound.body), json::parse(R"({"kind":"Status","apiVersion":"v1",
                                                     "metadata":{},"status":"Success","code":201})"));
  auto got = http_request(cluster.port(), "GET", "/api/v1/namespaces/default/pods/p");
  const json p = json::parse(got.body);
  EXPECT_EQ(p["spec"]["nodeName"], "t4-0");
  EXPECT_EQ(p["status"]["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(p["status"]["conditions"][0]["status"], "True");

  auto again = http_request(cluster.port(), "POST", path, binding, "application/json");
  EXPECT_EQ(again.status, 409);
  EXPECT_THAT(again.body, HasSubstr(R"(pod p is already assigned to node \"t4-0\")"));
  const std::string path_q = "/api/v1/namespaces/default/pods/q/binding";
  EXPECT_EQ(
      http_request(cluster.port(), "POST", path_q, binding_of("q"), "application/json").status,
      404);
  EXPECT_EQ(http_request(cluster.port(), "POST", path_q, binding, "application/json").status, 400)
      << "the Binding names p, the URL q";
  EXPECT_EQ(http_request(cluster.port(), "GET", path).status, 405);
  EXPECT_EQ(http_request(cluster.port(), "POST", "/api/v1/namespaces/default/configmaps/c/binding",
                         binding, "application/json")
                .status,
            404);
}

// What depl-scale-bench relies on: with a negative simulated duration an unmapped image's
// container runs, without a process, until its pod is deleted (even with restartPolicy Never).
TEST(DevClusterSimulatedContainers, NegativeDurationRunsUntilDeletedWithoutAProcess) {
  DevClusterOptions options;
  options.insecure_http = true;  // the test client speaks plain HTTP
  options.pools_yaml = kPools;
  options.simulated_pod_duration = std::chrono::milliseconds(-1);
  auto started = DevCluster::start(options);
  ASSERT_TRUE(started) << started.error().message;
  DevCluster& cluster = **started;
  const ResourceRef ref{"", "v1", "pods", "default", "forever", ""};
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "forever"}, {"namespace", "default"}}},
              {"spec",
               {{"restartPolicy", "Never"},
                {"containers", {{{"name", "c"}, {"image", "registry.example.com/w:1"}}}}}}};
  ASSERT_TRUE(cluster.store().create(ResourceRef{"", "v1", "pods", "default", "", ""}, pod).ok());
  auto phase = [&] {
    const json p = cluster.store().get(ref).body;
    return p.contains("status") ? p["status"].value("phase", "") : "";
  };
  ASSERT_TRUE(eventually([&] { return phase() == "Running"; }));
  EXPECT_EQ(cluster.container_pid("default", "forever", "c"), 0);
  // No exit is ever scheduled; a second is far more than the kubelet needs to act on a timer.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(phase(), "Running");
  ASSERT_TRUE(cluster.store().remove(ref).ok());
  EXPECT_TRUE(eventually([&] { return cluster.store().get(ref).code == 404; }));
}

}  // namespace
}  // namespace depl::devcluster::testing
