// `kubectl-depl profile`: measures loss profiles of a worker's variants (and the loss jumps of
// switches between them) from short seeded runs on this machine (the reference worker in this
// process, or --worker as a command) or, with --in-cluster, as pods of --image in a cluster, and
// prints the `models` / `switching` YAML to paste into a DependableTrainingJob. Any worker that
// follows the standalone half of the worker contract (docs/worker-contract.md section 6) can be
// profiled.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <csignal>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "depl/cli/cluster_access.hpp"
#include "depl/cli/command_run_executor.hpp"
#include "depl/cli/local_run_executor.hpp"
#include "depl/cli/pod_run_executor.hpp"
#include "depl/cli/profile_report.hpp"
#include "depl/cli/profiling.hpp"

namespace depl::cli {
namespace {

namespace fs = std::filesystem;

struct ProfileArgs {
  ProfileRequest request;
  std::string variants = "full,half,quarter,eighth";
  std::vector<std::string> switches;
  std::string output_path;
  std::string plot_path;
  std::string command_line;
  std::string worker_command;  // --worker: a local command instead of the in-process worker
  bool in_cluster = false;
  ClusterFlags cluster;
  PodRunOptions pods;
};

// Ctrl-C during --in-cluster: the executor sees it at its next poll and deletes its pods.
std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) {
  g_interrupted.store(true);
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  for (char c : list + ",") {
    if (c == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  return out;
}

// "[######------]  5/12  full run 2/3": redrawn in place on a terminal, one line per run
// otherwise (logs, CI).
void show_progress(int done, int total, const std::string& what) {
  constexpr int kWidth = 24;
  const int filled = total > 0 ? done * kWidth / total : kWidth;
  const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                          std::string(static_cast<std::size_t>(kWidth - filled), '-');
  if (isatty(STDERR_FILENO) != 0) {
    fmt::print(stderr, "\r[{}] {:>3}/{}  {:<36}", bar, done, total, what);
    if (done == total) fmt::print(stderr, "\n");
  } else {
    fmt::print(stderr, "[{}] {}/{} {}\n", bar, done, total, what);
  }
  std::fflush(stderr);
}

bool write_file(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::cerr << "error: " << flag << ": cannot write " << path << '\n';
  return static_cast<bool>(out);
}

int run_profile_command(ProfileArgs& args) {
  // The worker logs at info level; the terminal shows the progress bar and the YAML only.
  auto logger = spdlog::stderr_logger_mt("kubectl-depl-profile");
  logger->set_level(spdlog::level::warn);
  spdlog::set_default_logger(logger);

  args.request.variants = split_list(args.variants);
  // The reference worker's variants are known; another worker's names are its own business.
  args.request.image = args.pods.image;
  if (!args.worker_command.empty()) {
    args.request.worker = args.worker_command;
    args.request.known_variants.clear();
  } else if (args.in_cluster && args.pods.image != PodRunOptions{}.image) {
    args.request.worker = "the worker of image " + args.pods.image;
    args.request.known_variants.clear();
  }
  for (const auto& text : args.switches) {
    auto point = parse_switch_point(text);
    if (!point) {
      std::cerr << "error: " << point.error().message << '\n';
      return kExitBadInput;
    }
    args.request.switches.push_back(*point);
  }
  if (auto ok = validate_profile_request(args.request); !ok) {
    std::cerr << "error: " << ok.error().message << '\n';
    return kExitBadInput;
  }
  std::error_code ec;
  // In a cluster --data-dir is a path inside the pods: nothing to check here.
  if (!args.in_cluster && !fs::is_directory(args.request.data_dir, ec)) {
    std::cerr << "error: --data-dir " << args.request.data_dir
              << ": no such directory (install the Debian package dataset-fashion-mnist: make "
                 "deps)\n";
    return kExitBadInput;
  }
  if (args.in_cluster && args.pods.parallel < 1) {
    std::cerr << "error: --parallel: must be at least 1, got " << args.pods.parallel << '\n';
    return kExitBadInput;
  }
  char work_template[] = "/tmp/depl-profile-XXXXXX";
  const char* work_dir = mkdtemp(work_template);
  if (work_dir == nullptr) {
    std::cerr << "error: cannot create a work directory under /tmp\n";
    return kExitFailure;
  }
  args.request.work_dir = work_dir;
  Expected<ProfileResult> result = unexpected(Error{"not run"});
  if (args.in_cluster) {
    auto access = connect_to_cluster(args.cluster);
    if (!access) {
      fs::remove_all(work_dir, ec);
      std::cerr << "error: " << access.error().message << '\n';
      return kExitBadInput;
    }
    args.pods.namespace_ = access->namespace_;
    // The work directory's unique name labels this profile's pods; without a claim it is also
    // the hostPath the switch pods share (on the dev cluster pods are processes of this machine).
    args.pods.session = fs::path(work_dir).filename().string();
    args.pods.checkpoint_host_dir = work_dir;
    args.pods.cancelled = &g_interrupted;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    PodRunExecutor executor(access->client, args.pods);
    result = run_profile(args.request, executor, show_progress);
  } else if (!args.worker_command.empty()) {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    CommandRunExecutor executor(split_command(args.worker_command), work_dir, &g_interrupted);
    result = run_profile(args.request, executor, show_progress);
  } else {
    LocalRunExecutor executor(work_dir);
    result = run_profile(args.request, executor, show_progress);
  }
  fs::remove_all(work_dir, ec);
  if (!result) {
    std::cerr << "error: " << result.error().message << '\n';
    return g_interrupted.load() ? 130 : kExitFailure;
  }
  const std::string yaml = profile_to_yaml(*result, args.command_line);
  if (args.output_path.empty()) {
    std::cout << yaml;
    std::cout.flush();
  } else if (!write_file(args.output_path, yaml, "-o")) {
    return kExitFailure;
  }
  if (!args.plot_path.empty()) {
    auto svg = profile_plot_svg(*result);
    if (!svg) {
      std::cerr << "error: --plot: " << svg.error().message << '\n';
      return kExitFailure;
    }
    if (!write_file(args.plot_path, *svg, "--plot")) return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Measure loss profiles and switch jumps of a worker's variants (short seeded runs here, "
      "or as pods with --in-cluster) and print the models/switching YAML for a job");
  cmd->add_option("--variants", args->variants,
                  "comma-separated variants (the reference worker's: full, half, quarter, eighth)")
      ->capture_default_str();
  cmd->add_option("--runs", args->request.runs, "seeded runs per variant and per switch")
      ->capture_default_str();
  cmd->add_option("--epochs", args->request.epochs, "epochs per run (at least 3)")
      ->capture_default_str();
  cmd->add_option("--samples", args->request.samples, "training samples per epoch")
      ->capture_default_str();
  cmd->add_option("--exponent-samples", args->request.exponent_samples,
                  "also profile at this many samples per epoch and fit dataExponent from the two "
                  "floors (0: off)")
      ->capture_default_str();
  cmd->add_option("--noisy-samples", args->request.noisy_samples,
                  "also profile every variant on --samples clean samples plus a shard of this "
                  "many with a share --noisy-label-share of wrong labels, and fit "
                  "labelNoiseFloor from it (0: off)")
      ->capture_default_str();
  cmd->add_option("--noisy-label-share", args->request.noisy_label_share,
                  "the share of wrong labels in the --noisy-samples shard")
      ->capture_default_str();
  cmd->add_option("--validation-samples", args->request.validation_samples,
                  "validation loss over the first N test images")
      ->capture_default_str();
  cmd->add_option("--seed", args->request.seed, "seed of the first run (run k uses seed + k)")
      ->capture_default_str();
  cmd->add_option("--switch", args->switches,
                  "FROM:TO@EPOCH: measure the loss jump of switching FROM to TO after EPOCH "
                  "epochs (repeatable)");
  cmd->add_option("--data-dir", args->request.data_dir, "directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output_path, "write the YAML to this file (default stdout)");
  cmd->add_option("--plot", args->plot_path,
                  "write an SVG of the measured curves and the fitted model to this file");
  CLI::Option* in_cluster =
      cmd->add_flag("--in-cluster", args->in_cluster,
                    "run every training as a pod (restartPolicy Never) of --image in the cluster "
                    "instead of in this process; --data-dir is then the path inside the pods");
  cmd->add_option("--worker", args->worker_command,
                  "run every training as this command with the standalone worker flags (e.g. "
                  "\"/usr/bin/python3 examples/pytorch/train.py\") instead of the reference "
                  "worker in this process")
      ->excludes(in_cluster);
  cmd->add_option("--kubeconfig", args->cluster.kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
      ->needs(in_cluster);
  cmd->add_option("--context", args->cluster.context, "kubeconfig context (default: current)")
      ->needs(in_cluster);
  cmd->add_option("-n,--namespace", args->cluster.namespace_,
                  "namespace of the pods (default: the context's, else \"default\")")
      ->needs(in_cluster);
  cmd->add_option("--image", args->pods.image,
                  "the models' image in the YAML; with --in-cluster, the image the pods run (its "
                  "entrypoint a worker of the standalone contract)")
      ->capture_default_str();
  cmd->add_option("--parallel", args->pods.parallel, "pods running at once")
      ->capture_default_str()
      ->needs(in_cluster);
  cmd->add_option_function<int>(
         "--pod-start-timeout",
         [args](int seconds) { args->pods.start_timeout = std::chrono::seconds(seconds); },
         "seconds a pod may stay Pending before the profile fails (0: wait for ever)")
      ->default_str("600")
      ->check(CLI::NonNegativeNumber)
      ->needs(in_cluster);
  cmd->add_option("--checkpoint-volume", args->pods.checkpoint_claim,
                  "PersistentVolumeClaim the two pods of a switch run share its "
                  "checkpoint on (mounted at /depl-profile; ReadWriteMany, or ReadWriteOnce with "
                  "one node). Default: a hostPath directory, shared only by pods on one node (the "
                  "dev cluster's pods are local processes, so it works there)")
      ->needs(in_cluster);
  cmd->callback([args, &exit_code, cmd] {
    std::string line = "kubectl-depl profile";
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() == 0 || option->get_name() == "--help") continue;
      if (option->get_expected_min() == 0) {  // a flag
        line += " " + option->get_name();
        continue;
      }
      for (const std::string& value : option->results()) {
        // Quoted when a shell would split it (a --worker command), so the line can be rerun.
        const bool quote = value.find_first_of(" \t\"'{}$") != std::string::npos;
        line += " " + option->get_name() + " " + (quote ? "'" + value + "'" : value);
      }
    }
    args->command_line = line;
    exit_code = run_profile_command(*args);
  });
}

}  // namespace depl::cli
