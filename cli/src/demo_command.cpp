// kubectl-depl demo: the whole product on one machine. Starts the embedded dev cluster (pods run
// as local processes: a real trainer for the images that have one, depl-sim-worker for the
// others), runs the controller against it, applies the CRD and a job, shows the job live until
// it ends, then what ran, phase by phase.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stop_token>
#include <thread>

#include "commands.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/controller/job_resource.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/run_controller.hpp"
#include "depl/controller/worker_pods.hpp"
#include "depl/devcluster/dev_cluster.hpp"
#include "depl/kube/beast_transport.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/kubeconfig.hpp"
#include "depl/kube/runtime/termination_signals.hpp"

namespace depl::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Pods of these images train for real on Fashion-MNIST: depl-reference-worker, and the PyTorch
// reference job's script (its shebang runs Debian's /usr/bin/python3, as the image's entrypoint
// does); every other image runs the simulated worker unless --worker says otherwise.
constexpr const char* kReferenceWorkerImage = "depl.dev/reference-worker";
constexpr const char* kPytorchWorkerImage = "depl.dev/pytorch-fashion-mnist";
constexpr const char* kPytorchWorkerScript = "examples/pytorch/train.py";

struct DemoOptions {
  std::string pools = "examples/quickstart/pools.yaml";
  std::string job = "examples/quickstart/job.yaml";
  std::string crd = "crds/depl.dev_dependabletrainingjobs.yaml";
  std::string worker;                  // default: depl-sim-worker next to this binary
  std::vector<std::string> image_map;  // IMAGE=EXECUTABLE, over the defaults
  double epoch_seconds = 1.5;          // wall time of one simulated epoch (0: the worker's default)
  bool keep_running = false;
  double timeout_seconds = 300;
};

Expected<std::string> read_file(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) return error(fmt::format("{} {}: cannot read the file", flag, path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string self_dir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// Creates an object, or replaces it when it exists (like kubectl apply for the demo's inputs).
Expected<json> apply(kube::Client& client, const kube::ResourceType& type, json object) {
  const std::string ns = type.namespaced ? object["metadata"].value("namespace", "default") : "";
  if (type.namespaced) object["metadata"]["namespace"] = ns;
  auto created = client.create(type, ns, object, {"kubectl-depl-demo"});
  if (created) return *created;
  if (!created.error().is_already_exists()) return error(created.error().message);
  auto current = client.get(type, ns, object["metadata"].value("name", ""));
  if (!current) return error(current.error().message);
  object["metadata"]["resourceVersion"] = (*current)["metadata"]["resourceVersion"];
  auto replaced = client.replace(type, object, {"kubectl-depl-demo"});
  if (!replaced) return error(replaced.error().message);
  return *replaced;
}

// Paces the simulated workers: every model's pods get DEPL_SIM_EPOCH_SECONDS (read by
// depl-sim-worker; a real trainer ignores it). An env entry the job already sets is kept.
void add_sim_epoch_seconds(json& job, double seconds) {
  if (!job.contains("spec") || !job["spec"].is_object()) return;
  json& models = job["spec"]["models"];
  if (!models.is_array()) return;
  for (json& model : models) {
    if (!model.is_object()) continue;
    json& env = model["env"];
    if (!env.is_array()) env = json::array();
    bool present = false;
    for (const json& e : env) present = present || e.value("name", "") == "DEPL_SIM_EPOCH_SECONDS";
    if (!present)
      env.push_back({{"name", "DEPL_SIM_EPOCH_SECONDS"}, {"value", fmt::format("{}", seconds)}});
  }
}

// What ran, phase by phase, from the losses the workers reported (status.progress.history): the
// model, the workers, the epochs and the loss at the phase's first and last epoch. A phase that
// goes on from the previous phase's last epoch on another model started from that checkpoint,
// converted (a warm start); its first loss shows how much of the training it kept.
void print_what_ran(const json& status) {
  const auto plan = controller::plan_from_json(status);
  const auto history = controller::progress_from_json(status).history;
  if (history.empty()) return;
  fmt::print("\nwhat ran (losses as the workers reported them):\n");
  std::string previous_model;
  int previous_epoch = 0;
  for (std::size_t i = 0; i < history.size();) {
    std::size_t j = i;
    while (j + 1 < history.size() && history[j + 1].phase == history[i].phase) ++j;
    const auto& first = history[i];
    const auto& last = history[j];
    std::string model = "?";
    int workers = 0;
    if (plan && first.phase >= 0 && static_cast<std::size_t>(first.phase) < plan->phases.size()) {
      model = plan->phases[static_cast<std::size_t>(first.phase)].model;
      workers = plan->phases[static_cast<std::size_t>(first.phase)].workers;
    }
    std::string start = "from scratch";
    if (first.epoch > 1 && first.epoch == previous_epoch + 1) {
      start = model == previous_model
                  ? fmt::format("resumed from epoch {}'s checkpoint", previous_epoch)
                  : fmt::format("warm start: epoch {}'s {} checkpoint converted to {}",
                                previous_epoch, previous_model, model);
    }
    fmt::print("  phase {} {:<8} {} {:<7}  epochs {:>2}-{:<2}  loss {} -> {}  ({})\n", first.phase,
               model, workers, workers == 1 ? "worker" : "workers", first.epoch, last.epoch,
               controller::display_loss(first.loss), controller::display_loss(last.loss), start);
    previous_model = model;
    previous_epoch = last.epoch;
    i = j + 1;
  }
}

// The job's state in one line, with how many of its worker pods are Running (nullopt: the pods
// could not be listed). Loss, P(target) and cost read as the printer columns show them.
std::string status_line(const json& job, std::optional<int> running_pods) {
  const controller::JobStatus status =
      controller::decode_status(job.value("status", json::object()));
  const controller::ProgressRecord& progress = status.progress;
  return fmt::format(
      "{:<10} phase {} {:<14} epoch {:>3}  loss {:>7}  P(target) {:<6}  cost {:<8}  pods {} "
      "running",
      status.phase.empty() ? controller::phases::kPending : status.phase, progress.phase,
      progress.model.empty() ? "-" : progress.model, progress.epoch,
      progress.loss ? controller::display_loss(*progress.loss) : "-",
      status.plan ? controller::display_probability(status.plan->probability) : "0",
      controller::display_cost(progress.cost), running_pods ? std::to_string(*running_pods) : "?");
}

// The job's worker pods in phase Running (the controller labels each with the job's name).
std::optional<int> running_pods(kube::Client& client, const std::string& ns,
                                const std::string& job) {
  kube::ListOptions options;
  options.label_selector = fmt::format("{}={}", controller::kJobLabel, job);
  auto pods = client.list(kube::resources::pods(), ns, options);
  if (!pods) return std::nullopt;
  int running = 0;
  for (const json& pod : pods->value("items", json::array())) {
    if (pod.value("status", json::object()).value("phase", "") == "Running") ++running;
  }
  return running;
}

// What the demo runs, read and checked before anything starts.
struct DemoInputs {
  json crd;
  json job;            // with DEPL_SIM_EPOCH_SECONDS added to its models
  std::string worker;  // absolute path of the executable images run by default
};

// Reads the CRD and the job, checks the pools file, the worker and --image-map. Errors are bad
// input, for the user to fix.
Expected<DemoInputs> read_inputs(const DemoOptions& o) {
  auto crd_yaml = read_file(o.crd, "--crd");
  auto job_yaml = read_file(o.job, "--job");
  if (!crd_yaml || !job_yaml) {
    return error(fmt::format("{}\n(run it from the repository root, or pass --job/--pools/--crd)",
                             (!crd_yaml ? crd_yaml : job_yaml).error().message));
  }
  auto crd = yaml_to_json(*crd_yaml, o.crd);
  auto job = yaml_to_json(*job_yaml, o.job);
  if (!crd || !job) return unexpected(!crd ? crd.error() : job.error());
  if (o.epoch_seconds > 0) add_sim_epoch_seconds(*job, o.epoch_seconds);
  if (!fs::exists(o.pools)) return error(fmt::format("--pools {}: no such file", o.pools));
  // Absolute: containers run in their own working directories.
  std::string worker =
      fs::absolute(o.worker.empty() ? self_dir() + "/depl-sim-worker" : o.worker).string();
  if (access(worker.c_str(), X_OK) != 0) {
    return error(fmt::format("worker {} is not an executable (build it with make build)", worker));
  }
  for (const std::string& entry : o.image_map) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || access(entry.c_str() + eq + 1, X_OK) != 0) {
      return error(
          fmt::format("--image-map {}: want IMAGE=EXECUTABLE (an executable file)", entry));
    }
  }
  return DemoInputs{std::move(*crd), std::move(*job), std::move(worker)};
}

// A work directory under /tmp for the cluster (pod working directories and logs), with the log
// file the controller's and the cluster's logs go to, so the terminal shows the job.
Expected<std::string> make_work_dir_with_log() {
  char work_template[] = "/tmp/depl-demo-XXXXXX";
  const char* work_dir = mkdtemp(work_template);
  if (work_dir == nullptr) return error("cannot create a work directory under /tmp");
  const std::string log_path = std::string(work_dir) + "/demo.log";
  try {
    auto logger = spdlog::basic_logger_mt("demo", log_path);
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
  } catch (const spdlog::spdlog_ex& e) {
    return error(fmt::format("log file {}: {}", log_path, e.what()));
  }
  return std::string(work_dir);
}

// The dev cluster's nodes from --pools, and which executable each image's pods run.
devcluster::DevClusterOptions cluster_options(const DemoOptions& o, const DemoInputs& inputs,
                                              const std::string& work_dir) {
  devcluster::DevClusterOptions options;
  options.work_dir = work_dir;
  options.pools_file = o.pools;
  options.image_map["*"] = inputs.worker;
  if (o.worker.empty()) {
    // The reference worker's image (examples/fashion-mnist) trains for real.
    const std::string reference = self_dir() + "/depl-reference-worker";
    if (access(reference.c_str(), X_OK) == 0) options.image_map[kReferenceWorkerImage] = reference;
    if (access(kPytorchWorkerScript, X_OK) == 0) {  // run from the repository root
      options.image_map[kPytorchWorkerImage] = fs::absolute(kPytorchWorkerScript).string();
    }
  }
  for (const std::string& entry : o.image_map) {  // checked by read_inputs
    const auto eq = entry.find('=');
    options.image_map[entry.substr(0, eq)] = fs::absolute(entry.substr(eq + 1)).string();
  }
  return options;
}

// The controller as the demo runs it: against the dev cluster, endpoints on free loopback ports,
// workers meeting on loopback, checkpoints beside the cluster's kubeconfig.
controller::ControllerConfig controller_config(const devcluster::DevCluster& cluster) {
  controller::ControllerConfig config;
  config.kubeconfig = cluster.kubeconfig_path();
  config.metrics_addr = "127.0.0.1:0";
  config.progress_addr = "127.0.0.1:0";
  config.health_addr = "127.0.0.1:0";
  config.rendezvous = controller::RendezvousMode::Loopback;
  config.checkpoint_root =
      fs::path(cluster.kubeconfig_path()).parent_path().string() + "/checkpoints";
  config.catalog_namespace = "kube-system";
  return config;
}

// The controller, run in-process on its own thread until `stop` is requested; a controller that
// fails requests it.
class ControllerThread {
 public:
  ControllerThread(controller::ControllerConfig config, std::stop_source stop)
      : stop_(stop), thread_([this, config = std::move(config)] {
          auto ran = controller::run_controller(config, stop_.get_token(),
                                                [this](const controller::ControllerEndpoints& e) {
                                                  endpoints_ = e;
                                                  ready_ = true;
                                                });
          if (!ran) {
            error_ = ran.error().message;
            stop_.request_stop();
          }
        }) {}

  // Waits until the controller serves or a stop is requested; fails when the controller did.
  Expected<controller::ControllerEndpoints> wait_ready() {
    while (!ready_ && !stop_.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!error_.empty()) return error(error_);
    return endpoints_;
  }

  void join() { thread_.join(); }

 private:
  std::stop_source stop_;
  std::atomic<bool> ready_{false};
  std::string error_;
  controller::ControllerEndpoints endpoints_;
  std::jthread thread_;  // last: it starts once the members it writes exist
};

// The demo's own client connects as the user will: with the cluster's kubeconfig (its CA and
// the admin's token).
Expected<kube::Client> connect_as_user(const std::string& kubeconfig_path) {
  kube::KubeconfigLoadOptions load;
  load.explicit_path = kubeconfig_path;
  auto kubeconfig = kube::load_kubeconfig(load);
  if (!kubeconfig) return unexpected(kubeconfig.error());
  auto connection = kube::resolve_kubeconfig(*kubeconfig);
  if (!connection) return unexpected(connection.error());
  auto transport = kube::BeastTransport::create(*connection);
  if (!transport) return unexpected(transport.error());
  return kube::Client(*transport, connection->credentials);
}

// Shows a job as it changes: each plan revision once, with its phases, datasets and predictions,
// and the live line whenever it changes (rewritten in place on a terminal).
class JobDisplay {
 public:
  JobDisplay(kube::Client& client, const json& job, std::string ns, std::string name)
      : client_(client), job_(job), ns_(std::move(ns)), name_(std::move(name)) {}

  // Shows what changed in this version of the job; true once the job has ended.
  bool show(const json& current) {
    last_ = current;
    const json& status = last_.value("status", json::object());
    auto plan = controller::plan_from_json(status);
    if (plan && plan->revision != last_revision_) {
      if (tty_ && !last_line_.empty()) fmt::print("\n");
      last_revision_ = plan->revision;
      print_plan(*plan);
      last_line_.clear();
    }
    const std::string line = status_line(last_, running_pods(client_, ns_, name_));
    if (line != last_line_) {
      if (tty_) {
        fmt::print("\r{}", line);
      } else {
        fmt::print("{}\n", line);
      }
      std::fflush(stdout);
      last_line_ = line;
    }
    final_phase_ = status.value("phase", "");
    return final_phase_ == "Succeeded" || final_phase_ == "Failed";
  }

  // Ends the live line on a terminal.
  void end_line() const {
    if (tty_) fmt::print("\n");
  }

  const json& last() const { return last_; }
  const std::string& final_phase() const { return final_phase_; }

 private:
  void print_plan(const controller::PlanRecord& plan) const {
    fmt::print("plan {}: ", plan.revision);
    for (std::size_t i = 0; i < plan.phases.size(); ++i) {
      const auto& p = plan.phases[i];
      fmt::print("{}{} x{} on {} ({} worker{})", i ? " -> " : "", p.model, p.epochs, p.pool,
                 p.workers, p.workers == 1 ? "" : "s");
    }
    std::vector<std::string> dropped;  // the job's datasets the plan leaves out
    for (const json& d : job_["spec"].value("datasets", json::array())) {
      const std::string dataset = d.value("name", "");
      if (std::find(plan.datasets.begin(), plan.datasets.end(), dataset) == plan.datasets.end()) {
        dropped.push_back(dataset);
      }
    }
    fmt::print("\n      datasets {}{}", fmt::join(plan.datasets, ", "),
               dropped.empty() ? "" : fmt::format(" (left out: {})", fmt::join(dropped, ", ")));
    fmt::print("\n      predicted cost {}, {:.1f} s, loss {} ± {}, P(target) {}\n",
               controller::display_cost(plan.cost), plan.duration_seconds,
               controller::display_loss(plan.loss_mean), controller::display_loss(plan.loss_stddev),
               controller::display_probability(plan.probability));
  }

  kube::Client& client_;
  const json& job_;  // the job as applied: its spec names the datasets
  std::string ns_;
  std::string name_;
  bool tty_ = isatty(1) != 0;
  std::string last_line_;
  std::string final_phase_;
  int last_revision_ = 0;
  json last_;
};

// Follows the job with a watch from the version it was applied at, so every plan the controller
// writes is shown, however soon the next one replaces it (the reference worker can finish an
// epoch in a tenth of a second). When a watch ends or fails, the job is read again and watched
// from there. Returns when the job ends or is deleted, on a stop, or after `timeout_seconds`.
void follow_job(kube::Client& client, JobDisplay& display, const json& applied,
                double timeout_seconds, std::stop_token stop) {
  const std::string ns = applied["metadata"].value("namespace", "default");
  const std::string name = applied["metadata"].value("name", "");
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  std::string resource_version = applied["metadata"].value("resourceVersion", "");
  bool ended = display.show(applied);
  while (!ended && !stop.stop_requested()) {
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    kube::WatchOptions watch_options;
    watch_options.field_selector = "metadata.name=" + name;
    watch_options.resource_version = resource_version;
    watch_options.timeout_seconds = static_cast<int>(std::min<std::int64_t>(left.count(), 60));
    auto stream = client.watch(controller::job_resource(), ns, watch_options);
    if (stream) {
      std::stop_callback cancel_on_stop(stop, [&] { stream->cancel(); });
      while (!ended) {
        auto event = stream->next();
        if (!event || !*event) break;  // failed or ended: read the job again below
        const kube::WatchEvent& e = **event;
        if (e.type == kube::WatchEventType::Error) break;  // e.g. 410 Gone
        if (e.type == kube::WatchEventType::Bookmark) {
          resource_version = e.resource_version();
          continue;
        }
        if (e.type == kube::WatchEventType::Deleted) {
          fmt::print("\njob {}/{} was deleted\n", ns, name);
          ended = true;
          break;
        }
        resource_version = e.resource_version();
        ended = display.show(e.object);
      }
    }
    if (ended || stop.stop_requested()) break;
    auto current = client.get(controller::job_resource(), ns, name);
    if (current) {
      resource_version = (*current)["metadata"].value("resourceVersion", "");
      ended = display.show(*current);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server is away: retry
    }
  }
}

// With --keep-running: how to look at the cluster from another terminal, then waits for Ctrl-C.
void keep_running(const devcluster::DevCluster& cluster, const std::string& job_name,
                  std::stop_token stop) {
  fmt::print(
      "\nThe dev cluster keeps running. In another terminal:\n"
      "  export KUBECONFIG={}\n"
      "  kubectl get dtj            # the job, with its printer columns\n"
      "  kubectl describe dtj {}   # status, conditions, events\n"
      "  kubectl get pods           # the workers of every phase\n"
      "Press Ctrl-C here to stop it.\n",
      cluster.kubeconfig_path(), job_name);
  std::fflush(stdout);
  while (!stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

int fail(int exit_code, const std::string& message) {
  fmt::print(stderr, "kubectl-depl demo: {}\n", message);
  return exit_code;
}

// Starts the dev cluster and the controller, applies the CRD and the job, follows the job to its
// end and reports what ran; the exit code says whether it succeeded.
int run_demo(const DemoOptions& o) {
  auto inputs = read_inputs(o);
  if (!inputs) return fail(kExitBadInput, inputs.error().message);
  auto work_dir = make_work_dir_with_log();
  if (!work_dir) return fail(kExitFailure, work_dir.error().message);

  std::stop_source stop;
  kube::TerminationSignals signals(stop);
  auto cluster = devcluster::DevCluster::start(cluster_options(o, *inputs, *work_dir));
  if (!cluster) return fail(kExitFailure, "dev cluster: " + cluster.error().message);
  fmt::print("dev cluster  {}  (kubeconfig {})\n", (*cluster)->url(),
             (*cluster)->kubeconfig_path());
  fmt::print("logs         {}/demo.log (controller and cluster), pod logs under {}\n", *work_dir,
             *work_dir);

  ControllerThread controller(controller_config(**cluster), stop);
  auto client = connect_as_user((*cluster)->kubeconfig_path());
  if (!client) {
    stop.request_stop();
    return fail(kExitFailure, client.error().message);
  }
  if (auto applied = apply(*client, kube::resources::custom_resource_definitions(), inputs->crd);
      !applied) {
    stop.request_stop();
    return fail(kExitFailure, "applying the CRD: " + applied.error().message);
  }
  auto endpoints = controller.wait_ready();
  if (!endpoints) return fail(kExitFailure, "controller: " + endpoints.error().message);
  fmt::print("controller   metrics {}/metrics  progress {}\n", endpoints->metrics_url,
             endpoints->progress_url);
  auto applied = apply(*client, controller::job_resource(), inputs->job);
  if (!applied) {
    stop.request_stop();
    return fail(kExitFailure, fmt::format("applying {}: {}", o.job, applied.error().message));
  }
  const std::string ns = (*applied)["metadata"].value("namespace", "default");
  const std::string name = (*applied)["metadata"].value("name", "");
  fmt::print("job          {}/{} applied; following it (Ctrl-C stops)\n\n", ns, name);

  JobDisplay display(*client, inputs->job, ns, name);
  follow_job(*client, display, *applied, o.timeout_seconds, stop.get_token());
  display.end_line();
  const json& status = display.last().value("status", json::object());
  print_what_ran(status);
  const std::string& final_phase = display.final_phase();
  fmt::print("\njob {}: {}\n", final_phase.empty() ? "did not finish" : final_phase,
             status.value("message", ""));
  const bool succeeded = final_phase == "Succeeded";
  if (o.keep_running && !stop.stop_requested()) keep_running(**cluster, name, stop.get_token());

  stop.request_stop();
  controller.join();
  (*cluster)->stop();
  spdlog::shutdown();
  if (succeeded) {
    std::error_code ec;
    fs::remove_all(*work_dir, ec);
  } else {
    fmt::print("logs kept in {}\n", *work_dir);
  }
  return succeeded ? kExitOk : kExitFailure;
}

}  // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DemoOptions>();
  auto* cmd = app.add_subcommand("demo", "run a job end to end on the embedded dev cluster");
  cmd->add_option("--pools", options->pools, "pools file for the dev cluster's nodes")
      ->capture_default_str();
  cmd->add_option("--job", options->job, "DependableTrainingJob manifest to run")
      ->capture_default_str();
  cmd->add_option("--crd", options->crd, "the CRD manifest")->capture_default_str();
  cmd->add_option("--worker", options->worker,
                  "executable every image maps to (default: depl-reference-worker for the image "
                  "depl.dev/reference-worker, examples/pytorch/train.py for "
                  "depl.dev/pytorch-fashion-mnist, depl-sim-worker for all others)");
  cmd->add_option("--image-map", options->image_map,
                  "IMAGE=EXECUTABLE: pods of IMAGE (without its tag) run EXECUTABLE (repeatable)");
  cmd->add_option("--epoch-seconds", options->epoch_seconds,
                  "wall time of one simulated epoch (sets DEPL_SIM_EPOCH_SECONDS on the job's "
                  "models; 0 keeps the worker's default)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_flag("--keep-running", options->keep_running, "leave the cluster up after the job ends");
  cmd->add_option("--timeout", options->timeout_seconds, "give up after this many seconds")
      ->capture_default_str();
  cmd->callback([options, &exit_code] { exit_code = run_demo(*options); });
}

}  // namespace depl::cli
