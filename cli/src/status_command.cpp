// `kubectl depl status JOB`: reads a DependableTrainingJob from the cluster and shows its phase,
// conditions, plan in force, progress and predicted vs observed loss per epoch; optionally an SVG
// of the prediction with the observed losses.
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "depl/cli/cluster_access.hpp"
#include "depl/cli/job_status_view.hpp"
#include "depl/cli/output_format.hpp"

namespace depl::cli {
namespace {

struct StatusArgs {
  std::string job;
  ClusterFlags cluster;
  std::string output = "table";
  std::string plot_path;
};

int run_status(const StatusArgs& args) {
  auto format = parse_output_format(args.output);
  if (!format) {
    std::cerr << "error: " << format.error().message << '\n';
    return kExitBadInput;
  }
  auto access = connect_to_cluster(args.cluster);
  if (!access) {
    std::cerr << "error: " << access.error().message << '\n';
    return kExitBadInput;
  }
  auto job = fetch_training_job(*access, args.job);
  if (!job) {
    std::cerr << "error: " << job.error().message << '\n';
    return kExitFailure;
  }
  auto view = build_status_view(*job);
  if (!view) {
    std::cerr << "error: " << view.error().message << '\n';
    return kExitFailure;
  }
  if (*format == OutputFormat::Table) {
    std::cout << status_view_to_table(*view);
  } else {
    std::cout << render_document(status_view_to_json(*view), *format);
  }
  std::cout.flush();
  if (args.plot_path.empty()) return kExitOk;
  auto svg = status_plot_svg(*view);
  if (!svg) {
    std::cerr << "error: --plot: nothing written: " << svg.error().message << '\n';
    return kExitFailure;
  }
  std::ofstream out(args.plot_path, std::ios::binary | std::ios::trunc);
  out << *svg;
  out.close();
  if (!out) {
    std::cerr << "error: --plot: cannot write " << args.plot_path << '\n';
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void add_status_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* cmd = app.add_subcommand(
      "status", "Show a DependableTrainingJob: plan, progress, predicted vs observed loss");
  cmd->add_option("job", args->job, "name of the DependableTrainingJob")->required();
  cmd->add_option("-n,--namespace", args->cluster.namespace_,
                  "namespace (default: the context's namespace, else \"default\")");
  cmd->add_option("--kubeconfig", args->cluster.kubeconfig,
                  "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)");
  cmd->add_option("--context", args->cluster.context, "kubeconfig context (default: current)");
  cmd->add_option("-o,--output", args->output, "Output format: table, json or yaml")
      ->capture_default_str();
  cmd->add_option("--plot", args->plot_path,
                  "Write an SVG of the predicted loss with the observed losses to this file");
  cmd->callback([args, &exit_code] { exit_code = run_status(*args); });
}

}  // namespace depl::cli
