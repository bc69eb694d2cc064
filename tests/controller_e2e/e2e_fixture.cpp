#include "e2e_fixture.hpp"
#include "depl/controller/job_resource.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "chart_files.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/kube/beast_transport.hpp"
#include "depl/kube/kubeconfig.hpp"
#include "depl/kube/resource.hpp"

namespace depl::e2e {

namespace resources = kube::resources;
using devcluster::testing::CommandResult;
using devcluster::testing::run_command;

namespace {

// A pointer into `job` (never into a temporary copy, which is what json::value() returns).
const json* find_condition(const json& job, const std::string& type) {
  auto status = job.find("status");
  if (status == job.end() || !status->is_object()) return nullptr;
  auto list = status->find("conditions");
  if (list == status->end() || !list->is_array()) return nullptr;
  for (const auto& c : *list) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string condition_status(const json& job, const std::string& type) {
  const json* c = find_condition(job, type);
  return c ? c->value("status", "") : "";
}
std::string condition_reason(const json& job, const std::string& type) {
  const json* c = find_condition(job, type);
  return c ? c->value("reason", "") : "";
}
std::string condition_message(const json& job, const std::string& type) {
  const json* c = find_condition(job, type);
  return c ? c->value("message", "") : "";
}
std::string job_phase(const json& job) {
  return job.value("status", json::object()).value("phase", "");
}

bool scheduling_gated(const json& pod) {
  const json gates = pod.value("spec", json::object()).value("schedulingGates", json::array());
  return gates.is_array() && !gates.empty();
}

std::optional<json> pod_env(const json& pod, const std::string& name) {
  const json& containers = pod["spec"].value("containers", json::array());
  if (containers.empty()) return std::nullopt;
  for (const auto& e : containers[0].value("env", json::array())) {
    if (e.value("name", "") != name) continue;
    if (e.contains("value")) return e["value"];
    if (e.contains("valueFrom")) return e["valueFrom"];
  }
  return std::nullopt;
}

void ControllerE2e::SetUp() {
  if (access(kSimWorker.c_str(), X_OK) != 0)
    GTEST_SKIP() << kSimWorker << " is not built (cmake --build <build> --target depl-sim-worker)";
}

void ControllerE2e::TearDown() {
  stop_controller();
  pods_.reset();
  client_.reset();
  // A failed scenario keeps its logs (controller, workers, their acknowledgements): the cluster's
  // directory goes with it.
  if (HasFailure() && !work_dir_.empty()) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path kept =
        fs::path(::testing::TempDir()) /
        fmt::format("depl-e2e-{}.{}-{}", info->test_suite_name(), info->name(), ::getpid());
    std::error_code ec;
    fs::copy(work_dir_, kept, fs::copy_options::recursive, ec);
    std::cerr << "the scenario's logs: "
              << (ec ? "could not be kept: " + ec.message() : kept.string()) << "\n";
  }
  if (cluster_) cluster_->stop();
  // Nothing of this process logs any more: the cluster's threads and the controller are gone.
  end_log_capture();
  if (owns_work_dir_) {
    std::error_code ec;
    fs::remove_all(work_dir_, ec);
  }
}

void ControllerE2e::capture_log(const fs::path& file) {
  uncaptured_logger_ = spdlog::default_logger();
  auto sinks = uncaptured_logger_->sinks();
  sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file.string()));
  auto logger =
      std::make_shared<spdlog::logger>(uncaptured_logger_->name(), sinks.begin(), sinks.end());
  logger->set_level(uncaptured_logger_->level());
  logger->flush_on(spdlog::level::trace);  // searched while the run goes on
  spdlog::set_default_logger(std::move(logger));
}

void ControllerE2e::end_log_capture() {
  if (!uncaptured_logger_) return;
  spdlog::set_default_logger(std::move(uncaptured_logger_));
  uncaptured_logger_.reset();
}

void ControllerE2e::start_cluster(const std::string& pools_file, ClusterSetup setup) {
  devcluster::DevClusterOptions options;
  if (!pools_file.empty()) options.pools_file = (kTestData / pools_file).string();
  options.image_map["*"] = kSimWorker.string();
  for (const auto& [image, executable] : setup.image_map) options.image_map[image] = executable;
  options.kueue_pod_webhook = setup.kueue_pod_webhook;
  options.coscheduling = setup.coscheduling;
  options.workload_scheduling = setup.workload_scheduling;
  if (setup.capture_log) {
    // The directory exists before the cluster, so its first log line is captured too. Swapping
    // the default logger is safe now and in TearDown only: no other thread of ours logs then.
    std::string dir = (fs::temp_directory_path() / "depl-e2e-XXXXXX").string();
    ASSERT_NE(mkdtemp(dir.data()), nullptr) << "cannot create a temporary directory";
    work_dir_ = dir;
    owns_work_dir_ = true;
    options.work_dir = dir;
    capture_log(in_process_log());
  }
  auto started = devcluster::DevCluster::start(options);
  ASSERT_TRUE(started) << started.error().message;
  cluster_ = std::move(*started);
  work_dir_ = fs::path(cluster_->kubeconfig_path()).parent_path();
  pods_ = std::make_unique<PodRecorder>(cluster_->store());

  // The test's own client connects like the controller does: with the cluster's kubeconfig.
  kube::KubeconfigLoadOptions load;
  load.explicit_path = cluster_->kubeconfig_path();
  auto kubeconfig = kube::load_kubeconfig(load);
  ASSERT_TRUE(kubeconfig) << kubeconfig.error().message;
  auto connection = kube::resolve_kubeconfig(*kubeconfig);
  ASSERT_TRUE(connection) << connection.error().message;
  auto transport = kube::BeastTransport::create(*connection);
  ASSERT_TRUE(transport) << transport.error().message;
  client_ = std::make_unique<kube::Client>(*transport, connection->credentials);

  const fs::path crd_file = kRepo / "crds" / "depl.dev_dependabletrainingjobs.yaml";
  auto crd = yaml_to_json(read_text(crd_file), crd_file.string());
  ASSERT_TRUE(crd) << crd.error().message;
  auto created = client_->create(resources::custom_resource_definitions(), "", *crd);
  ASSERT_TRUE(created) << created.error().message;
  ASSERT_NO_FATAL_FAILURE(install_controller_identity(setup.edit_rbac));
}

void ControllerE2e::install_controller_identity(
    const std::function<void(std::vector<json>&)>& edit) {
  auto context = packaging::default_context();
  ASSERT_TRUE(context) << context.error().message;
  ASSERT_EQ(std::string(packaging::kReleaseNamespace), kControllerNamespace);
  auto chart = packaging::render_chart(*context);
  ASSERT_TRUE(chart) << chart.error().message;
  // kind -> (group, plural)
  const std::map<std::string, std::pair<std::string, std::string>> identity_kinds = {
      {"ServiceAccount", {"", "serviceaccounts"}},
      {"ClusterRole", {"rbac.authorization.k8s.io", "clusterroles"}},
      {"ClusterRoleBinding", {"rbac.authorization.k8s.io", "clusterrolebindings"}},
      {"Role", {"rbac.authorization.k8s.io", "roles"}},
      {"RoleBinding", {"rbac.authorization.k8s.io", "rolebindings"}}};
  std::vector<json> objects;
  for (const auto& object : *chart) {
    if (identity_kinds.count(object.value("kind", ""))) objects.push_back(object);
  }
  if (edit) edit(objects);
  auto& store = cluster_->store();
  auto ns = store.create(devcluster::ResourceRef{"", "v1", "namespaces", "", "", ""},
                         json{{"metadata", {{"name", kControllerNamespace}}}});
  ASSERT_TRUE(ns.ok()) << ns.answer().dump();
  std::string account;
  for (const auto& object : objects) {
    const auto& [group, plural] = identity_kinds.at(object.value("kind", ""));
    const std::string object_ns = object["metadata"].value("namespace", "");
    auto made =
        store.create(devcluster::ResourceRef{group, "v1", plural, object_ns, "", ""}, object);
    ASSERT_TRUE(made.ok()) << packaging::object_id(object) << ": " << made.answer().dump();
    if (plural == "serviceaccounts") account = object["metadata"].value("name", "");
  }
  ASSERT_FALSE(account.empty()) << "the chart renders no ServiceAccount";
  auto written = cluster_->write_service_account_kubeconfig(kControllerNamespace, account,
                                                            controller_kubeconfig().string());
  ASSERT_TRUE(written) << written.error().message;
}

void ControllerE2e::start_controller(std::uint16_t progress_port) {
  ASSERT_TRUE(cluster_) << "start_cluster first";
  controller_stop_ = std::stop_source();
  controller_ready_ = false;
  controller_failed_ = false;
  controller::ControllerConfig cc;
  cc.kubeconfig = controller_kubeconfig().string();
  cc.metrics_addr = "127.0.0.1:0";
  cc.progress_addr = fmt::format("127.0.0.1:{}", progress_port);
  cc.health_addr = "127.0.0.1:0";
  cc.rendezvous = controller::RendezvousMode::Loopback;
  cc.checkpoint_root = (work_dir_ / "checkpoints").string();
  // The chart's own namespace, where its Role lets it read ConfigMaps; no catalog is installed
  // there: the nodes' annotations hold the figures.
  cc.catalog_namespace = kControllerNamespace;
  cc.solve = solve_;
  if (spot_capacity_wait_) cc.spot_capacity_wait = *spot_capacity_wait_;
  controller_ = std::jthread([this, cc, stop = controller_stop_.get_token()] {
    auto ran =
        controller::run_controller(cc, stop, [this](const controller::ControllerEndpoints& e) {
          progress_url_ = e.progress_url;
          metrics_url_ = e.metrics_url;
          controller_ready_ = true;
        });
    if (!ran) controller_error_ = ran.error().message;
    controller_failed_ = !ran;
  });
  ASSERT_TRUE(wait_until([&] { return controller_ready_ || controller_failed_; }))
      << "the controller did not start";
  ASSERT_TRUE(controller_ready_) << "the controller failed: " << controller_error_;
}

void ControllerE2e::stop_controller() {
  controller_stop_.request_stop();
  if (controller_.joinable()) controller_.join();
}

json ControllerE2e::job_from(const std::string& file, const std::string& name,
                             double epoch_seconds) const {
  const fs::path path = kTestData / file;
  auto job = yaml_to_json(read_text(path), path.string());
  EXPECT_TRUE(job) << job.error().message;
  if (!job) return json::object();
  (*job)["metadata"]["name"] = name;
  (*job)["metadata"]["namespace"] = "default";
  for (json& model : (*job)["spec"]["models"]) {
    model["env"] = json::array(
        {{{"name", "DEPL_SIM_EPOCH_SECONDS"}, {"value", fmt::format("{}", epoch_seconds)}}});
  }
  return *job;
}

json ControllerE2e::create_job(const json& job) {
  auto created = client_->create(controller::job_resource(), "default", job);
  EXPECT_TRUE(created) << created.error().message;
  return created ? *created : json::object();
}

json ControllerE2e::get_job(const std::string& name) {
  auto got = client_->get(controller::job_resource(), "default", name);
  return got ? *got : json::object();
}

json ControllerE2e::merge_patch_job(const std::string& name, const json& patch) {
  auto patched =
      client_->patch(controller::job_resource(), "default", name, kube::PatchType::Merge, patch);
  EXPECT_TRUE(patched) << patched.error().message;
  return patched ? *patched : json::object();
}

bool ControllerE2e::wait_until(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

json ControllerE2e::wait_job(const std::string& name, const std::function<bool(const json&)>& done,
                             const std::string& what, std::chrono::seconds timeout) {
  json last;
  const bool ok = wait_until(
      [&] {
        last = get_job(name);
        return done(last);
      },
      timeout);
  EXPECT_TRUE(ok) << "job " << name << ": timed out waiting for " << what
                  << "; last seen: " << last.value("status", json::object()).dump(1);
  return last;
}

bool ControllerE2e::admit(const json& pod) {
  const json ungate = json::array({{{"op", "remove"}, {"path", "/spec/schedulingGates"}}});
  return static_cast<bool>(client_->patch(kube::resources::pods(), "default",
                                          pod["metadata"].value("name", ""), kube::PatchType::Json,
                                          ungate));
}

json ControllerE2e::wait_ended_admitting_gated(const std::string& name) {
  return wait_job(
      name,
      [&](const json& j) {
        for (const auto& pod : pods_of(name)) {
          if (scheduling_gated(pod)) (void)admit(pod);
        }
        return job_phase(j) == "Succeeded" || job_phase(j) == "Failed";
      },
      "the job ends", std::chrono::seconds(120));
}

json ControllerE2e::wait_succeeded(const std::string& name) {
  json job = wait_job(
      name, [](const json& j) { return job_phase(j) == "Succeeded" || job_phase(j) == "Failed"; },
      "the job to finish");
  EXPECT_EQ(job_phase(job), "Succeeded") << job.value("status", json::object()).dump(1);
  return job;
}

std::vector<json> ControllerE2e::list(const kube::ResourceType& type,
                                      const std::string& label_selector) {
  kube::ListOptions options;
  options.label_selector = label_selector;
  auto listed = client_->list(type, type.namespaced ? "default" : "", options);
  EXPECT_TRUE(listed) << listed.error().message;
  if (!listed) return {};
  return (*listed).value("items", json::array()).get<std::vector<json>>();
}

std::vector<json> ControllerE2e::pods_of(const std::string& job) {
  return list(resources::pods(), "depl.dev/job=" + job);
}

std::vector<json> ControllerE2e::events_of(const std::string& involved) {
  std::vector<json> out;
  for (const auto& e : list(resources::events())) {
    if (e.value("involvedObject", json::object()).value("name", "") == involved) out.push_back(e);
  }
  return out;
}

bool ControllerE2e::has_event(const std::string& involved, const std::string& reason) {
  for (const auto& e : events_of(involved)) {
    if (e.value("reason", "") == reason) return true;
  }
  return false;
}

void ControllerE2e::add_node(const std::string& name, const std::string& pool, int gpus) {
  const json resources_json = {{"cpu", "64"},
                               {"memory", "512Gi"},
                               {"pods", "110"},
                               {"nvidia.com/gpu", std::to_string(gpus)}};
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata",
                {{"name", name},
                 {"labels",
                  {{"depl.dev/pool", pool},
                   {"kubernetes.io/hostname", name},
                   {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}},
                 {"annotations",
                  {{"depl.dev/gpu-gflops", "120000"},
                   {"depl.dev/price-per-gpu-hour", "2.5"},
                   {"depl.dev/bandwidth", "12500000000"},
                   {"depl.dev/storage-bandwidth", "1000000000"},
                   {"depl.dev/startup-seconds", "60"}}}}},
               {"status",
                {{"capacity", resources_json},
                 {"allocatable", resources_json},
                 {"conditions", json::array({{{"type", "Ready"},
                                              {"status", "True"},
                                              {"reason", "KubeletReady"},
                                              {"message", "added by the test"}}})}}}};
  auto created = client_->create(resources::nodes(), "", node);
  ASSERT_TRUE(created) << created.error().message;
  // Creation may drop the status (as for most kinds): write it through /status too.
  json with_status = *created;
  with_status["status"] = node["status"];
  auto written = client_->replace_status(resources::nodes(), with_status);
  ASSERT_TRUE(written) << written.error().message;
}

bool ControllerE2e::kubectl_installed() {
  return run_command({"kubectl", "version", "--client"}, {}, "", std::chrono::seconds(30))
             .exit_code == 0;
}

CommandResult ControllerE2e::kubectl(std::vector<std::string> args, std::chrono::seconds timeout) {
  const std::string cache = (work_dir_ / "kubecache").string();
  args.insert(args.begin(), "kubectl");
  return run_command(
      args, {{"KUBECONFIG", cluster_->kubeconfig_path()}, {"KUBECACHEDIR", cache}, {"HOME", cache}},
      "", timeout);
}

}  // namespace depl::e2e
