#include "depl/controller/controller_metrics.hpp"

#include "depl/controller/job_status.hpp"
#include "depl/controller/job_watches.hpp"

namespace depl::controller {

void describe_controller_metrics(MetricsRegistry& r) {
  using T = MetricsRegistry::Type;
  r.describe("depl_jobs", T::Gauge, "DependableTrainingJobs by phase.");
  r.describe("depl_reconcile_total", T::Counter,
             "Reconciles by outcome (success, requeue_after, requeue, error).");
  r.describe("depl_reconcile_duration_seconds", T::Histogram, "Time spent in one reconcile.");
  r.describe("depl_solver_duration_seconds", T::Histogram,
             "Time spent in the DepL solver per solve.");
  r.describe("depl_replans_total", T::Counter, "Changes of plan (first plans included).");
  r.describe("depl_reconcile_awaiting_creates_total", T::Counter,
             "Reconciles put off until the caches showed the pods and Services just created.");
  r.describe("depl_progress_reports_total", T::Counter, "Progress reports answered, by HTTP code.");
  r.describe("depl_workqueue_depth", T::Gauge, "Keys waiting in the work queue.");
  r.describe("depl_workqueue_adds_total", T::Counter, "Keys added to the work queue.");
  r.describe("depl_workqueue_retries_total", T::Counter, "Rate-limited re-adds to the work queue.");
  r.describe("depl_api_requests_total", T::Counter,
             "Requests to the Kubernetes API by verb (HTTP method, or WATCH) and code (0: no "
             "answer), retries included.");
  r.describe("depl_api_request_duration_seconds", T::Histogram,
             "Kubernetes API request latency by verb.");
  r.describe("depl_events_dropped_total", T::Counter,
             "Events not recorded because too many were waiting to be sent, or at shutdown.");
  r.describe("depl_endpoint_connections", T::Gauge,
             "Connections open now to the controller's endpoints, by endpoint (progress, "
             "metrics, health).");
  r.describe("depl_endpoint_connections_total", T::Counter,
             "Connections accepted by the controller's endpoints, by endpoint.");
  r.describe("depl_endpoint_refused_total", T::Counter,
             "Connections and requests answered 503 at once, by endpoint and reason "
             "(per_address: the address held its share; busy: every connection or handler busy).");
  r.describe("depl_endpoint_closed_total", T::Counter,
             "Connections the endpoints closed, by endpoint and reason (deadline: no whole "
             "request or answer in time; evicted: waiting longest when the cap was reached).");
  r.describe("depl_leader", T::Gauge,
             "1 while this replica leads (always 1 without --leader-elect).");
}

void collect_controller_metrics(MetricsRegistry& registry, const kube::Store& jobs,
                                const kube::Controller& controller,
                                std::function<std::uint64_t()> events_dropped) {
  registry.add_collector([&jobs, &controller, events_dropped](MetricsRegistry& m) {
    m.clear("depl_jobs");
    std::map<std::string, int> by_phase;
    for (const char* p : {phases::kPending, phases::kRunning, phases::kSucceeded, phases::kFailed,
                          phases::kSuspended}) {
      by_phase[p] = 0;
    }
    for (const auto& job : jobs.list()) {
      const std::string phase = phase_of(*job);
      by_phase[phase.empty() ? phases::kPending : phase] += 1;
    }
    for (const auto& [phase, n] : by_phase) m.set("depl_jobs", {{"phase", phase}}, n);
    const kube::ControllerMetrics cm = controller.metrics();
    m.clear("depl_reconcile_total");
    m.set("depl_reconcile_total", {{"outcome", "success"}},
          static_cast<double>(cm.reconcile_success));
    m.set("depl_reconcile_total", {{"outcome", "requeue_after"}},
          static_cast<double>(cm.reconcile_requeue_after));
    m.set("depl_reconcile_total", {{"outcome", "requeue"}},
          static_cast<double>(cm.reconcile_requeue));
    m.set("depl_reconcile_total", {{"outcome", "error"}}, static_cast<double>(cm.reconcile_errors));
    m.set("depl_workqueue_depth", {}, static_cast<double>(cm.queue.depth));
    m.set("depl_workqueue_adds_total", {}, static_cast<double>(cm.queue.adds_total));
    m.set("depl_workqueue_retries_total", {}, static_cast<double>(cm.queue.retries_total));
    m.set("depl_events_dropped_total", {},
          static_cast<double>(events_dropped ? events_dropped() : 0));
  });
}

void collect_endpoint_metrics(MetricsRegistry& registry, const EndpointServers& servers) {
  registry.add_collector([&servers](MetricsRegistry& m) {
    for (const auto& [endpoint, c] : servers.counts()) {
      m.set("depl_endpoint_connections", {{"endpoint", endpoint}}, static_cast<double>(c.open));
      m.set("depl_endpoint_connections_total", {{"endpoint", endpoint}},
            static_cast<double>(c.accepted));
      m.set("depl_endpoint_refused_total", {{"endpoint", endpoint}, {"reason", "per_address"}},
            static_cast<double>(c.refused_per_peer));
      m.set("depl_endpoint_refused_total", {{"endpoint", endpoint}, {"reason", "busy"}},
            static_cast<double>(c.refused_busy));
      m.set("depl_endpoint_closed_total", {{"endpoint", endpoint}, {"reason", "deadline"}},
            static_cast<double>(c.timed_out));
      m.set("depl_endpoint_closed_total", {{"endpoint", endpoint}, {"reason", "evicted"}},
            static_cast<double>(c.evicted));
    }
  });
}

}  // namespace depl::controller
