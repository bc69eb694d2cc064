// depl-scale-bench: the operator against a big simulated cluster. An
// in-process dev cluster with N nodes in P pools and simulated containers (no processes), the
// real depl-controller binary as a child process (so its memory and CPU are its own), J jobs
// applied at once, each with a seeded worker count. Measures, from the API server's own watch:
// time until every job is planned, job-creation-to-first-pod latency, reconciles per second
// (the controller's /metrics), and the controller's peak RSS and CPU seconds. Optionally
// pre-creates unrelated running pods that the controller's pod informer caches. A report, not a
// timed test; docs/benchmarks.md ("Scale") has the figures and the command.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "depl/common/json_fields.hpp"
#include "depl/common/subprocess.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/devcluster/dev_cluster.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using depl::json_string;
using depl::Redirect;
using depl::SpawnOptions;
using depl::Subprocess;
using depl::devcluster::ResourceRef;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

struct Options {
  int nodes = 200;
  int pools = 10;
  int gpus_per_node = 8;
  int jobs = 1000;
  int min_workers = 2;
  int max_workers = 8;
  int cached_pods = 0;
  std::uint64_t seed = 1;
  int repeat = 1;
  double timeout_seconds = 600;
  double idle_seconds = 5;
  int trickle = 0;
  double trickle_interval = 1;
  std::string controller;
  std::vector<std::string> controller_args;
  std::string log_dir;
  std::string timeline;     // per-job times of the burst, CSV; "" = none
  std::string metrics_out;  // the controller's /metrics at rest; "" = none
};

const ResourceRef kJobs{"depl.dev", "v1alpha1", "dependabletrainingjobs", "", "", ""};
const ResourceRef kPods{"", "v1", "pods", "", "", ""};
constexpr int kNamespaces = 10;  // the unrelated pods are spread over these (plus "default")

// ---- the cluster and the jobs ------------------------------------------------------------

// P pools of N/P nodes each; the figures differ between pools (GPU speed, price, network) so
// the solver has a real choice, and every pool is annotated like the dev cluster's own pools.
std::string pools_yaml(const Options& o) {
  static const char* kTypes[] = {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-L4",
                                 "NVIDIA-T4", "NVIDIA-A10G"};
  static const double kGflops[] = {120000, 250000, 60000, 30000, 45000};
  static const double kPrice[] = {2.5, 4.5, 0.8, 0.35, 1.0};
  std::string out = "pools:\n";
  for (int p = 0; p < o.pools; ++p) {
    const int nodes = o.nodes / o.pools + (p < o.nodes % o.pools ? 1 : 0);
    if (nodes == 0) continue;
    const int t = p % 5;
    out += fmt::format(
        "  - name: pool-{}\n    gpuType: {}\n    nodes: {}\n    gpusPerNode: {}\n"
        "    gpuGflops: {}\n    pricePerGpuHour: {}\n    bandwidthBytesPerSecond: {}G\n"
        "    storageBandwidthBytesPerSecond: 1G\n    startupSeconds: {}\n",
        p, kTypes[t], nodes, o.gpus_per_node, kGflops[t] * (1.0 + 0.02 * p),
        kPrice[t] * (1.0 + 0.03 * p), 12.5 / (1 + p % 3), 60 + 10 * (p % 4));
  }
  return out;
}

// The end-to-end tests' job shape (train a cheap variant, maybe switch to the full one) with a
// fixed worker count: training.workers min = max = `workers`.
json job_object(int index, int workers) {
  json job = {{"apiVersion", "depl.dev/v1alpha1"},
              {"kind", "DependableTrainingJob"},
              {"metadata", {{"name", fmt::format("job-{:04d}", index)}, {"namespace", "default"}}},
              {"spec",
               {{"target", {{"loss", 0.45}, {"probability", 0.9}}},
                {"datasets", json::array({{{"name", "curated"},
                                           {"samples", 200000},
                                           {"quality", 1.0},
                                           {"sizeBytes", "20Gi"}}})},
                {"models", json::array({{{"name", "full"},
                                         {"image", "registry.example.com/full:1"},
                                         {"computePerSampleGflop", 36},
                                         {"parameterBytes", "344M"},
                                         {"lossProfile",
                                          {{"initialLoss", 2.3},
                                           {"floorLoss", 0.25},
                                           {"decayPerEpoch", 0.85},
                                           {"noiseStddev", 0.002}}}},
                                        {{"name", "small"},
                                         {"image", "registry.example.com/small:1"},
                                         {"computePerSampleGflop", 9},
                                         {"parameterBytes", "86M"},
                                         {"lossProfile",
                                          {{"initialLoss", 2.3},
                                           {"floorLoss", 0.6},
                                           {"decayPerEpoch", 0.8},
                                           {"noiseStddev", 0.002}}}}})},
                {"switching", json::array({{{"from", "small"},
                                            {"to", "full"},
                                            {"lossJump", {{"mean", 0.05}, {"stddev", 0.002}}},
                                            {"overheadSeconds", 90}}})},
                {"training",
                 {{"batchSize", 256},
                  {"maxEpochs", 60},
                  {"maxSwitches", 1},
                  {"workers", {{"min", workers}, {"max", workers}}}}}}}};
  return job;
}

// An unrelated pod as a busy cluster has them: a web or batch workload's replica, no GPU, bound
// to a node, in the jobs' namespace or a team namespace. The controller watches pods in every
// namespace without a selector (it must see every GPU in use), so each of these is cached.
json background_pod(int index, const std::string& node) {
  const std::string ns = index % (kNamespaces + 1) == 0
                             ? "default"
                             : fmt::format("team-{}", index % (kNamespaces + 1) - 1);
  const std::string app = fmt::format("app-{}", index % 97);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", fmt::format("{}-{:05d}", app, index)},
            {"namespace", ns},
            {"labels", {{"app", app}, {"pod-template-hash", "5d8f7c9b6"}, {"bench", "cached"}}}}},
          {"spec",
           {{"nodeName", node},
            {"restartPolicy", "Always"},
            {"containers",
             json::array({{{"name", "main"},
                           {"image", "registry.example.com/" + app + ":1.4.2"},
                           {"args", json::array({"--port=8080", "--log-level=info"})},
                           {"ports", json::array({{{"containerPort", 8080}, {"protocol", "TCP"}}})},
                           {"resources",
                            {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}},
                             {"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}}}}}})}}}};
}

// ---- the controller process ---------------------------------------------------------------

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// GET http://127.0.0.1:<port><target>; the status code and body, code 0 when unreachable.
std::pair<int, std::string> http_get(std::uint16_t port, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {0, ""};
  }
  const std::string request =
      "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    ::close(fd);
    return {0, ""};
  }
  std::string response;
  char buffer[65536];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, n);
  ::close(fd);
  const auto space = response.find(' ');
  const auto body = response.find("\r\n\r\n");
  if (space == std::string::npos || body == std::string::npos) return {0, ""};
  return {std::atoi(response.c_str() + space + 1), response.substr(body + 4)};
}

// Sum of every sample of metric family `name` (all label sets) in a Prometheus text body.
double metric_sum(const std::string& body, const std::string& name) {
  double sum = 0;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    const auto space = line.rfind(' ');
    if (space != std::string::npos) sum += std::atof(line.c_str() + space + 1);
  }
  return sum;
}

struct ProcessSample {
  double cpu_seconds = 0;  // user + system
  long rss_kib = 0;
  long hwm_kib = 0;  // peak RSS so far
};

ProcessSample sample_process(pid_t pid) {
  ProcessSample s;
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = std::stol(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_kib = std::stol(line.substr(6));
  }
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    // Fields after the command: state(3) ... utime(14) stime(15).
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14) utime = std::atof(field.c_str());
      if (i == 15) stime = std::atof(field.c_str());
    }
    s.cpu_seconds = (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return s;
}

class ControllerProcess {
 public:
  ControllerProcess(const Options& o, const std::string& kubeconfig, const fs::path& work,
                    const std::string& log_path)
      : metrics_port_(free_port()), health_port_(free_port()) {
    std::vector<std::string> args = {o.controller,
                                     "--kubeconfig",
                                     kubeconfig,
                                     "--metrics-addr",
                                     fmt::format("127.0.0.1:{}", metrics_port_),
                                     "--health-addr",
                                     fmt::format("127.0.0.1:{}", health_port_),
                                     "--progress-addr",
                                     fmt::format("127.0.0.1:{}", free_port()),
                                     "--rendezvous",
                                     "loopback",
                                     "--catalog-namespace",
                                     "kube-system",
                                     "--checkpoint-root",
                                     (work / "checkpoints").string()};
    for (const auto& a : o.controller_args) args.push_back(a);
    SpawnOptions options;
    options.argv = std::move(args);
    options.stdin_from = Redirect::inherit();
    options.stdout_to = Redirect::file(log_path, /*append=*/false);
    options.stderr_to = Redirect::to_stdout();
    auto child = Subprocess::spawn(options);
    if (child) {
      child_.emplace(std::move(*child));
    } else {
      spdlog::error("{}", child.error().message);
    }
  }
  ~ControllerProcess() {
    if (child_ && !child_->reaped()) stop();
  }

  bool started() const { return child_.has_value(); }
  pid_t pid() const { return child_ ? child_->pid() : -1; }
  std::uint16_t metrics_port() const { return metrics_port_; }

  // Waits until /readyz answers 200 (the informer caches have synced).
  bool wait_ready(Seconds timeout) {
    const auto until = Clock::now() + timeout;
    while (child_ && Clock::now() < until) {
      if (child_->try_wait()) return false;
      if (http_get(health_port_, "/readyz").first == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string metrics() const { return http_get(metrics_port_, "/metrics").second; }

  // SIGTERM, then the child's CPU seconds (user + system) once it has ended.
  ProcessSample stop() {
    ProcessSample s;
    if (!child_) return s;
    child_->signal(SIGTERM);
    s.cpu_seconds = child_->wait().cpu_seconds;
    return s;
  }

 private:
  std::optional<Subprocess> child_;
  std::uint16_t metrics_port_;
  std::uint16_t health_port_;
};

// ---- what the API server saw ---------------------------------------------------------------

// Follows the store's own watch streams for jobs and pods (in-process subscriptions; each event
// carries the time the store queued it, so it is stamped when the API server emitted it, not
// when the observer gets to it) and remembers, per job, when it was created, when its status
// first carried a Planned condition, and when its first pod was created. It drains both streams
// every few milliseconds instead of waking for each event: a wake-up per event cost the burst
// ~4% of its CPU (system calls and context switches), taken from the system it measures.
class Observer {
 public:
  struct JobTimes {
    std::optional<Clock::time_point> created, planned, first_pod;
    bool feasible = false;  // Planned=True (a plan); False: decided that it cannot run now
  };

  explicit Observer(depl::devcluster::ApiStore& store) {
    auto jobs = store.watch(kJobs, {});
    auto pods = store.watch(kPods, {});
    if (jobs) jobs_watch_ = *jobs;
    if (pods) pods_watch_ = *pods;
    if (ok()) thread_ = std::jthread([this](std::stop_token stop) { follow(stop); });
  }
  ~Observer() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
    if (jobs_watch_) jobs_watch_->close();
    if (pods_watch_) pods_watch_->close();
  }
  bool ok() const { return jobs_watch_ && pods_watch_; }

  std::map<std::string, JobTimes> jobs() const {
    std::lock_guard lock(mutex_);
    return jobs_;
  }
  int planned() const { return planned_.load(); }
  int with_pods() const { return with_pods_.load(); }
  int feasible() const { return feasible_.load(); }
  std::optional<Clock::time_point> last_planned() const {
    std::lock_guard lock(mutex_);
    return last_planned_;
  }
  std::optional<Clock::time_point> last_first_pod() const {
    std::lock_guard lock(mutex_);
    return last_first_pod_;
  }

 private:
  void follow(std::stop_token stop) {
    while (!stop.stop_requested()) {
      // Jobs first: a job's creation is queued before any of its pods.
      const auto jobs = jobs_watch_->drain();
      const auto pods = pods_watch_->drain();
      {
        std::lock_guard lock(mutex_);
        for (const auto& event : jobs) on_job(event);
        for (const auto& event : pods) on_pod(event);
      }
      if (jobs_watch_->closed() && pods_watch_->closed()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  void on_job(const depl::devcluster::WatchEvent& event) {
    if (!event.object || event.type == "DELETED") return;
    const json& job = *event.object;
    const json& meta = job["metadata"];
    JobTimes& t = jobs_[json_string(meta, "name")];
    if (!t.created) t.created = event.queued;
    if (t.planned) return;
    const auto status = job.find("status");
    if (status == job.end() || !status->is_object()) return;
    const auto conditions = status->find("conditions");
    if (conditions == status->end() || !conditions->is_array()) return;
    for (const auto& c : *conditions) {
      if (!c.is_object() || json_string(c, "type") != "Planned") continue;
      t.planned = event.queued;
      t.feasible = json_string(c, "status") == "True";
      last_planned_ = event.queued;
      ++planned_;
      if (t.feasible) ++feasible_;
    }
  }

  void on_pod(const depl::devcluster::WatchEvent& event) {
    if (!event.object || event.type != "ADDED") return;
    const json& meta = (*event.object)["metadata"];
    const auto labels = meta.find("labels");
    if (labels == meta.end() || !labels->is_object()) return;
    const std::string job = json_string(*labels, "depl.dev/job");
    if (job.empty()) return;
    JobTimes& t = jobs_[job];
    if (t.first_pod) return;
    t.first_pod = event.queued;
    last_first_pod_ = event.queued;
    ++with_pods_;
  }

  std::shared_ptr<depl::devcluster::WatchSubscription> jobs_watch_, pods_watch_;
  mutable std::mutex mutex_;
  std::map<std::string, JobTimes> jobs_;
  std::optional<Clock::time_point> last_planned_, last_first_pod_;
  std::atomic<int> planned_{0}, with_pods_{0}, feasible_{0};
  std::jthread thread_;
};

// ---- one run --------------------------------------------------------------------------------

struct RunResult {
  bool complete = false;  // every job planned within the timeout
  int jobs = 0, planned = 0, feasible = 0, with_pods = 0;
  double apply_seconds = 0;        // creating the jobs through the store
  double all_planned_seconds = 0;  // first job created -> last job planned
  double first_pod_p50 = 0, first_pod_p90 = 0, first_pod_p99 = 0, first_pod_max = 0;
  double reconciles_planning = 0;  // during first create -> all planned
  double reconciles_per_second = 0;
  double reconciles_idle_per_second = 0;  // after everything settled
  double solver_seconds = 0;
  long controller_writes = 0;  // creates, updates, patches, deletes the API server applied
  // Every write the API server applied from the jobs' creation on, by writer (User-Agent
  // product), verb and resource: "depl-controller create pods".
  std::map<std::string, long> writes_by_kind;
  long rss_ready_kib = 0;   // caches synced, no job yet
  long peak_ready_kib = 0;  // peak RSS up to then (the initial lists)
  long rss_end_kib = 0;
  long peak_rss_kib = 0;                    // VmHWM before the stop
  double cpu_ready_seconds = 0;             // starting and syncing the caches
  double cpu_planning_seconds = 0;          // first create -> all planned
  double cluster_cpu_planning_seconds = 0;  // the dev cluster (this process), the same window
  double cpu_total_seconds = 0;             // the whole life, from wait4
  double setup_seconds = 0;                 // cluster, cached pods
  int trickle_planned = 0, trickle_with_pods = 0;  // jobs created one at a time afterwards
  double trickle_p50 = 0, trickle_p99 = 0, trickle_max = 0;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(rank);
  const auto hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<RunResult> run_once(const Options& o, int run) {
  RunResult r;
  r.jobs = o.jobs;
  const auto setup_start = Clock::now();
  depl::devcluster::DevClusterOptions cluster_options;
  cluster_options.pools_yaml = pools_yaml(o);
  // No image is mapped: every container is simulated (no process), and negative duration keeps
  // it Running until its pod is deleted.
  cluster_options.simulated_pod_duration = std::chrono::milliseconds(-1);
  // Plain HTTP, as the figures in docs/benchmarks.md were measured.
  cluster_options.insecure_http = true;
  auto started = depl::devcluster::DevCluster::start(cluster_options);
  if (!started) {
    std::fprintf(stderr, "error: dev cluster: %s\n", started.error().message.c_str());
    return std::nullopt;
  }
  auto& cluster = **started;
  auto& store = cluster.store();
  const fs::path work = fs::path(cluster.kubeconfig_path()).parent_path();

  const fs::path crd_file =
      fs::path(DEPL_SOURCE_DIR) / "crds" / "depl.dev_dependabletrainingjobs.yaml";
  auto crd = depl::yaml_to_json(read_text(crd_file), crd_file.string());
  if (!crd) {
    std::fprintf(stderr, "error: %s\n", crd.error().message.c_str());
    return std::nullopt;
  }
  auto crd_created = store.create(
      ResourceRef{"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""}, *crd);
  if (!crd_created.ok()) {
    std::fprintf(stderr, "error: CRD: %s\n", crd_created.body.dump().c_str());
    return std::nullopt;
  }

  if (o.cached_pods > 0) {
    for (int n = 0; n < kNamespaces; ++n) {
      store.create(ResourceRef{"", "v1", "namespaces", "", "", ""},
                   {{"apiVersion", "v1"},
                    {"kind", "Namespace"},
                    {"metadata", {{"name", fmt::format("team-{}", n)}}}});
    }
    auto nodes = store.list(ResourceRef{"", "v1", "nodes", "", "", ""});
    std::vector<std::string> node_names;
    for (const auto& n : nodes.body.value("items", json::array()))
      node_names.push_back(json_string(n["metadata"], "name"));
    for (int i = 0; i < o.cached_pods; ++i) {
      json pod = background_pod(i, node_names[static_cast<std::size_t>(i) % node_names.size()]);
      const std::string ns = pod["metadata"]["namespace"];
      auto created = store.create(ResourceRef{"", "v1", "pods", ns, "", ""}, pod);
      if (!created.ok()) {
        std::fprintf(stderr, "error: pod: %s\n", created.body.dump().c_str());
        return std::nullopt;
      }
    }
    // The kubelet starts them (simulated); wait until all run so the controller caches running
    // pods and the kubelet's status writes are over before the measurement.
    const auto until = Clock::now() + std::chrono::seconds(600);
    while (true) {
      depl::devcluster::ListOptions selection;
      selection.label_selector = "bench=cached";
      selection.field_selector = "status.phase=Running";
      auto running = store.list(kPods, selection);
      const auto count = running.body.value("items", json::array()).size();
      if (static_cast<int>(count) >= o.cached_pods) break;
      if (Clock::now() > until) {
        std::fprintf(stderr, "error: only %zu of %d cached pods run after 600 s\n", count,
                     o.cached_pods);
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  r.setup_seconds = Seconds(Clock::now() - setup_start).count();

  const fs::path log_dir = o.log_dir.empty() ? work : fs::path(o.log_dir);
  fs::create_directories(log_dir);
  const std::string log_path = (log_dir / fmt::format("controller-run{}.log", run)).string();
  ControllerProcess controller(o, cluster.kubeconfig_path(), work, log_path);
  if (!controller.started() || !controller.wait_ready(std::chrono::seconds(120))) {
    std::fprintf(stderr, "error: the controller did not become ready (log: %s)\n",
                 log_path.c_str());
    return std::nullopt;
  }
  const ProcessSample ready = sample_process(controller.pid());
  r.rss_ready_kib = ready.rss_kib;
  r.peak_ready_kib = ready.hwm_kib;
  r.cpu_ready_seconds = ready.cpu_seconds;

  // The controller's writes as the API server applied them (its User-Agent says who).
  std::atomic<long> controller_writes{0};
  std::mutex writes_mutex;
  std::map<std::string, long> writes_by_kind;
  std::atomic<Clock::rep> last_write{Clock::now().time_since_epoch().count()};
  store.set_write_recorder([&](const depl::devcluster::WriteRecord& w) {
    if (w.user_agent.rfind("depl-controller", 0) == 0) ++controller_writes;
    {
      const std::string writer = w.user_agent.substr(0, w.user_agent.find('/'));
      std::lock_guard lock(writes_mutex);
      ++writes_by_kind[(writer.empty() ? "(the bench)" : writer) + " " + w.verb + " " + w.plural +
                       (w.subresource.empty() ? "" : "/" + w.subresource)];
    }
    last_write = Clock::now().time_since_epoch().count();
  });
  Observer observer(store);
  if (!observer.ok()) {
    std::fprintf(stderr, "error: cannot watch the store\n");
    return std::nullopt;
  }
  const std::string metrics_before = controller.metrics();

  // Apply every job at once (one after the other through the store, as fast as it takes them).
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int> workers(o.min_workers, o.max_workers);
  std::vector<json> jobs;
  for (int i = 0; i < o.jobs; ++i) jobs.push_back(job_object(i, workers(rng)));
  const auto apply_start = Clock::now();
  const ProcessSample cluster_before = sample_process(::getpid());
  for (auto& job : jobs) {
    auto created = store.create(
        ResourceRef{"depl.dev", "v1alpha1", "dependabletrainingjobs", "default", "", ""},
        std::move(job));
    if (!created.ok()) {
      std::fprintf(stderr, "error: job: %s\n", created.body.dump().c_str());
      return std::nullopt;
    }
  }
  r.apply_seconds = Seconds(Clock::now() - apply_start).count();

  // Until every job is planned (or the timeout), with a progress line every 5 s on stderr.
  const auto deadline = apply_start + Seconds(o.timeout_seconds);
  auto last_report = Clock::now();
  while (observer.planned() < o.jobs && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (Clock::now() - last_report > std::chrono::seconds(5)) {
      last_report = Clock::now();
      const std::string m = controller.metrics();
      std::fprintf(stderr,
                   "  %5.0f s: %d/%d planned, %d with pods, controller RSS %ld MiB, %.0f "
                   "reconciles, work queue %.0f\n",
                   Seconds(Clock::now() - apply_start).count(), observer.planned(), o.jobs,
                   observer.with_pods(), sample_process(controller.pid()).rss_kib / 1024,
                   metric_sum(m, "depl_reconcile_total"), metric_sum(m, "depl_workqueue_depth"));
    }
  }
  const auto planning_end = Clock::now();
  const ProcessSample after_planning = sample_process(controller.pid());
  r.cluster_cpu_planning_seconds =
      sample_process(::getpid()).cpu_seconds - cluster_before.cpu_seconds;
  const std::string metrics_planned = controller.metrics();
  r.complete = observer.planned() >= o.jobs;
  r.planned = observer.planned();
  if (auto last = observer.last_planned())
    r.all_planned_seconds = Seconds(*last - apply_start).count();
  if (!r.complete) r.all_planned_seconds = Seconds(planning_end - apply_start).count();
  r.cpu_planning_seconds = after_planning.cpu_seconds - ready.cpu_seconds;
  const double planning_window = Seconds(planning_end - apply_start).count();
  r.reconciles_planning = metric_sum(metrics_planned, "depl_reconcile_total") -
                          metric_sum(metrics_before, "depl_reconcile_total");
  r.reconciles_per_second = r.reconciles_planning / planning_window;

  // Every job with a plan creates its pods; wait for the last first pod and for the cluster to
  // go quiet (no write for a second: the pods' binding and start are done; bounded), then watch
  // the controller idle for a while: the steady reconcile rate of a cluster at rest.
  while (observer.with_pods() < observer.feasible() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto quiet_deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() - Clock::time_point(Clock::duration(last_write.load())) <
             std::chrono::seconds(1) &&
         Clock::now() < quiet_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string metrics_settled = controller.metrics();
  const auto idle_start = Clock::now();
  std::this_thread::sleep_for(Seconds(o.idle_seconds));
  const std::string metrics_idle = controller.metrics();
  if (!o.metrics_out.empty()) {
    std::ofstream(o.repeat > 1 ? fmt::format("{}.run{}", o.metrics_out, run) : o.metrics_out)
        << metrics_idle;
  }
  r.reconciles_idle_per_second = (metric_sum(metrics_idle, "depl_reconcile_total") -
                                  metric_sum(metrics_settled, "depl_reconcile_total")) /
                                 Seconds(Clock::now() - idle_start).count();
  r.controller_writes = controller_writes.load();
  {
    std::lock_guard lock(writes_mutex);
    r.writes_by_kind = writes_by_kind;
  }
  const auto burst = observer.jobs();
  if (!o.timeline.empty()) {
    // One line per job: milliseconds from the first create to its creation, first plan (or
    // "cannot run now") and first pod as the API server saw them (-1: never), and whether it got
    // a plan. The shape of the burst: how far apart the placements come.
    const std::string path = o.repeat > 1 ? fmt::format("{}.run{}", o.timeline, run) : o.timeline;
    std::ofstream out(path);
    out << "job,created_ms,planned_ms,first_pod_ms,planned_to_run\n";
    for (const auto& [name, t] : burst) {
      auto ms = [&](const std::optional<Clock::time_point>& at) {
        return at ? std::chrono::duration<double, std::milli>(*at - apply_start).count() : -1.0;
      };
      out << fmt::format("{},{:.1f},{:.1f},{:.1f},{}\n", name, ms(t.created), ms(t.planned),
                         ms(t.first_pod), t.feasible ? 1 : 0);
    }
  }

  // Then jobs arriving one at a time into the loaded controller (every earlier job cached):
  // their latency is the controller's own, without a thousand jobs ahead in line.
  std::vector<std::string> trickled;
  for (int i = 0; i < o.trickle; ++i) {
    json job = job_object(o.jobs + i, workers(rng));
    trickled.push_back(job["metadata"]["name"]);
    auto created = store.create(
        ResourceRef{"depl.dev", "v1alpha1", "dependabletrainingjobs", "default", "", ""},
        std::move(job));
    if (!created.ok()) {
      std::fprintf(stderr, "error: job: %s\n", created.body.dump().c_str());
      return std::nullopt;
    }
    std::this_thread::sleep_for(Seconds(o.trickle_interval));
  }
  const auto trickle_deadline = Clock::now() + std::chrono::seconds(60);
  std::vector<double> trickle_latencies;
  while (!trickled.empty()) {
    const auto now_jobs = observer.jobs();
    bool settled = true;
    trickle_latencies.clear();
    r.trickle_planned = 0;
    for (const auto& name : trickled) {
      auto it = now_jobs.find(name);
      if (it == now_jobs.end() || !it->second.planned) {
        settled = false;
        continue;
      }
      ++r.trickle_planned;
      const auto& t = it->second;
      if (t.feasible && !t.first_pod) settled = false;
      if (t.created && t.first_pod)
        trickle_latencies.push_back(Seconds(*t.first_pod - *t.created).count());
    }
    if (settled || Clock::now() > trickle_deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  r.trickle_with_pods = static_cast<int>(trickle_latencies.size());
  r.trickle_p50 = percentile(trickle_latencies, 0.5);
  r.trickle_p99 = percentile(trickle_latencies, 0.99);
  r.trickle_max = percentile(trickle_latencies, 1.0);

  const std::string metrics_end = controller.metrics();
  r.solver_seconds = metric_sum(metrics_end, "depl_solver_duration_seconds_sum");
  const ProcessSample end = sample_process(controller.pid());
  r.rss_end_kib = end.rss_kib;
  r.peak_rss_kib = end.hwm_kib;
  // Peak RSS is VmHWM from just before the stop, not wait4's ru_maxrss: posix_spawn's child
  // shares the bench's address space until exec, and ru_maxrss counts that (GBs with 10,000
  // pods in the dev cluster).
  const ProcessSample final_usage = controller.stop();
  r.cpu_total_seconds = final_usage.cpu_seconds;

  std::vector<double> latencies;
  for (const auto& [name, t] : burst) {
    if (t.planned && t.feasible) ++r.feasible;
    if (t.created && t.first_pod) latencies.push_back(Seconds(*t.first_pod - *t.created).count());
  }
  r.with_pods = static_cast<int>(latencies.size());
  r.first_pod_p50 = percentile(latencies, 0.5);
  r.first_pod_p90 = percentile(latencies, 0.9);
  r.first_pod_p99 = percentile(latencies, 0.99);
  r.first_pod_max = percentile(latencies, 1.0);
  return r;
}

double median_of(const std::vector<RunResult>& runs, double RunResult::*field) {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.*field);
  return percentile(v, 0.5);
}
double median_of(const std::vector<RunResult>& runs, long RunResult::*field) {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(static_cast<double>(r.*field));
  return percentile(v, 0.5);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.controller = (fs::canonical("/proc/self/exe").parent_path() / "depl-controller").string();
  CLI::App app{
      "depl-scale-bench: depl-controller (a child process) against an in-process dev cluster "
      "with simulated containers; J jobs applied at once"};
  app.add_option("--nodes", o.nodes, "simulated nodes")->capture_default_str();
  app.add_option("--pools", o.pools, "node pools (nodes are spread evenly)")->capture_default_str();
  app.add_option("--gpus-per-node", o.gpus_per_node, "GPUs per node")->capture_default_str();
  app.add_option("--jobs", o.jobs, "DependableTrainingJobs applied at once")->capture_default_str();
  app.add_option("--min-workers", o.min_workers, "fewest workers of a job")->capture_default_str();
  app.add_option("--max-workers", o.max_workers, "most workers of a job")->capture_default_str();
  app.add_option("--cached-pods", o.cached_pods,
                 "unrelated running pods created before the controller starts")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the worker counts")->capture_default_str();
  app.add_option("--repeat", o.repeat, "runs (fresh cluster and controller each); medians")
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_seconds, "give up planning after this many seconds")
      ->capture_default_str();
  app.add_option("--idle-seconds", o.idle_seconds, "seconds at rest to measure idle reconciles")
      ->capture_default_str();
  app.add_option("--trickle", o.trickle,
                 "then create this many more jobs one at a time (their latency apart)")
      ->capture_default_str();
  app.add_option("--trickle-interval", o.trickle_interval, "seconds between those jobs")
      ->capture_default_str();
  app.add_option("--controller", o.controller, "the depl-controller binary")->capture_default_str();
  app.add_option("--controller-arg", o.controller_args,
                 "extra argument for depl-controller (repeat the option for more)")
      ->allow_extra_args(false);
  app.add_option("--log-dir", o.log_dir,
                 "keep the controller's logs here (default: the cluster's temporary directory)");
  app.add_option("--timeline", o.timeline,
                 "write each burst job's creation, first plan and first pod times here (CSV, ms)");
  app.add_option("--metrics-out", o.metrics_out,
                 "write the controller's /metrics at rest here (API requests by verb and code, "
                 "reconcile and solver times)");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);  // the dev cluster's per-pod lines
  if (o.pools < 1 || o.nodes < o.pools || o.jobs < 1 || o.min_workers < 1 ||
      o.max_workers < o.min_workers) {
    std::fprintf(stderr, "error: need nodes >= pools >= 1, jobs >= 1, 1 <= min <= max workers\n");
    return 2;
  }

  std::printf(
      "depl-scale-bench: %d nodes in %d pools (%d GPUs each), %d jobs with %d-%d workers "
      "(seed %llu), %d cached pods, %d run(s)\n",
      o.nodes, o.pools, o.gpus_per_node, o.jobs, o.min_workers, o.max_workers,
      static_cast<unsigned long long>(o.seed), o.cached_pods, o.repeat);
  std::vector<RunResult> runs;
  for (int i = 0; i < o.repeat; ++i) {
    std::fprintf(stderr, "run %d of %d\n", i + 1, o.repeat);
    auto r = run_once(o, i + 1);
    if (!r) return 1;
    runs.push_back(*r);
  }

  std::printf(
      "\n| run | planned (plan / cannot run now) | all planned, s | with pods | "
      "first pod p50 / p90 / p99 / max, s | reconciles/s (planning) | reconciles/s "
      "(idle) | RSS ready / peak, MiB | CPU s (sync / planning / total) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = runs[i];
    std::printf(
        "| %zu | %d of %d (%d / %d)%s | %.2f | %d | %.3f / %.3f / %.3f / %.3f | %.0f | %.1f "
        "| %.1f / %.1f | %.2f / %.2f / %.2f |\n",
        i + 1, r.planned, r.jobs, r.feasible, r.planned - r.feasible,
        r.complete ? "" : " (timeout)", r.all_planned_seconds, r.with_pods, r.first_pod_p50,
        r.first_pod_p90, r.first_pod_p99, r.first_pod_max, r.reconciles_per_second,
        r.reconciles_idle_per_second, r.rss_ready_kib / 1024.0, r.peak_rss_kib / 1024.0,
        r.cpu_ready_seconds, r.cpu_planning_seconds, r.cpu_total_seconds);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = runs[i];
    std::printf(
        "run %zu: setup %.1f s, apply %.2f s, %.0f reconciles while planning, solver %.3f "
        "s in total, %ld writes by the controller, peak RSS before the jobs %.1f MiB, RSS "
        "at the end %.1f MiB, dev cluster CPU while planning %.2f s\n",
        i + 1, r.setup_seconds, r.apply_seconds, r.reconciles_planning, r.solver_seconds,
        r.controller_writes, r.peak_ready_kib / 1024.0, r.rss_end_kib / 1024.0,
        r.cluster_cpu_planning_seconds);
    std::string writes;
    for (const auto& [kind, n] : r.writes_by_kind)
      writes += fmt::format("{}{} {}", writes.empty() ? "" : ", ", n, kind);
    std::printf("run %zu: writes the API server applied: %s\n", i + 1, writes.c_str());
  }
  for (std::size_t i = 0; i < runs.size() && o.trickle > 0; ++i) {
    const RunResult& r = runs[i];
    std::printf(
        "run %zu: %d jobs one every %.1f s afterwards: %d planned, %d with pods, first pod "
        "p50 %.3f s, p99 %.3f s, max %.3f s\n",
        i + 1, o.trickle, o.trickle_interval, r.trickle_planned, r.trickle_with_pods, r.trickle_p50,
        r.trickle_p99, r.trickle_max);
  }
  if (runs.size() > 1) {
    std::printf(
        "\nmedian of %zu runs: all planned %.2f s, first pod p50 %.3f s, p99 %.3f s, "
        "reconciles/s %.0f, peak RSS %.1f MiB, CPU %.2f s planning / %.2f s total\n",
        runs.size(), median_of(runs, &RunResult::all_planned_seconds),
        median_of(runs, &RunResult::first_pod_p50), median_of(runs, &RunResult::first_pod_p99),
        median_of(runs, &RunResult::reconciles_per_second),
        median_of(runs, &RunResult::peak_rss_kib) / 1024.0,
        median_of(runs, &RunResult::cpu_planning_seconds),
        median_of(runs, &RunResult::cpu_total_seconds));
    if (o.trickle > 0) {
      std::printf("median of %zu runs, jobs one at a time: first pod p50 %.3f s, p99 %.3f s\n",
                  runs.size(), median_of(runs, &RunResult::trickle_p50),
                  median_of(runs, &RunResult::trickle_p99));
    }
  }
  const double peak = median_of(runs, &RunResult::peak_rss_kib) / 1024.0;
  const double planned = median_of(runs, &RunResult::all_planned_seconds);
  const double p99 = median_of(runs, &RunResult::first_pod_p99);
  const bool all_complete =
      std::all_of(runs.begin(), runs.end(), [](const RunResult& r) { return r.complete; });
  std::string trickle;
  if (o.trickle > 0) {
    const bool any_pods = std::all_of(runs.begin(), runs.end(),
                                      [](const RunResult& r) { return r.trickle_with_pods > 0; });
    const double t99 = median_of(runs, &RunResult::trickle_p99);
    // Jobs that found the cluster full got no pods: their latency says nothing.
    trickle = any_pods
                  ? fmt::format(", one at a time: {} ({:.3f} s)", t99 < 1 ? "met" : "MISSED", t99)
                  : std::string(
                        ", one at a time: n/a (no such job got pods: the cluster was "
                        "full; use fewer --jobs)");
  }
  std::printf(
      "\ntargets: all jobs planned < 30 s: %s (%.2f s%s); first pod p99 < 1 s: burst %s "
      "(%.3f s)%s; controller RSS < 64 MB: %s (%.1f MiB peak)\n",
      all_complete && planned < 30 ? "met" : "MISSED", planned, all_complete ? "" : ", timed out",
      p99 < 1 ? "met" : "MISSED", p99, trickle.c_str(), peak * 1.048576 < 64 ? "met" : "MISSED",
      peak);
  return 0;
}
