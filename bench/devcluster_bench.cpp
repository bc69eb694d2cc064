// depl-devcluster-bench: 10,000 pods, 50 HTTP watchers, sustained status writes; reports
// watch events delivered per second (summed over watchers) and the process's resident memory.
// A report, not a timed test. Usage: depl-devcluster-bench [pods] [watchers] [seconds]
//
// `depl-devcluster-bench writes [pods] [rounds] [batch]`: the store's write path alone (no HTTP),
// as the scale benchmark drives it: worker pods created, bound (pods/binding), given their status
// by the kubelet's merge patch on /status and annotated by a controller's strategic merge patch,
// next to `pods` (2,000) resident pods and two open pod watches. Each round writes `batch` (500)
// pods through every step and deletes them; reports the median ns per write of each step.
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "depl/devcluster/api_store.hpp"
#include "depl/devcluster/dev_cluster.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using json = nlohmann::json;
using depl::devcluster::ResourceRef;

namespace {

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// Reads one watch stream and counts the newline-terminated events until `stop`.
void watch_and_count(std::uint16_t port, const std::string& rv, std::atomic<bool>& stop,
                     std::atomic<long>& events, std::atomic<int>& ready) {
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> req{http::verb::get, "/api/v1/pods?watch=1&resourceVersion=" + rv,
                                      11};
  req.set(http::field::host, "127.0.0.1");
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read_header(stream, buffer, parser);
  ++ready;
  std::size_t scanned = 0;
  while (!stop) {
    stream.expires_after(std::chrono::seconds(2));
    beast::error_code ec;
    http::read_some(stream, buffer, parser, ec);
    std::string& body = parser.get().body();
    long n = 0;
    for (std::size_t i = scanned; i < body.size(); ++i) n += body[i] == '\n';
    events += n;
    body.clear();  // keep memory flat; only counts matter
    scanned = 0;
    if (ec) break;
  }
}

// A worker pod as the controller builds it (controller/src/worker_pods.cpp), written out. Its
// owner is a ConfigMap standing in for the job (the store has no CRDs here): without a live owner
// the garbage collector would delete the pod as soon as it is created.
json worker_pod(const std::string& name, const std::string& owner, const std::string& owner_uid) {
  static const json base = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
      "namespace": "default",
      "labels": {"app.kubernetes.io/managed-by": "depl", "depl.dev/job": "job-17",
                 "depl.dev/phase": "0", "depl.dev/rank": "3"},
      "annotations": {"depl.dev/pool": "a100", "depl.dev/epochs": "12",
                      "depl.dev/start-epoch": "0"},
      "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                           "controller": true, "blockOwnerDeletion": true}]},
    "spec": {
      "restartPolicy": "Never", "hostname": "job-17-p0-w3", "subdomain": "job-17-p0",
      "nodeSelector": {"depl.dev/pool": "a100"},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
      "containers": [{
        "name": "worker", "image": "registry.example/depl/worker:1.4.2",
        "env": [
          {"name": "DEPL_JOB", "value": "job-17"}, {"name": "DEPL_NAMESPACE", "value": "default"},
          {"name": "DEPL_PHASE", "value": "0"}, {"name": "DEPL_MODEL", "value": "resnet"},
          {"name": "DEPL_EPOCHS", "value": "12"}, {"name": "DEPL_START_EPOCH", "value": "0"},
          {"name": "DEPL_DATASETS", "value": "imagenet,extra"},
          {"name": "DEPL_CHECKPOINT_DIR", "value": "/checkpoints/default/job-17"},
          {"name": "DEPL_PROGRESS_URL",
           "value": "http://depl-controller:8080/v1/namespaces/default/jobs/job-17/progress"},
          {"name": "DEPL_PROGRESS_TOKEN",
           "valueFrom": {"secretKeyRef": {"name": "job-17-progress-token", "key": "token"}}},
          {"name": "DEPL_LOSS_PROFILE", "value": "{\"initialLoss\":2.3,\"floorLoss\":0.1}"},
          {"name": "WORLD_SIZE", "value": "8"}, {"name": "RANK", "value": "3"},
          {"name": "MASTER_ADDR", "value": "job-17-p0-w0.job-17-p0.default.svc"},
          {"name": "MASTER_PORT", "value": "29517"},
          {"name": "DEPL_DATASET_URIS", "value": "imagenet=s3://datasets/imagenet"}],
        "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "8Gi"},
                      "requests": {"nvidia.com/gpu": "1", "cpu": "2", "memory": "8Gi"}},
        "ports": [{"name": "rendezvous", "containerPort": 29517}],
        "volumeMounts": [{"name": "data-0", "mountPath": "/data/imagenet", "readOnly": true},
                         {"name": "checkpoint", "mountPath": "/checkpoints"}]}],
      "volumes": [
        {"name": "data-0", "persistentVolumeClaim": {"claimName": "imagenet", "readOnly": true}},
        {"name": "checkpoint", "persistentVolumeClaim": {"claimName": "checkpoints"}}]}})");
  json pod = base;
  pod["metadata"]["name"] = name;
  pod["metadata"]["ownerReferences"][0]["name"] = owner;
  pod["metadata"]["ownerReferences"][0]["uid"] = owner_uid;
  return pod;
}

// The kubelet's status of a running worker (devcluster/src/sim/kubelet.cpp), as a merge patch.
std::string running_status(const std::string& name, int tick) {
  const std::string started = "2026-01-01T00:00:" + std::to_string(10 + tick % 50) + "Z";
  json condition = {
      {"status", "True"}, {"lastProbeTime", nullptr}, {"lastTransitionTime", started}};
  json conditions = json::array();
  for (const char* type : {"PodScheduled", "Initialized", "ContainersReady", "Ready"}) {
    condition["type"] = type;
    conditions.push_back(condition);
  }
  json status = {{"phase", "Running"},
                 {"conditions", conditions},
                 {"hostIP", "127.0.0.1"},
                 {"hostIPs", json::array({{{"ip", "127.0.0.1"}}})},
                 {"podIP", "10.244.0.7"},
                 {"podIPs", json::array({{{"ip", "10.244.0.7"}}})},
                 {"startTime", started},
                 {"qosClass", "BestEffort"},
                 {"containerStatuses",
                  json::array({{{"name", "worker"},
                                {"image", "registry.example/depl/worker:1.4.2"},
                                {"imageID", "simulated://registry.example/depl/worker:1.4.2"},
                                {"ready", true},
                                {"started", true},
                                {"restartCount", 0},
                                {"state", {{"running", {{"startedAt", started}}}}},
                                {"lastState", json::object()},
                                {"containerID", "depl://" + name + "/worker"}}})}};
  return json{{"status", std::move(status)}}.dump();
}

// The store's write path: see the usage at the top.
int write_bench(int resident, int rounds, int batch) {
  using depl::devcluster::ApiStore;
  using depl::devcluster::PatchType;
  using depl::devcluster::WriteOptions;
  ApiStore store;
  const auto writer = [](const char* manager, const char* user_agent) {
    WriteOptions options;
    options.field_manager = manager;
    options.user_agent = user_agent;
    return options;
  };
  const WriteOptions controller = writer("depl-controller", "depl-controller/v0");
  const WriteOptions scheduler = writer("depl-scheduler", "depl-devcluster/scheduler");
  const WriteOptions kubelet = writer("depl-kubelet", "depl-devcluster/kubelet");
  auto pod_ref = [](const std::string& name, const std::string& sub = "") {
    return ResourceRef{"", "v1", "pods", "default", name, sub};
  };
  // Jobs of 8 workers each: the garbage collector looks at a new pod's siblings.
  std::vector<std::pair<std::string, std::string>> jobs;  // name, uid
  for (int j = 0; j < (resident + 7) / 8; ++j) {
    const std::string job = "job-" + std::to_string(j);
    const json owner = store
                           .create(ResourceRef{"", "v1", "configmaps", "default", "", ""},
                                   {{"metadata", {{"name", job}}}}, controller)
                           .body;
    jobs.emplace_back(job, owner["metadata"]["uid"]);
  }
  auto pod_of_job = [&](const std::string& name, int i) {
    const auto& [job, uid] = jobs[static_cast<std::size_t>(i / 8) % jobs.size()];
    return worker_pod(name, job, uid);
  };
  for (int i = 0; i < resident; ++i) {
    store.create(pod_ref(""), pod_of_job("resident-" + std::to_string(i), i), controller);
  }
  std::vector<std::shared_ptr<depl::devcluster::WatchSubscription>> watches;
  for (int w = 0; w < 2; ++w) {
    depl::devcluster::WatchOptions options;
    options.resource_version = store.resource_version();
    watches.push_back(*store.watch(pod_ref(""), options));
  }
  auto drain = [&] {
    for (auto& w : watches) w->drain();
  };
  const std::vector<std::string> steps = {"create", "bind", "status-merge-patch",
                                          "strategic-patch"};
  std::map<std::string, std::vector<double>> ns_per_write;
  long failures = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::string> names;
    for (int i = 0; i < batch; ++i) {
      names.push_back("worker-" + std::to_string(round) + "-" + std::to_string(i));
    }
    std::vector<json> pods;
    std::vector<json> bindings;
    std::vector<std::string> statuses;
    std::vector<std::string> annotations;
    for (int i = 0; i < batch; ++i) {
      pods.push_back(pod_of_job(names[i], i));
      bindings.push_back({{"apiVersion", "v1"},
                          {"kind", "Binding"},
                          {"metadata", {{"name", names[i]}, {"namespace", "default"}}},
                          {"target", {{"kind", "Node"}, {"name", "node-" + std::to_string(i)}}}});
      statuses.push_back(running_status(names[i], round + i));
      annotations.push_back(
          json{{"metadata", {{"annotations", {{"depl.dev/progress", std::to_string(i)}}}}}}.dump());
    }
    auto timed = [&](const std::string& step, auto&& write) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < batch; ++i) {
        const depl::devcluster::ApiResult result = write(i);
        if (!result.ok() && failures++ == 0) {
          std::fprintf(stderr, "%s failed: %s\n", step.c_str(), result.body.dump().c_str());
        }
      }
      const double ns =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
              .count();
      ns_per_write[step].push_back(ns / batch);
      drain();
    };
    timed("create",
          [&](int i) { return store.create(pod_ref(""), std::move(pods[i]), controller); });
    timed("bind", [&](int i) {
      return store.create(pod_ref(names[i], "binding"), std::move(bindings[i]), scheduler);
    });
    timed("status-merge-patch", [&](int i) {
      return store.patch(pod_ref(names[i], "status"), PatchType::Merge, statuses[i], kubelet);
    });
    timed("strategic-patch", [&](int i) {
      return store.patch(pod_ref(names[i]), PatchType::Strategic, annotations[i], controller);
    });
    for (const auto& name : names) store.remove(pod_ref(name));
    drain();
  }
  std::printf("resident_pods=%d watches=%zu rounds=%d batch=%d failures=%ld\n", resident,
              watches.size(), rounds, batch, failures);
  for (const auto& step : steps) {
    std::vector<double>& samples = ns_per_write[step];
    std::sort(samples.begin(), samples.end());
    std::printf("%-20s median %8.0f ns/write  (min %8.0f, max %8.0f)\n", step.c_str(),
                samples[samples.size() / 2], samples.front(), samples.back());
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "writes") {
    return write_bench(argc > 2 ? std::atoi(argv[2]) : 2000, argc > 3 ? std::atoi(argv[3]) : 7,
                       argc > 4 ? std::atoi(argv[4]) : 500);
  }
  const int pods = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int watchers = argc > 2 ? std::atoi(argv[2]) : 50;
  const int seconds = argc > 3 ? std::atoi(argv[3]) : 10;
  depl::devcluster::DevClusterOptions options;
  options.run_kubelet = false;  // the API server alone: pods stay Pending and unbound
  options.run_scheduler = false;
  options.insecure_http = true;  // the watchers speak plain HTTP
  auto cluster = depl::devcluster::DevCluster::start(options);
  if (!cluster) {
    std::fprintf(stderr, "error: %s\n", cluster.error().message.c_str());
    return 1;
  }
  auto& store = (*cluster)->store();
  for (int i = 0; i < pods; ++i) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "p" + std::to_string(i)}, {"labels", {{"app", "bench"}}}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "sim"}}}}}}};
    store.create(ResourceRef{"", "v1", "pods", "default", "", ""}, pod);
  }
  const std::string rv = store.resource_version();
  std::atomic<bool> stop{false};
  std::atomic<long> events{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < watchers; ++w) {
    threads.emplace_back(watch_and_count, (*cluster)->port(), rv, std::ref(stop), std::ref(events),
                         std::ref(ready));
  }
  while (ready < watchers) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::seconds(seconds);
  long writes = 0;
  while (std::chrono::steady_clock::now() < end) {
    const int i = static_cast<int>(writes % pods);
    json status = {
        {"status", {{"phase", "Pending"}, {"message", "tick " + std::to_string(writes)}}}};
    store.patch(ResourceRef{"", "v1", "pods", "default", "p" + std::to_string(i), "status"},
                depl::devcluster::PatchType::Merge, status.dump());
    ++writes;
  }
  const double write_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long delivered_at_end = events.load();
  const long expected = writes * watchers;
  // Let the watchers drain what was written (bounded).
  const auto drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (events < expected && std::chrono::steady_clock::now() < drain_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long rss = rss_kib();
  stop = true;
  (*cluster)->drop_watches();
  for (auto& t : threads) t.join();
  std::printf("pods=%d watchers=%d writes=%ld write_seconds=%.2f writes_per_s=%.0f\n", pods,
              watchers, writes, write_seconds, writes / write_seconds);
  std::printf("events_delivered=%ld of %ld in %.2f s: %.0f events/s (during writes: %.0f/s)\n",
              events.load(), expected, total_seconds, events.load() / total_seconds,
              delivered_at_end / write_seconds);
  std::printf("rss_mib=%.1f\n", rss / 1024.0);
  return 0;
}
