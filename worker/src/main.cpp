// depl-reference-worker: a real (small) distributed trainer for DepL. Standalone it trains from its
// flags and prints one JSON line per epoch; with DEPL_JOB set it follows the operator's worker
// contract (docs/worker-contract.md). Logs go to stderr, results to stdout.
#include <signal.h>

#include <atomic>
#include <iostream>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "depl/worker/progress_client.hpp"
#include "depl/worker/worker_config.hpp"
#include "depl/worker/worker_run.hpp"

namespace {

// Set by SIGTERM (a pod being deleted, its node reclaimed): the run stops after its current step,
// checkpoints it and exits 143.
std::atomic<bool> g_terminate{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_sigterm(int) { g_terminate.store(true, std::memory_order_relaxed); }

void install_sigterm_handler() {
  struct sigaction action {};
  action.sa_handler = on_sigterm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_logger_st("depl-reference-worker"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");

  auto parsed =
      depl::worker::parse_worker_command_line(argc, argv, depl::worker::process_environment());
  if (!parsed) {
    std::cerr << "depl-reference-worker: " << parsed.error().message << '\n';
    return 2;
  }
  if (!parsed->help.empty()) {
    std::cout << parsed->help;
    return 0;
  }
  auto& config = parsed->config;
  install_sigterm_handler();
  config.termination_requested = [] { return g_terminate.load(std::memory_order_relaxed); };
  if (config.bench) {
    auto ok = depl::worker::run_benchmark(config, std::cout);
    if (!ok) {
      std::cerr << "depl-reference-worker: " << ok.error().message << '\n';
      return 1;
    }
    return 0;
  }
  auto summary = depl::worker::run_worker(config, std::cout);
  if (!summary) {
    spdlog::error("event=failed error=\"{}\"", summary.error().message);
    std::cerr << "depl-reference-worker: " << summary.error().message << '\n';
    return 1;
  }
  if (summary->progress_unreachable) {
    spdlog::error("event=progress_unreachable rank={} last_epoch={} exit_code={}", config.rank,
                  summary->last_epoch, depl::worker::kExitProgressUnreachable);
    return depl::worker::kExitProgressUnreachable;
  }
  if (summary->terminated) {
    spdlog::info("event=terminated rank={} epoch={} step={} exit_code={}", config.rank,
                 summary->last_epoch, summary->stopped_at_step, depl::worker::kExitTerminated);
    return depl::worker::kExitTerminated;
  }
  if (config.rank == 0) {
    spdlog::info("event=done first_epoch={} last_epoch={} stopped_by_controller={} loss={:.4f}",
                 summary->first_epoch, summary->last_epoch, summary->stopped_by_controller,
                 summary->last.loss);
  } else {  // only rank 0 evaluates
    spdlog::info("event=done rank={} first_epoch={} last_epoch={} stopped_by_controller={}",
                 config.rank, summary->first_epoch, summary->last_epoch,
                 summary->stopped_by_controller);
  }
  return 0;
}
