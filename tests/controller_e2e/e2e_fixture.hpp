// The end-to-end fixture: an embedded dev cluster whose pods run depl-sim-worker, the controller
// running in-process against it (stoppable and restartable), a kube::Client for the test's own
// reads and writes, real kubectl when installed, and a PodRecorder that sees every pod event.
// Scenarios wait on conditions through the API (generous timeouts), never on fixed sleeps.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <nlohmann/json.hpp>

#include "depl/controller/run_controller.hpp"
#include "depl/devcluster/dev_cluster.hpp"
#include "depl/kube/client.hpp"
#include "pod_recorder.hpp"
#include "subprocess.hpp"

namespace depl::e2e {

using nlohmann::json;
namespace fs = std::filesystem;

inline constexpr std::chrono::seconds kWait{60};

inline const fs::path kRepo = DEPL_SOURCE_DIR;
inline const fs::path kTestData = kRepo / "tests" / "controller_e2e" / "testdata";
inline const fs::path kSimWorker = fs::path(DEPL_BINARY_DIR) / "bin" / "depl-sim-worker";

// The status of condition `type` ("True"/"False"), or "" when absent; and its reason/message.
std::string condition_status(const json& job, const std::string& type);
std::string condition_reason(const json& job, const std::string& type);
std::string condition_message(const json& job, const std::string& type);
std::string job_phase(const json& job);
// Whether the pod is held by scheduling gates (a Kueue queue's, until it admits the pod).
bool scheduling_gated(const json& pod);
// The value of env variable `name` in a pod's first container (value or the valueFrom object).
std::optional<json> pod_env(const json& pod, const std::string& name);

// How start_cluster sets the dev cluster up.
struct ClusterSetup {
  // This process's log lines (the dev cluster's, an in-process controller's) also go to
  // ControllerE2e::in_process_log() until TearDown, for scenarios that search every log.
  bool capture_log = false;
  // Changes the chart's ServiceAccount, roles and bindings before they are created, e.g. to take
  // a permission away.
  std::function<void(std::vector<json>&)> edit_rbac;
  // Images that run something else than depl-sim-worker (image without tag -> executable).
  std::map<std::string, std::string> image_map;
  // Pods on a Kueue queue are created gated (DevClusterOptions::kueue_pod_webhook).
  bool kueue_pod_webhook = false;
  // The PodGroup API is served and gangs are bound all or nothing
  // (DevClusterOptions::coscheduling).
  bool coscheduling = false;
  // Kubernetes' Workload and PodGroup API is served and its gangs are bound all or nothing
  // (DevClusterOptions::workload_scheduling).
  bool workload_scheduling = false;
};

class ControllerE2e : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Starts the dev cluster with the pools of `pools_file` (a testdata file name; "" = no nodes),
  // applies the CRD, creates the chart's ServiceAccount, ClusterRole, Role and bindings (rendered
  // from charts/depl-operator, as `helm install` would in namespace depl-system) and starts
  // recording pods. The controller connects as that ServiceAccount (controller_kubeconfig()),
  // so a permission the chart lacks fails with the 403 a real cluster gives. Fatal failures on
  // error: ASSERT_NO_FATAL_FAILURE.
  void start_cluster(const std::string& pools_file, ClusterSetup setup = {});
  fs::path in_process_log() const { return work_dir_ / "in-process.log"; }
  // The kubeconfig of the chart's ServiceAccount, which the controller uses.
  fs::path controller_kubeconfig() const { return work_dir_ / "controller.kubeconfig"; }
  // The chart's release namespace, where its Role and ServiceAccount are.
  static constexpr const char* kControllerNamespace = "depl-system";
  // Runs the controller in a thread until stop_controller(). `progress_port` 0: any port.
  // The solver the controller runs: `solve_` when set (before start_controller), else the real one.
  void start_controller(std::uint16_t progress_port = 0);
  void stop_controller();
  std::string progress_url() const { return progress_url_; }
  std::string metrics_url() const { return metrics_url_; }

  // testdata/<file> as JSON, named `name`, every model's pods paced at `epoch_seconds`.
  json job_from(const std::string& file, const std::string& name, double epoch_seconds) const;
  json create_job(const json& job);
  json get_job(const std::string& name);
  json merge_patch_job(const std::string& name, const json& patch);
  // Polls the job until `done(job)` or kWait; fails the test (not fatally) with `what` and the
  // last job seen on a timeout. Returns the last job seen.
  json wait_job(const std::string& name, const std::function<bool(const json&)>& done,
                const std::string& what, std::chrono::seconds timeout = kWait);
  // Waits until the job is Succeeded or Failed; expects Succeeded.
  json wait_succeeded(const std::string& name);
  // Removes the pod's scheduling gates, as a queue does when it admits the pod.
  bool admit(const json& pod);
  // Admits every gated worker of job `name` as it appears, as Kueue would, until the job is
  // Succeeded or Failed (up to 120 s); returns the last job seen.
  json wait_ended_admitting_gated(const std::string& name);
  // Polls `done()` until true or the timeout; returns whether it became true.
  bool wait_until(const std::function<bool()>& done, std::chrono::seconds timeout = kWait);

  std::vector<json> list(const kube::ResourceType& type, const std::string& label_selector = "");
  std::vector<json> pods_of(const std::string& job);
  // Events about `involved` (the job), oldest first.
  std::vector<json> events_of(const std::string& involved);
  bool has_event(const std::string& involved, const std::string& reason);

  // A node of pool `pool` with `gpus` GPUs, labelled and annotated like the dev cluster's own.
  void add_node(const std::string& name, const std::string& pool, int gpus);

  bool kubectl_installed();
  devcluster::testing::CommandResult kubectl(std::vector<std::string> args,
                                             std::chrono::seconds timeout = kWait);

  std::unique_ptr<devcluster::DevCluster> cluster_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<PodRecorder> pods_;
  controller::SolveFunction solve_;
  // The controller's --spot-capacity-wait when set (before start_controller).
  std::optional<std::chrono::seconds> spot_capacity_wait_;
  fs::path work_dir_;

 private:
  void capture_log(const fs::path& file);
  void install_controller_identity(const std::function<void(std::vector<json>&)>& edit);
  void end_log_capture();

  bool owns_work_dir_ = false;  // made here (to capture the log from the start), removed here
  std::shared_ptr<spdlog::logger> uncaptured_logger_;
  std::stop_source controller_stop_;
  std::jthread controller_;
  std::atomic<bool> controller_ready_{false};
  std::atomic<bool> controller_failed_{false};
  std::string controller_error_;
  std::string progress_url_;
  std::string metrics_url_;
};

}  // namespace depl::e2e
