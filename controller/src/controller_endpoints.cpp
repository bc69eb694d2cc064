#include "depl/controller/controller_endpoints.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace depl::controller {
namespace {

std::string url_of(const std::string& host, int port) {
  const std::string shown = host == "0.0.0.0" ? "127.0.0.1" : host;
  return fmt::format("http://{}:{}", shown, port);
}

Expected<std::unique_ptr<HttpServer>> serve(const ListenAddress& address, const char* flag,
                                            HttpHandler handler, int handler_threads = 0) {
  HttpServerOptions options;
  options.address = address.first;
  options.port = address.second;
  options.handler_threads = handler_threads;
  auto server = HttpServer::start(options, std::move(handler));
  if (!server) return error(fmt::format("{}: {}", flag, server.error().message));
  return server;
}

}  // namespace

HttpHandler progress_handler(ProgressEndpoint& progress, MetricsRegistry& metrics,
                             std::function<bool()> leading) {
  return [&progress, &metrics, leading = std::move(leading)](const HttpRequestView& r) {
    HttpReply reply =
        leading && !leading()
            ? HttpReply{503,
                        "application/json",
                        nlohmann::json{
                            {"error", "this replica is not the leader; retry the report"}}
                            .dump(),
                        {{"Retry-After", "1"}}}
            : progress.handle(r);
    metrics.add("depl_progress_reports_total", {{"code", std::to_string(reply.status)}});
    return reply;
  };
}

HttpHandler metrics_handler(MetricsRegistry& metrics) {
  return [&metrics](const HttpRequestView& r) -> HttpReply {
    if (r.target != "/metrics") return {404, "text/plain", "not found: try /metrics\n", {}};
    return {200, "text/plain; version=0.0.4", metrics.render(), {}};
  };
}

HttpHandler health_handler(const std::atomic<bool>& ready) {
  return [&ready](const HttpRequestView& r) -> HttpReply {
    if (r.target == "/healthz") return {200, "text/plain", "ok\n", {}};
    if (r.target == "/readyz") {
      return ready ? HttpReply{200, "text/plain", "ok\n", {}}
                   : HttpReply{503, "text/plain", "caches not synced yet\n", {}};
    }
    return {404, "text/plain", "not found: try /healthz or /readyz\n", {}};
  };
}

Expected<std::unique_ptr<EndpointServers>> EndpointServers::start(
    const EndpointAddresses& addresses, HttpHandler progress, HttpHandler metrics,
    HttpHandler health) {
  // Reports read and write the job through the API server: they wait on threads of their own,
  // never on the I/O thread that accepts and reads the next ones.
  auto progress_server =
      serve(addresses.progress, "--progress-addr", std::move(progress), /*handler_threads=*/4);
  if (!progress_server) return unexpected(progress_server.error());
  auto metrics_server = serve(addresses.metrics, "--metrics-addr", std::move(metrics));
  if (!metrics_server) return unexpected(metrics_server.error());
  auto health_server = serve(addresses.health, "--health-addr", std::move(health));
  if (!health_server) return unexpected(health_server.error());
  return std::unique_ptr<EndpointServers>(
      new EndpointServers(addresses, std::move(*progress_server), std::move(*metrics_server),
                          std::move(*health_server)));
}

EndpointServers::EndpointServers(EndpointAddresses addresses, std::unique_ptr<HttpServer> progress,
                                 std::unique_ptr<HttpServer> metrics,
                                 std::unique_ptr<HttpServer> health)
    : addresses_(std::move(addresses)),
      progress_(std::move(progress)),
      metrics_(std::move(metrics)),
      health_(std::move(health)) {}

EndpointServers::~EndpointServers() {
  stop();
}

std::string EndpointServers::progress_url() const {
  return url_of(addresses_.progress.first, progress_->port());
}
std::string EndpointServers::metrics_url() const {
  return url_of(addresses_.metrics.first, metrics_->port());
}
std::string EndpointServers::health_url() const {
  return url_of(addresses_.health.first, health_->port());
}

std::vector<std::pair<const char*, HttpServerCounts>> EndpointServers::counts() const {
  return {{"progress", progress_->counts()},
          {"metrics", metrics_->counts()},
          {"health", health_->counts()}};
}

void EndpointServers::stop_progress() {
  progress_->stop();
}

void EndpointServers::stop() {
  progress_->stop();
  metrics_->stop();
  health_->stop();
}

}  // namespace depl::controller
