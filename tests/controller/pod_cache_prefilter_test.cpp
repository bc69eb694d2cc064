// cached_pod_fields, the pods informer's decode-time filter: trimming a pod decoded with it gives
// what trimming the pod decoded whole gives, on the watch-stream fuzz corpus, the pods of the
// other tests, worker pods as the controller builds them, and seeded random variations of these.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "depl/common/random.hpp"
#include "depl/controller/pod_cache.hpp"
#include "depl/controller/worker_pods.hpp"
#include "depl/kube/watch_event.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

// What the cache ends up holding for an event line, or what went wrong on the way.
std::string cached(const std::string& line, const kube::FieldFilter* event_filter) {
  auto event = kube::parse_watch_event(line, /*drop_managed_fields=*/true, event_filter);
  if (!event) return "decode error: " + event.error().message;
  try {
    trim_cached_pod(event->object);
  } catch (const std::exception& e) {  // a pod no API server would send (a number as a name)
    return std::string("trim threw: ") + e.what();
  }
  return event->object.dump();
}

struct Checker {
  const kube::FieldFilter event_filter = kube::watch_event_filter(cached_pod_fields());
  int checked = 0;
  int smaller = 0;  // the filter left something out
  int different = 0;

  void check(const std::string& line, const std::string& where) {
    const std::string whole = cached(line, nullptr);
    const std::string filtered = cached(line, &event_filter);
    // The first few differences are enough to see what is missing.
    if (filtered != whole && ++different <= 3) {
      ADD_FAILURE() << where << "\n"
                    << line << "\nwhole:    " << whole << "\nfiltered: " << filtered;
    }
    ++checked;
    auto full = kube::parse_watch_event(line, true);
    auto cut = kube::parse_watch_event(line, true, &event_filter);
    if (full && cut && cut->object != full->object) ++smaller;
  }
  void check_pod(const json& pod, const std::string& where) {
    check(json{{"type", "MODIFIED"}, {"object", pod}}.dump(), where);
  }
};

json owner() {
  return {{"apiVersion", "depl.dev/v1alpha1"},
          {"kind", "DependableTrainingJob"},
          {"name", "job"},
          {"uid", "job-uid"},
          {"controller", true}};
}

// Pods as the other tests write them (pod_cache_test, job_decision_test, the informer bench).
std::vector<json> test_pods() {
  json other = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", "web-1"},
                  {"namespace", "team-a"},
                  {"uid", "uid-web-1"},
                  {"resourceVersion", "42"},
                  {"creationTimestamp", "2026-11-22T05:00:00Z"},
                  {"labels", {{"app", "web"}}},
                  {"annotations", {{"kubectl.kubernetes.io/restartedAt", "2026-11-22T05:00:00Z"}}},
                  {"ownerReferences", json::array({{{"apiVersion", "apps/v1"},
                                                    {"kind", "ReplicaSet"},
                                                    {"name", "web-abc"},
                                                    {"uid", "rs-uid"},
                                                    {"controller", true}}})}}},
                {"spec",
                 {{"nodeName", "n1"},
                  {"containers",
                   json::array({{{"name", "main"},
                                 {"image", "registry.example.com/web:1"},
                                 {"env", json::array({{{"name", "A"}, {"value", "1"}}})},
                                 {"resources",
                                  {{"requests", {{"cpu", "500m"}, {"memory", "1Gi"}}},
                                   {"limits", {{"cpu", "1"}, {"nvidia.com/gpu", "2"}}}}}},
                                {{"name", "sidecar"}, {"image", "registry.example.com/proxy:2"}}})},
                  {"volumes", json::array({{{"name", "data"}, {"emptyDir", json::object()}}})}}},
                {"status",
                 {{"phase", "Running"},
                  {"podIP", "10.0.0.7"},
                  {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  json worker = other;
  worker["metadata"]["ownerReferences"] = json::array({owner()});
  worker["metadata"]["deletionTimestamp"] = "2026-11-22T06:00:00Z";
  worker["spec"]["containers"][0]["env"] =
      json::array({{{"name", "DEPL_JOB"}, {"value", "job"}},
                   {{"name", "DEPL_MODEL"}, {"value", "small"}},
                   {{"name", "DEPL_LOSS_PROFILE"}, {"value", "{\"initialLoss\": 2.3}"}}});
  worker["status"]["containerStatuses"] = json::array(
      {{{"name", "main"},
        {"image", "registry.example.com/web:1"},
        {"state", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}, {"startedAt", "x"}}}}}}});
  worker["status"]["reason"] = "Evicted";
  worker["status"]["conditions"].push_back({{"type", "DisruptionTarget"},
                                            {"status", "True"},
                                            {"reason", "EvictionByEvictionAPI"},
                                            {"message", "evicted"},
                                            {"lastProbeTime", nullptr},
                                            {"lastTransitionTime", "2026-11-22T06:00:00Z"}});
  json small = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", "worker-1"},
                  {"namespace", "team-1"},
                  {"resourceVersion", "1001"},
                  {"labels", {{"app", "trainer"}}},
                  {"ownerReferences", json::array({owner()})}}},
                {"spec", {{"nodeName", "node-1"}}},
                {"status", {{"phase", "Running"}}}};
  return {other, worker, small};
}

// Worker pods from the controller's own builder, with the statuses a kubelet gives them.
std::vector<json> built_worker_pods() {
  json job = {
      {"apiVersion", "depl.dev/v1alpha1"},
      {"kind", "DependableTrainingJob"},
      {"metadata", {{"name", "mnist"}, {"namespace", "ml"}, {"uid", "u-1"}}},
      {"spec",
       {{"datasets", json::array({{{"name", "a"}, {"source", {{"pvc", "data-a"}}}},
                                  {{"name", "b"}, {"source", {{"uri", "s3://b"}}}}})},
        {"models", json::array({{{"name", "full"},
                                 {"resources", {{"limits", {{"cpu", "2"}}}}},
                                 {"env", json::array({{{"name", "X"}, {"value", "1"}}})}}})},
        {"checkpoint", {{"pvc", "ckpt"}, {"path", "/ckpt"}}},
        {"podTemplate",
         {{"serviceAccountName", "trainer"},
          {"nodeSelector", {{"zone", "z1"}}},
          {"tolerations", json::array({{{"key", "spot"}, {"operator", "Exists"}}})}}}}}};
  solver::Problem problem;
  problem.datasets = {{"a", 100, 1, 0, {}}, {"b", 100, 1, 0, {}}};
  solver::ModelVariant model{"full", "registry/full:1", 1, 1e6, 2, {}};
  model.loss = {2, 0.1, 0.5, 0.01, 200, 0};
  problem.models = {model};
  problem.pools = {{"a100", "A100", 8, 1000, 3, 1e9, 1e8, 0, {}, 0, 0}};
  solver::Plan plan = {{0, 1}, {{0, 5, 0, 4}}};
  PhaseLaunch launch;
  launch.job = &job;
  launch.problem = &problem;
  launch.plan = &plan;
  launch.epochs = 5;
  launch.progress_url = "http://127.0.0.1:8081";
  std::vector<json> pods;
  for (int rank = 0; rank < 4; ++rank) {
    json pod = build_worker_pod(launch, rank);
    pod["metadata"]["uid"] = "pod-uid-" + std::to_string(rank);
    pod["metadata"]["resourceVersion"] = std::to_string(100 + rank);
    pods.push_back(pod);  // as created: no node, no status
    pod["spec"]["nodeName"] = "node-" + std::to_string(rank);
    pod["status"] = {
        {"phase", rank == 3 ? "Failed" : "Running"},
        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})},
        {"podIP", "10.0.0.1"},
        {"containerStatuses",
         json::array({{{"name", "worker"},
                       {"ready", rank != 3},
                       {"restartCount", 0},
                       {"state", rank == 3 ? json{{"terminated",
                                                   {{"exitCode", 137},
                                                    {"reason", "OOMKilled"},
                                                    {"finishedAt", "2026-11-22T06:00:00Z"}}}}
                                           : json{{"running", {{"startedAt", "x"}}}}}}})}};
    pod["metadata"]["managedFields"] =
        json::array({{{"manager", "kubelet"}, {"fieldsV1", {{"f:status", json::object()}}}}});
    pods.push_back(pod);
  }
  return pods;
}

// Seeded random variations: members removed, values of another type, members added with the
// names trim_cached_pod looks for, at any depth.
class PodMutator {
 public:
  explicit PodMutator(std::uint64_t seed) : random_(seed) {}

  json mutate(json pod) {
    for (auto n = random_.uniform_int(1, 6); n > 0; --n) {
      std::vector<json*> nodes;
      collect(pod, nodes);
      json& at = *nodes[static_cast<std::size_t>(random_.uniform_int(0, nodes.size() - 1))];
      switch (random_.uniform_int(0, 4)) {
        case 0:  // remove a member or an element
          if (at.is_object() && !at.empty()) {
            auto it = at.begin();
            std::advance(it, random_.uniform_int(0, at.size() - 1));
            at.erase(it.key());
          } else if (at.is_array() && !at.empty()) {
            at.erase(static_cast<std::size_t>(random_.uniform_int(0, at.size() - 1)));
          }
          break;
        case 1:  // replace with a value of any type
          at = value(2);
          break;
        case 2:
        case 3:  // add a member
          if (at.is_object()) {
            at[name()] = value(2);
          } else if (at.is_array()) {
            at.push_back(value(2));
          }
          break;
        default:  // wrap in an array
          at = json::array({at});
      }
    }
    return pod;
  }

 private:
  static void collect(json& node, std::vector<json*>& out) {
    out.push_back(&node);
    if (node.is_structured()) {
      for (auto& child : node) collect(child, out);
    }
  }
  std::string name() {
    static const char* kNames[] = {"apiVersion",
                                   "kind",
                                   "metadata",
                                   "name",
                                   "namespace",
                                   "uid",
                                   "labels",
                                   "ownerReferences",
                                   "controller",
                                   "deletionTimestamp",
                                   "spec",
                                   "nodeName",
                                   "containers",
                                   "resources",
                                   "requests",
                                   "limits",
                                   "env",
                                   "value",
                                   "status",
                                   "phase",
                                   "nvidia.com/gpu",
                                   "containerStatuses",
                                   "state",
                                   "terminated",
                                   "exitCode",
                                   "reason",
                                   "DEPL_MODEL",
                                   "other"};
    return kNames[random_.uniform_int(0, std::size(kNames) - 1)];
  }
  json value(int depth) {
    switch (random_.uniform_int(0, depth > 0 ? 7 : 4)) {
      case 0:
        return nullptr;
      case 1:
        return random_.uniform_int(0, 1) == 1;
      case 2:
        return random_.uniform_int(-3, 9);
      case 3:
        return name();
      case 4:
        return "DEPL_MODEL";
      case 5:
        return json::array({value(depth - 1), value(depth - 1)});
      case 6:
        return owner();
      default: {
        json object = json::object();
        for (auto n = random_.uniform_int(0, 3); n > 0; --n) object[name()] = value(depth - 1);
        return object;
      }
    }
  }
  RandomSource random_;
};

TEST(PodCachePrefilter, TrimmingAPrefilteredPodIsTrimmingTheWholePod) {
  Checker checker;
  // The watch-stream fuzz corpus: "<n> <n chunk lengths> <body>", a line per event.
  const std::filesystem::path corpus =
      std::filesystem::path(DEPL_SOURCE_DIR) / "fuzz" / "corpus" / "watch_stream";
  int corpus_lines = 0;
  for (const auto& file : std::filesystem::directory_iterator(corpus)) {
    std::ifstream in(file.path(), std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.empty()) continue;
    const std::size_t skip = 1 + static_cast<unsigned char>(data[0]) % 8;
    if (data.size() < skip) continue;
    std::istringstream body(data.substr(skip));
    for (std::string line; std::getline(body, line);) {
      checker.check(line, file.path().filename().string());
      ++corpus_lines;
    }
  }
  EXPECT_GE(corpus_lines, 10);

  std::vector<json> pods = test_pods();
  for (json& pod : built_worker_pods()) pods.push_back(std::move(pod));
  for (std::size_t i = 0; i < pods.size(); ++i)
    checker.check_pod(pods[i], "pod " + std::to_string(i));
  for (std::uint64_t seed = 1; seed <= 4000; ++seed) {
    PodMutator mutator(seed);
    const json& base = pods[seed % pods.size()];
    checker.check_pod(mutator.mutate(base), "seed " + std::to_string(seed));
  }
  EXPECT_EQ(checker.different, 0) << "of " << checker.checked;
  // The filter did leave things out of most of them, so the comparison says something.
  EXPECT_GT(checker.smaller, checker.checked / 2);
}

}  // namespace
}  // namespace depl::controller
