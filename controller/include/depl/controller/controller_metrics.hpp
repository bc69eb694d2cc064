// The controller's Prometheus metrics (names in docs/operations.md): declared once, and the
// gauges refreshed at every scrape from the job cache, the controller loop and the Event sender.
#pragma once

#include <cstdint>
#include <functional>

#include "depl/controller/controller_endpoints.hpp"
#include "depl/controller/metrics.hpp"
#include "depl/kube/runtime/controller.hpp"
#include "depl/kube/runtime/store.hpp"

namespace depl::controller {

// Declares the controller's metrics in `registry`.
void describe_controller_metrics(MetricsRegistry& registry);

// Adds the collector of depl_jobs, depl_reconcile_total, the work queue's gauges and
// depl_events_dropped_total. Everything given must outlive the registry's scrapes.
void collect_controller_metrics(MetricsRegistry& registry, const kube::Store& jobs,
                                const kube::Controller& controller,
                                std::function<std::uint64_t()> events_dropped);

// Adds the collector of the endpoints' connection metrics (depl_endpoint_*). `servers` must
// outlive the registry's scrapes.
void collect_endpoint_metrics(MetricsRegistry& registry, const EndpointServers& servers);

}  // namespace depl::controller
