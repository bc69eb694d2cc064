// depl-controller: the operator's binary. Flags only; everything else is run_controller().
#include <malloc.h>
#if DEPL_TCMALLOC
#include <gperftools/malloc_extension.h>
#endif
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "depl/common/quantity.hpp"
#include "depl/controller/log_format.hpp"
#include "depl/controller/run_controller.hpp"
#include "depl/kube/runtime/termination_signals.hpp"

namespace {

// "15s", "500ms", "1.5s", "2m": a decimal number and one of ms, s, m, h.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [unit, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || !(value >= 0)) return std::nullopt;
  const std::string suffix(unit, end);
  double ms_per_unit = 0;
  for (const auto& [name, per_unit] :
       {std::pair{"ms", 1.0}, std::pair{"s", 1e3}, std::pair{"m", 60e3}, std::pair{"h", 3600e3}}) {
    if (suffix == name) ms_per_unit = per_unit;
  }
  if (ms_per_unit == 0) return std::nullopt;
  const double ms = value * ms_per_unit;
  if (ms > 1e12) return std::nullopt;
  return std::chrono::milliseconds(static_cast<long long>(ms + 0.5));
}

// The allocator's settings for a process of many threads that free each other's objects.
void tune_allocator() {
#if DEPL_TCMALLOC
  // tcmalloc lets its threads' caches hold up to 32 MiB of free memory in all. The controller's
  // threads free what others allocated (informers decode, workers drop), and with 10,000 pods
  // cached a burst of 1,000 jobs peaked 2 MiB higher in some runs; 8 MiB held every run at the
  // glibc build's peak for the same speed (docs/benchmarks.md, Scale). The environment variable
  // TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES still decides when it is set.
  if (std::getenv("TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES") == nullptr) {
    MallocExtension::instance()->SetNumericProperty("tcmalloc.max_total_thread_cache_bytes",
                                                    std::size_t{8} << 20);
  }
#else
  // Built with glibc's malloc (-DDEPL_TCMALLOC=OFF; the default build links tcmalloc, which has
  // no arenas). glibc gives each thread that allocates a heap of its own, up to 8 per core. The
  // controller's threads (informers, workers, endpoints) allocate and free each other's objects,
  // and every arena kept its own free memory: 2 arenas hold a burst of 1,000 jobs with 10,000
  // other pods cached in ~1.5 MiB less RSS, for no measurable CPU (docs/benchmarks.md, Scale).
  // The MALLOC_ARENA_MAX environment variable still decides when it is set.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) ::mallopt(M_ARENA_MAX, 2);
#endif
}

// The flags, and the texts of those that are parsed once CLI11 has read them.
struct Flags {
  depl::controller::ControllerConfig config;
  std::string log_format = "text";
  std::string rendezvous = "dns";
  bool all_namespaces = false;
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s";
  std::string spot_capacity_wait = "10m";
  std::string solve_time_budget = "10s";
  std::string solve_memory_budget = "96Mi";
};

void add_flags(CLI::App& app, Flags& f) {
  depl::controller::ControllerConfig& config = f.config;
  app.add_option("--kubeconfig", config.kubeconfig,
                 "kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster)");
  app.add_option("--context", config.context, "kubeconfig context");
  auto* ns =
      app.add_option("--namespace", config.watch_namespace, "watch jobs in this namespace only");
  app.add_flag("--all-namespaces", f.all_namespaces, "watch jobs in every namespace (the default)")
      ->excludes(ns);
  app.add_option("--metrics-addr", config.metrics_addr, "Prometheus metrics listen address")
      ->capture_default_str();
  app.add_option("--progress-addr", config.progress_addr, "worker progress endpoint listen address")
      ->capture_default_str();
  app.add_option("--progress-advertise-url", config.progress_advertise_url,
                 "URL workers report to (default: derived from --progress-addr)");
  app.add_option("--health-addr", config.health_addr, "/healthz and /readyz listen address")
      ->capture_default_str();
  app.add_flag("--leader-elect", config.leader_elect,
               "run leader election on a Lease (for more than one replica)");
  app.add_option("--leader-election-namespace", config.leader_election_namespace,
                 "namespace of the Lease (default: POD_NAMESPACE or depl-system)");
  app.add_option("--leader-elect-lease-duration", f.lease_duration,
                 "how long a standby waits, after it last saw the Lease renewed, before taking "
                 "it over (whole seconds in the Lease)")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", f.renew_deadline,
                 "the leader stops writing and leading when it could not renew for this long "
                 "(less than the lease duration)")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", f.retry_period,
                 "how often the leader renews and a standby tries to acquire (jittered up to "
                 "2.2x for standbys)")
      ->capture_default_str();
  app.add_option("--identity", config.identity,
                 "this replica's identity in the Lease and its User-Agent (default: hostname-pid)");
  app.add_option("--workers", config.workers, "concurrent reconciles")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--kube-api-qps", config.kube_api_qps,
                 "requests per second to the API server, on average (0: no client-side limit; the "
                 "API server's Priority and Fairness answers overload with 429 and Retry-After)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--kube-api-burst", config.kube_api_burst,
                 "requests the client may send at once above --kube-api-qps (when that is above 0)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--catalog-namespace", config.catalog_namespace,
                 "namespace of the depl-gpu-catalog ConfigMap");
  app.add_option("--checkpoint-root", config.checkpoint_root,
                 "override spec.checkpoint.path for every job (local dev clusters)");
  app.add_option("--rendezvous", f.rendezvous,
                 "how workers find rank 0: dns (a real cluster) or loopback (the dev cluster)")
      ->check(CLI::IsMember({"dns", "loopback"}))
      ->capture_default_str();
  app.add_flag("--gang-scheduling", config.gang_scheduling,
               "gang schedule the workers of multi-worker phases (a PodGroup of Kubernetes' "
               "scheduling.k8s.io API or else of the coscheduling plugin, where served) unless a "
               "job's spec.gangScheduling says otherwise");
  app.add_option("--log-format", f.log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--spot-capacity-wait", f.spot_capacity_wait,
                 "the longest a job waits for the spot pool of its running phase to get nodes "
                 "back after a reclaim took them all, before it is planned without it (0s: at "
                 "once; a deadline's slack may end the wait sooner)")
      ->capture_default_str();
  app.add_option("--solve-time-budget", f.solve_time_budget,
                 "time one solve may take (0s: no limit); past it the job gets the best plan found "
                 "so far, marked budgetLimited in its status")
      ->capture_default_str();
  app.add_option("--solve-memory-budget", f.solve_memory_budget,
                 "working memory of one solve, a quantity (0: no limit); up to --workers solves "
                 "run at once")
      ->capture_default_str();
}

// Parses the flags CLI11 keeps as text (durations, quantities, the rendezvous mode) into the
// config; the error names the flag.
std::optional<std::string> apply_flag_texts(Flags& f) {
  depl::controller::ControllerConfig& config = f.config;
  if (auto parsed = parse_duration(f.solve_time_budget)) {
    config.solve_time_budget = *parsed;
    // A budget under half a millisecond is one millisecond, not "no limit".
    const bool nonzero = f.solve_time_budget.find_first_of("123456789") != std::string::npos;
    if (parsed->count() == 0 && nonzero) config.solve_time_budget = std::chrono::milliseconds(1);
  } else {
    return fmt::format("--solve-time-budget {}: want a duration like 10s or 500ms",
                       f.solve_time_budget);
  }
  if (auto parsed = parse_duration(f.spot_capacity_wait)) {
    config.spot_capacity_wait = std::chrono::ceil<std::chrono::seconds>(*parsed);
  } else {
    return fmt::format("--spot-capacity-wait {}: want a duration like 10m or 90s",
                       f.spot_capacity_wait);
  }
  // At most 1Ei: any larger number of bytes is no limit in practice and may not fit a size_t.
  if (auto bytes = depl::parse_quantity(f.solve_memory_budget);
      bytes && *bytes >= 0 && *bytes <= 0x1p60) {
    config.solve_memory_budget = static_cast<std::size_t>(*bytes);
  } else {
    return fmt::format("--solve-memory-budget {}: want a quantity like 96Mi",
                       f.solve_memory_budget);
  }
  for (auto [flag, text, out] :
       {std::tuple{"--leader-elect-lease-duration", &f.lease_duration, &config.lease_duration},
        std::tuple{"--leader-elect-renew-deadline", &f.renew_deadline, &config.renew_deadline},
        std::tuple{"--leader-elect-retry-period", &f.retry_period, &config.retry_period}}) {
    auto parsed = parse_duration(*text);
    if (!parsed || parsed->count() <= 0) {
      return fmt::format("{} {}: want a duration like 15s or 500ms", flag, *text);
    }
    *out = *parsed;
  }
  config.rendezvous = f.rendezvous == "loopback" ? depl::controller::RendezvousMode::Loopback
                                                 : depl::controller::RendezvousMode::Dns;
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  tune_allocator();
  Flags flags;
  CLI::App app{"depl-controller: reconciles DependableTrainingJobs (depl.dev/v1alpha1)"};
  add_flags(app, flags);
  CLI11_PARSE(app, argc, argv);
  if (auto bad = apply_flag_texts(flags)) {
    spdlog::error("msg=\"cannot start\" error=\"{}\"", *bad);
    return 2;
  }
  auto formatter = depl::controller::log_formatter(flags.log_format);
  if (!formatter) {
    spdlog::error("msg=\"cannot start\" error=\"{}\"", formatter.error().message);
    return 2;
  }
  spdlog::set_formatter(std::move(*formatter));
  std::stop_source stop;
  depl::kube::TerminationSignals signals(stop);
  auto result = depl::controller::run_controller(flags.config, stop.get_token());
  if (!result) {
    spdlog::error("msg=\"cannot start\" error=\"{}\"", result.error().message);
    return 2;
  }
  spdlog::info("msg=\"stopped\"");
  return 0;
}
