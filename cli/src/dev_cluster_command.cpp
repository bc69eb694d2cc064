// `kubectl-depl dev-cluster`: runs the embedded Kubernetes-compatible API server with simulated
// node pools in the foreground, prints `ready <url> kubeconfig=<file>` once serving, and stops
// cleanly (killing the containers it started) on SIGINT or SIGTERM.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "depl/devcluster/dev_cluster.hpp"

namespace depl::cli {
namespace {

struct DevClusterArgs {
  std::string pools;
  int port = 0;
  std::string kubeconfig_out;
  bool insecure_http = false;
  std::vector<std::string> image_map;
  double pod_seconds = 5;
  std::string work_dir;
  bool kueue_pod_webhook = false;
  bool coscheduling = false;
  bool workload_scheduling = false;
};

// Finds `name` the way execvp would, so a bad --image-map fails now, not when a pod starts.
bool is_runnable(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

int run_dev_cluster(const DevClusterArgs& args) {
  // Logs go to stderr: stdout carries only the ready line.
  spdlog::set_default_logger(spdlog::stderr_color_mt("dev-cluster"));
  devcluster::DevClusterOptions options;
  options.pools_file = args.pools;
  if (args.port < 0 || args.port > 65535) {
    std::cerr << "error: --port: must be between 0 and 65535\n";
    return kExitBadInput;
  }
  options.port = static_cast<std::uint16_t>(args.port);
  options.insecure_http = args.insecure_http;
  options.kueue_pod_webhook = args.kueue_pod_webhook;
  options.coscheduling = args.coscheduling;
  options.workload_scheduling = args.workload_scheduling;
  options.kubeconfig_path = args.kubeconfig_out;
  options.work_dir = args.work_dir;
  if (!std::isfinite(args.pod_seconds)) {
    std::cerr << "error: --pod-seconds: must be a number of seconds\n";
    return kExitBadInput;
  }
  options.simulated_pod_duration =
      std::chrono::milliseconds(static_cast<long long>(args.pod_seconds * 1000));
  for (const auto& entry : args.image_map) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      std::cerr << "error: --image-map: expected IMAGE=EXECUTABLE, got \"" << entry << "\"\n";
      return kExitBadInput;
    }
    std::string executable = entry.substr(eq + 1);
    if (!is_runnable(executable)) {
      std::cerr << "error: --image-map " << entry << ": " << executable
                << " is not an executable file\n";
      return kExitBadInput;
    }
    if (executable.find('/') != std::string::npos) {
      executable = std::filesystem::absolute(executable).string();
    }
    options.image_map[entry.substr(0, eq)] = executable;
  }

  // Block the stop signals in every thread (the cluster's threads inherit the mask) and wait
  // for them here; container processes get a clean mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto cluster = devcluster::DevCluster::start(options);
  if (!cluster) {
    std::cerr << "error: " << cluster.error().message << '\n';
    return kExitBadInput;
  }
  std::cout << "ready " << (*cluster)->url() << " kubeconfig=" << (*cluster)->kubeconfig_path()
            << std::endl;
  int received = 0;
  sigwait(&stop_signals, &received);
  spdlog::info("event=devcluster_stopping signal={}", received == SIGINT ? "SIGINT" : "SIGTERM");
  (*cluster)->stop();
  return kExitOk;
}

}  // namespace

void add_dev_cluster_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DevClusterArgs>();
  auto* cmd = app.add_subcommand(
      "dev-cluster", "Run a kubectl-compatible API server with simulated node pools (foreground)");
  cmd->add_option("--pools", args->pools, "Pools file (YAML) describing the simulated nodes")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--port", args->port, "Port on 127.0.0.1 (0: any free port)");
  cmd->add_option("--kubeconfig-out", args->kubeconfig_out,
                  "Where to write the kubeconfig (default: in the work directory)");
  cmd->add_flag("--insecure-http", args->insecure_http,
                "Serve plain HTTP instead of HTTPS (requests without a token act as the admin)");
  cmd->add_option("--image-map", args->image_map,
                  "IMAGE=EXECUTABLE: run containers of IMAGE as local processes ('*' for all)")
      ->take_all();
  cmd->add_option("--pod-seconds", args->pod_seconds,
                  "How long simulated (unmapped) containers run before succeeding");
  cmd->add_option("--work-dir", args->work_dir,
                  "Directory for the kubeconfig and pod logs (default: a temporary directory)");
  cmd->add_flag("--kueue-pod-webhook", args->kueue_pod_webhook,
                "Create pods labelled kueue.x-k8s.io/queue-name held by Kueue's admission gate "
                "(remove the gate to admit them)");
  cmd->add_flag("--coscheduling", args->coscheduling,
                "Serve the PodGroup API (scheduling.x-k8s.io/v1alpha1) and bind the pods of a "
                "PodGroup all or nothing, as the coscheduling plugin does");
  cmd->add_flag("--workload-scheduling", args->workload_scheduling,
                "Serve Kubernetes' Workload and PodGroup API (scheduling.k8s.io/v1beta1) and bind "
                "the pods naming a gang PodGroup all or nothing, as kube-scheduler does");
  cmd->callback([args, &exit_code] { exit_code = run_dev_cluster(*args); });
}

}  // namespace depl::cli
