#include "depl/controller/run_controller.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <atomic>
#include <cstdlib>

#include "depl/common/clock.hpp"
#include "depl/common/json_fields.hpp"
#include "depl/common/random.hpp"
#include "depl/controller/client_job_access.hpp"
#include "depl/controller/controller_caches.hpp"
#include "depl/controller/controller_election.hpp"
#include "depl/controller/controller_endpoints.hpp"
#include "depl/controller/controller_metrics.hpp"
#include "depl/controller/job_reconciler.hpp"
#include "depl/controller/job_watches.hpp"
#include "depl/controller/progress.hpp"
#include "depl/kube/beast_transport.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/in_cluster.hpp"
#include "depl/kube/kubeconfig.hpp"
#include "depl/kube/runtime/async_event_recorder.hpp"
#include "depl/kube/runtime/controller.hpp"
#include "depl/kube/runtime/event_recorder.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

kube::EventRecorderOptions event_options(const std::string& identity) {
  kube::EventRecorderOptions options;
  options.component = "depl-controller";
  options.reporting_instance = identity;
  return options;
}

CacheOptions cache_options(const ControllerConfig& config, const std::string& home_namespace) {
  CacheOptions options;
  options.watch_namespace = config.watch_namespace;
  options.catalog_namespace =
      config.catalog_namespace.empty() ? home_namespace : config.catalog_namespace;
  return options;
}

Expected<kube::ConnectionConfig> connect_config(const ControllerConfig& config) {
  if (config.kubeconfig.empty() && std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    auto in_cluster = kube::in_cluster_config();
    if (!in_cluster) return error("in-cluster config: " + in_cluster.error().message);
    return in_cluster;
  }
  kube::KubeconfigLoadOptions load;
  load.explicit_path = config.kubeconfig;
  auto loaded = kube::load_kubeconfig(load);
  if (!loaded) return error(loaded.error().message);
  kube::ResolveOptions resolve;
  resolve.context = config.context;
  auto resolved = kube::resolve_kubeconfig(*loaded, resolve);
  if (!resolved) return error(resolved.error().message);
  return resolved;
}

Expected<EndpointAddresses> listen_addresses(const ControllerConfig& config) {
  auto metrics = parse_listen_address(config.metrics_addr);
  if (!metrics) return error("--metrics-addr " + metrics.error().message);
  auto progress = parse_listen_address(config.progress_addr);
  if (!progress) return error("--progress-addr " + progress.error().message);
  auto health = parse_listen_address(config.health_addr);
  if (!health) return error("--health-addr " + health.error().message);
  return EndpointAddresses{*metrics, *progress, *health};
}

std::string own_namespace() {
  if (const char* ns = std::getenv("POD_NAMESPACE")) return ns;
  return "depl-system";
}

std::string default_identity() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return fmt::format("{}-{}", host, ::getpid());
}

// depl-controller's parts, made in dependency order and torn down in reverse: the API client and
// its write fence, the caches, the Event sender, the progress endpoint and the HTTP servers, the
// reconciler and the controller loop that drives it.
class ControllerManager {
 public:
  static Expected<std::unique_ptr<ControllerManager>> create(const ControllerConfig& config);
  Expected<void> run(std::stop_token stop,
                     const std::function<void(const ControllerEndpoints&)>& on_ready);

 private:
  ControllerManager(const ControllerConfig& config, kube::ConnectionConfig connection,
                    std::shared_ptr<kube::Transport> transport);
  kube::ClientOptions client_options();
  // The endpoints listen and the reconciler knows where workers report; false names the error.
  Expected<void> start_endpoints(const EndpointAddresses& addresses);
  void wire_controller();
  kube::LeaderElectionConfig election_config() const;
  void shut_down();

  const ControllerConfig config_;
  const kube::ConnectionConfig connection_;
  const std::shared_ptr<kube::Transport> transport_;
  const std::string identity_;
  const std::string home_namespace_;
  SystemClock clock_;
  std::shared_ptr<SystemClock> shared_clock_ = std::make_shared<SystemClock>();
  RandomSource random_ = RandomSource::from_entropy();
  MetricsRegistry metrics_;
  WriteFence fence_;
  kube::Client client_;
  ControllerCaches caches_;
  kube::EventRecorder recorder_;
  kube::AsyncEventRecorder events_;  // a reconcile never waits for an Event to be sent
  std::atomic<kube::Controller*> controller_for_callbacks_{nullptr};
  ClientJobAccess access_;
  ProgressEndpoint progress_;
  std::atomic<bool> synced_{false};
  std::unique_ptr<EndpointServers> servers_;
  std::string advertised_progress_url_;
  std::unique_ptr<JobReconciler> reconciler_;
  std::unique_ptr<kube::Controller> controller_;
};

Expected<std::unique_ptr<ControllerManager>> ControllerManager::create(
    const ControllerConfig& config) {
  auto addresses = listen_addresses(config);
  if (!addresses) return unexpected(addresses.error());
  if (config.workers < 1)
    return error(fmt::format("--workers must be >= 1, got {}", config.workers));
  auto connection = connect_config(config);
  if (!connection) return unexpected(connection.error());
  auto transport = kube::BeastTransport::create(*connection);
  if (!transport) return error(transport.error().message);
  std::unique_ptr<ControllerManager> manager(
      new ControllerManager(config, std::move(*connection), std::move(*transport)));
  if (auto started = manager->start_endpoints(*addresses); !started) {
    return unexpected(started.error());
  }
  manager->wire_controller();
  return manager;
}

ControllerManager::ControllerManager(const ControllerConfig& config,
                                     kube::ConnectionConfig connection,
                                     std::shared_ptr<kube::Transport> transport)
    : config_(config),
      connection_(std::move(connection)),
      transport_(std::move(transport)),
      identity_(config.identity.empty() ? default_identity() : config.identity),
      home_namespace_(own_namespace()),
      client_(transport_, connection_.credentials, client_options()),
      caches_(client_, clock_, random_, cache_options(config, home_namespace_)),
      recorder_(client_, clock_, event_options(identity_)),
      events_(recorder_, clock_),
      access_(client_, caches_.jobs().store()),
      progress_(access_, clock_, [this](const std::string& ns, const std::string& name) {
        if (auto* c = controller_for_callbacks_.load()) c->queue().add({ns, name});
      }) {
  describe_controller_metrics(metrics_);
  metrics_.set("depl_leader", {}, config_.leader_elect ? 0 : 1);
}

kube::ClientOptions ControllerManager::client_options() {
  kube::ClientOptions options;
  options.clock = shared_clock_;
  // The API server's audit trail tells the replicas apart by their User-Agent.
  options.user_agent = fmt::format("depl-controller/0.1 (identity={})", identity_);
  options.default_namespace = connection_.default_namespace;
  options.rate_limit = {config_.kube_api_qps, config_.kube_api_burst};
  if (config_.leader_elect) options.write_fence = fence_.predicate();
  options.on_request = [this](const kube::RequestOutcome& r) {
    const std::string verb(r.watch ? "WATCH" : r.method);
    metrics_.add("depl_api_requests_total", {{"verb", verb}, {"code", std::to_string(r.code)}});
    metrics_.observe("depl_api_request_duration_seconds", {{"verb", verb}},
                     std::chrono::duration<double>(r.duration).count());
  };
  return options;
}

Expected<void> ControllerManager::start_endpoints(const EndpointAddresses& addresses) {
  std::function<bool()> leading;
  if (config_.leader_elect) leading = fence_.predicate();
  auto servers = EndpointServers::start(addresses, progress_handler(progress_, metrics_, leading),
                                        metrics_handler(metrics_), health_handler(synced_));
  if (!servers) return unexpected(servers.error());
  servers_ = std::move(*servers);
  collect_endpoint_metrics(metrics_, *servers_);
  advertised_progress_url_ = config_.progress_advertise_url.empty()
                                 ? servers_->progress_url()
                                 : config_.progress_advertise_url;
  while (!advertised_progress_url_.empty() && advertised_progress_url_.back() == '/') {
    advertised_progress_url_.pop_back();
  }
  return {};
}

void ControllerManager::wire_controller() {
  ReconcilerOptions options;
  options.catalog_namespace =
      config_.catalog_namespace.empty() ? home_namespace_ : config_.catalog_namespace;
  options.decide.checkpoint_root = config_.checkpoint_root;
  options.decide.rendezvous = config_.rendezvous;
  options.decide.gang_scheduling = config_.gang_scheduling;
  options.decide.spot_capacity_wait = config_.spot_capacity_wait;
  options.decide.pool_defaults = {config_.default_bandwidth, config_.default_storage_bandwidth};
  options.decide.progress_url = advertised_progress_url_;
  options.decide.solve.budget.time = config_.solve_time_budget;
  options.decide.solve.budget.memory_bytes = config_.solve_memory_budget;
  options.decide.solve_function = config_.solve;
  options.turn_taken = [this] {
    if (auto* c = controller_for_callbacks_.load()) {
      // Ahead of routine work (the pod events of jobs placed before): placement is serial,
      // every job after this one waits for it.
      if (auto next = caches_.line().next()) c->queue().add_first(*next);
    }
  };
  reconciler_ = std::make_unique<JobReconciler>(
      client_, caches_.job_caches(), clock_,
      [this](const json& object, const EventSpec& e) {
        events_.post(object,
                     e.type == "Warning" ? kube::EventType::Warning : kube::EventType::Normal,
                     e.reason, e.message);
      },
      metrics_, options);
  // A job deleted (or being deleted, held by finalizers) while its plan is solved frees the
  // solver at its next budget check.
  kube::ResourceEventHandlers cancel_solve;
  cancel_solve.on_update = [this](const kube::ObjectPtr&, const kube::ObjectPtr& job) {
    if (json_object(*job, "metadata").contains("deletionTimestamp"))
      reconciler_->cancel_solve(kube::ObjectKey::of(*job));
  };
  cancel_solve.on_delete = [this](const kube::ObjectPtr& job) {
    reconciler_->cancel_solve(kube::ObjectKey::of(*job));
  };
  caches_.jobs().add_handlers(std::move(cancel_solve));
  kube::ControllerOptions controller_options;
  controller_options.name = "dependabletrainingjob";
  controller_options.workers = config_.workers;
  controller_ = std::make_unique<kube::Controller>(
      [this](const kube::ObjectKey& key, std::stop_token s) {
        return reconciler_->reconcile(key, s);
      },
      clock_, std::move(controller_options));
  controller_for_callbacks_ = controller_.get();
  watch_jobs(*controller_, caches_);
  collect_controller_metrics(metrics_, caches_.jobs().store(), *controller_,
                             [this] { return events_.dropped(); });
}

kube::LeaderElectionConfig ControllerManager::election_config() const {
  kube::LeaderElectionConfig le;
  le.lease_namespace = config_.leader_election_namespace.empty()
                           ? home_namespace_
                           : config_.leader_election_namespace;
  le.lease_name = config_.leader_election_id;
  le.identity = identity_;
  le.lease_duration = config_.lease_duration;
  le.renew_deadline = config_.renew_deadline;
  le.retry_period = config_.retry_period;
  return le;
}

Expected<void> ControllerManager::run(
    std::stop_token stop, const std::function<void(const ControllerEndpoints&)>& on_ready) {
  caches_.start(stop);
  if (!caches_.wait_synced(stop)) {
    shut_down();
    return {};
  }
  synced_ = true;
  spdlog::info("msg=\"caches synced; reconciling\" progress_url={} metrics=:{} health=:{}",
               advertised_progress_url_, servers_->metrics_port(), servers_->health_port());
  if (on_ready) {
    on_ready({servers_->metrics_url(), advertised_progress_url_, servers_->health_url()});
  }
  Expected<void> outcome;
  if (!config_.leader_elect) {
    controller_->run(stop);
  } else {
    ElectionHooks hooks;
    hooks.started = [this] {
      metrics_.set("depl_leader", {}, 1);
      spdlog::info("msg=\"became leader; reconciling\" identity={}", identity_);
    };
    hooks.lead = [this](std::stop_token leading) { controller_->run(leading); };
    hooks.stopped = [this] {
      metrics_.set("depl_leader", {}, 0);
      spdlog::warn("msg=\"leadership lost or released; no longer reconciling\" identity={}",
                   identity_);
    };
    outcome = run_elected(transport_, connection_.credentials, client_options(), clock_, random_,
                          election_config(), fence_, std::move(hooks), stop);
  }
  shut_down();
  return outcome;
}

void ControllerManager::shut_down() {
  servers_->stop_progress();
  // The last reconciles' Events still go out, for a moment.
  events_.stop(clock_.now() + std::chrono::seconds(2));
  client_.stop();
  caches_.stop();
  servers_->stop();
}

}  // namespace

Expected<void> run_controller(const ControllerConfig& config, std::stop_token stop,
                              std::function<void(const ControllerEndpoints&)> on_ready) {
  auto manager = ControllerManager::create(config);
  if (!manager) return unexpected(manager.error());
  return (*manager)->run(stop, on_ready);
}

}  // namespace depl::controller
