// The controller's three HTTP endpoints: progress reports from workers (progress.hpp), Prometheus
// metrics (/metrics) and probes (/healthz, /readyz). They listen before the caches sync, so
// probes answer from the start; the progress endpoint stops first at shutdown (see stop_progress).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/controller/http_server.hpp"
#include "depl/controller/metrics.hpp"
#include "depl/controller/progress.hpp"

namespace depl::controller {

using ListenAddress = std::pair<std::string, int>;

struct EndpointAddresses {
  ListenAddress metrics;
  ListenAddress progress;
  ListenAddress health;
};

// Serves reports through `progress`, counting each answer in depl_progress_reports_total. While
// `leading` says false (a standby, whose writes are fenced) every report is answered 503 with
// Retry-After: the worker retries, and the Service sends the retry to a replica at random until
// it reaches the leader. An empty `leading` always leads.
HttpHandler progress_handler(ProgressEndpoint& progress, MetricsRegistry& metrics,
                             std::function<bool()> leading);
// /metrics from `metrics`.
HttpHandler metrics_handler(MetricsRegistry& metrics);
// /healthz always; /readyz once `ready`.
HttpHandler health_handler(const std::atomic<bool>& ready);

class EndpointServers {
 public:
  // Starts the three servers; the error names the flag of the address that failed.
  static Expected<std::unique_ptr<EndpointServers>> start(const EndpointAddresses& addresses,
                                                          HttpHandler progress, HttpHandler metrics,
                                                          HttpHandler health);
  ~EndpointServers();

  // "http://<host>:<bound port>" of each (0.0.0.0 shown as 127.0.0.1).
  std::string progress_url() const;
  std::string metrics_url() const;
  std::string health_url() const;
  // Each server's connection counts, by endpoint name (progress, metrics, health).
  std::vector<std::pair<const char*, HttpServerCounts>> counts() const;
  int metrics_port() const { return metrics_->port(); }
  int health_port() const { return health_->port(); }

  // The progress endpoint closes first: while it listens it needs the API client, and a report
  // answered during shutdown without it would be refused (404) and end its worker, where a refused
  // connection makes the worker retry until the next controller listens.
  void stop_progress();
  void stop();

 private:
  EndpointServers(EndpointAddresses addresses, std::unique_ptr<HttpServer> progress,
                  std::unique_ptr<HttpServer> metrics, std::unique_ptr<HttpServer> health);

  EndpointAddresses addresses_;
  std::unique_ptr<HttpServer> progress_;
  std::unique_ptr<HttpServer> metrics_;
  std::unique_ptr<HttpServer> health_;
};

}  // namespace depl::controller
