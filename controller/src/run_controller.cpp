#include "depl/controller/run_controller.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <thread>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/controller/http_server.hpp"
#include "depl/controller/job_reconciler.hpp"
#include "depl/controller/job_resource.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/metrics.hpp"
#include "depl/controller/pod_cache.hpp"
#include "depl/controller/progress.hpp"
#include "depl/kube/beast_transport.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/in_cluster.hpp"
#include "depl/kube/kubeconfig.hpp"
#include "depl/kube/runtime/async_event_recorder.hpp"
#include "depl/kube/runtime/controller.hpp"
#include "depl/kube/runtime/event_recorder.hpp"
#include "depl/kube/runtime/informer.hpp"
#include "depl/kube/runtime/leader_election.hpp"

namespace depl::controller {

using nlohmann::json;
namespace resources = kube::resources;

namespace {

constexpr const char* kJobApiVersion = "depl.dev/v1alpha1";
constexpr const char* kJobKind = "DependableTrainingJob";

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

// The progress endpoint's view of jobs: straight from the API server, so a report builds on the
// latest status; token records from the jobs cache, or from the API server when it has none yet.
class ClientJobAccess final : public JobAccess {
 public:
  ClientJobAccess(kube::Client& client, const kube::Store& jobs) : client_(client), jobs_(jobs) {}

  Expected<json, AccessError> get_job(const std::string& ns, const std::string& name) override {
    auto job = client_.get(job_resource(), ns, name);
    if (!job) {
      if (job.error().is_not_found()) return unexpected(AccessError{"not found", false});
      return unexpected(AccessError{"reading the job: " + job.error().message, true});
    }
    return *job;
  }

  Expected<bool> write_status(const json& job) override {
    kube::WriteOptions write;
    write.field_manager = "depl-controller";
    write.return_object = false;  // the next report reads the job again
    auto written = client_.replace_status(job_resource(), job, write);
    if (written) return true;
    if (written.error().is_conflict()) return false;
    return error(written.error().message);
  }

  std::optional<ProgressTokenRecord> cached_token(const std::string& ns,
                                                  const std::string& name) override {
    auto job = jobs_.get({ns, name});
    if (!job) return std::nullopt;
    return progress_token_of(*job);
  }

  Expected<ProgressTokenRecord, AccessError> token(const std::string& ns,
                                                   const std::string& name) override {
    auto job = get_job(ns, name);
    if (!job) return unexpected(job.error());
    auto record = progress_token_of(*job);
    if (!record) {
      return unexpected(
          AccessError{"no progress token (the job has no workers yet, or is unknown)", false});
    }
    return *record;
  }

 private:
  kube::Client& client_;
  const kube::Store& jobs_;
};

// status.phase of a job or pod, "" when absent (json::value() would copy the whole status).
std::string phase_of(const json& object) {
  auto status = object.find("status");
  if (status == object.end() || !status->is_object()) return "";
  auto phase = status->find("phase");
  return phase != status->end() && phase->is_string() ? phase->get<std::string>() : "";
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

std::string url_of(const std::string& host, int port) {
  const std::string shown = host == "0.0.0.0" ? "127.0.0.1" : host;
  return fmt::format("http://{}:{}", shown, port);
}

}  // namespace

Expected<void> run_controller(const ControllerConfig& config, std::stop_token stop,
                              std::function<void(const ControllerEndpoints&)> on_ready) {
  auto metrics_listen = parse_listen_address(config.metrics_addr);
  if (!metrics_listen) return error("--metrics-addr " + metrics_listen.error().message);
  auto progress_listen = parse_listen_address(config.progress_addr);
  if (!progress_listen) return error("--progress-addr " + progress_listen.error().message);
  auto health_listen = parse_listen_address(config.health_addr);
  if (!health_listen) return error("--health-addr " + health_listen.error().message);
  if (config.workers < 1)
    return error(fmt::format("--workers must be >= 1, got {}", config.workers));

  auto connection = connect_config(config);
  if (!connection) return error(connection.error().message);
  auto transport = kube::BeastTransport::create(*connection);
  if (!transport) return error(transport.error().message);

  SystemClock clock;
  auto shared_clock = std::make_shared<SystemClock>();
  RandomSource random = RandomSource::from_entropy();
  const std::string identity = config.identity.empty() ? default_identity() : config.identity;
  kube::ClientOptions client_options;
  client_options.clock = shared_clock;
  client_options.user_agent = fmt::format("depl-controller/0.1 (identity={})", identity);
  client_options.default_namespace = connection->default_namespace;
  client_options.rate_limit = {config.kube_api_qps, config.kube_api_burst};
  // With leader election, nothing but the Lease is written unless this replica holds the lease
  // right now (renewed within renewDeadline): not its reconciles, not its progress endpoint,
  // not a request stuck in a retry loop while the lease runs out. The elector is created below;
  // until then, and for good once it stops leading, writes are fenced.
  std::atomic<kube::LeaderElector*> elector_for_fence{nullptr};
  auto holds_lease = [&elector_for_fence] {
    const kube::LeaderElector* e = elector_for_fence.load();
    return e != nullptr && e->holds_lease();
  };
  if (config.leader_elect) client_options.write_fence = holds_lease;
  MetricsRegistry metrics;
  describe_controller_metrics(metrics);
  client_options.on_request = [&metrics](const kube::RequestOutcome& r) {
    const std::string verb(r.watch ? "WATCH" : r.method);
    metrics.add("depl_api_requests_total", {{"verb", verb}, {"code", std::to_string(r.code)}});
    metrics.observe("depl_api_request_duration_seconds", {{"verb", verb}},
                    std::chrono::duration<double>(r.duration).count());
  };
  kube::Client client(*transport, connection->credentials, client_options);

  const std::string home_ns = own_namespace();
  const std::string catalog_ns =
      config.catalog_namespace.empty() ? home_ns : config.catalog_namespace;
  auto informer = [&](kube::ResourceType type, std::string ns, std::string labels = "",
                      std::string fields = "",
                      std::optional<kube::FieldFilter> prefilter = std::nullopt) {
    kube::WatcherOptions o;
    o.namespace_ = std::move(ns);
    o.label_selector = std::move(labels);
    o.field_selector = std::move(fields);
    // Every cache below drops managedFields (see the transforms): skip them as events are read.
    o.drop_managed_fields = true;
    o.prefilter = std::move(prefilter);
    // The reconciler looks objects up by owner only; the other default indexes (labels, node
    // name) would hold an entry per label and pod of the whole cluster for nothing.
    std::map<std::string, kube::IndexFunction, std::less<>> indexes;
    indexes.emplace(std::string(kube::indexes::kByOwnerUid), kube::indexes::by_owner_uid());
    return std::make_unique<kube::Informer>(client, std::move(type), o, clock, random,
                                            std::move(indexes));
  };
  const std::string managed = fmt::format("{}={}", kManagedByLabel, kManagedByValue);
  auto jobs = informer(job_resource(), config.watch_namespace);
  GpuLedger gpus;
  PlacementLine line(gpus);
  CreateExpectations expectations(clock);  // fed by the pods and services informers below
  // What the caches keep: no managedFields anywhere (nothing here reads them), and of pods only
  // what placement and the reconciler read (trim_cached_pod drops managedFields too).
  jobs->set_transform(kube::strip_managed_fields);
  jobs->add_handlers(line.handlers());  // before the controller's handlers (see PlacementLine)
  // Pods are decoded with only what trim_cached_pod reads (it still runs on each).
  auto pods = informer(resources::pods(), "", "", "", cached_pod_fields());
  pods->set_transform(trim_cached_pod);
  pods->add_handlers(gpus.handlers());  // before the controller's handlers (see GpuLedger)
  // Also before them: the reconcile a pod event starts finds that pod observed.
  pods->add_handlers(expectations.handlers("Pod"));
  auto nodes = informer(resources::nodes(), "");
  auto services = informer(resources::services(), config.watch_namespace, managed);
  services->add_handlers(expectations.handlers("Service"));
  {
    kube::ResourceEventHandlers forget_job;
    forget_job.on_delete = [&](const kube::ObjectPtr& job) {
      expectations.erase(job->value("/metadata/uid"_json_pointer, std::string()));
    };
    jobs->add_handlers(std::move(forget_job));
  }
  auto config_maps =
      informer(resources::config_maps(), catalog_ns, "", "metadata.name=depl-gpu-catalog");
  auto policy_maps = informer(resources::config_maps(), catalog_ns, "",
                              fmt::format("metadata.name={}", kJobPolicyConfigMap));
  for (kube::Informer* i : {nodes.get(), services.get(), config_maps.get(), policy_maps.get()})
    i->set_transform(kube::strip_managed_fields);
  std::vector<kube::Informer*> all = {jobs.get(),     pods.get(),        nodes.get(),
                                      services.get(), config_maps.get(), policy_maps.get()};

  metrics.set("depl_leader", {}, config.leader_elect ? 0 : 1);

  kube::EventRecorderOptions event_options;
  event_options.component = "depl-controller";
  event_options.reporting_instance = identity;
  kube::EventRecorder recorder(client, clock, event_options);
  // Events go out from their own thread: a reconcile (and so the next job's placement) never
  // waits for one.
  kube::AsyncEventRecorder events(recorder, clock);

  ReconcilerOptions options;
  options.catalog_namespace = catalog_ns;
  options.decide.checkpoint_root = config.checkpoint_root;
  options.decide.rendezvous = config.rendezvous;
  options.decide.pool_defaults = {config.default_bandwidth, config.default_storage_bandwidth};
  options.decide.solve.budget.time = config.solve_time_budget;
  options.decide.solve.budget.memory_bytes = config.solve_memory_budget;
  options.decide.solve_function = config.solve;

  // The endpoints listen before the caches sync so probes answer from the start.
  std::unique_ptr<kube::Controller> controller_ptr;
  std::atomic<kube::Controller*> controller_for_progress{nullptr};
  ClientJobAccess access(client, jobs->store());
  ProgressEndpoint progress(access, clock, [&](const std::string& ns, const std::string& name) {
    if (auto* c = controller_for_progress.load()) c->queue().add({ns, name});
  });
  HttpServerOptions progress_options;
  progress_options.address = progress_listen->first;
  progress_options.port = progress_listen->second;
  // Reports read and write the job through the API server: they wait on threads of their own,
  // never on the I/O thread that accepts and reads the next ones.
  progress_options.handler_threads = 4;
  auto progress_server = HttpServer::start(progress_options, [&](const HttpRequestView& r) {
    // A standby records nothing (its writes are fenced): the worker retries, and the Service
    // sends the retry to a replica at random until it reaches the leader.
    HttpReply reply =
        config.leader_elect && !holds_lease()
            ? HttpReply{503,
                        "application/json",
                        json{{"error", "this replica is not the leader; retry the report"}}.dump(),
                        {{"Retry-After", "1"}}}
            : progress.handle(r);
    metrics.add("depl_progress_reports_total", {{"code", std::to_string(reply.status)}});
    return reply;
  });
  if (!progress_server) return error("--progress-addr: " + progress_server.error().message);
  std::string advertised = config.progress_advertise_url;
  if (advertised.empty()) {
    advertised = url_of(progress_listen->first, (*progress_server)->port());
  }
  while (!advertised.empty() && advertised.back() == '/') advertised.pop_back();
  options.decide.progress_url = advertised;

  HttpServerOptions metrics_options;
  metrics_options.address = metrics_listen->first;
  metrics_options.port = metrics_listen->second;
  auto metrics_server =
      HttpServer::start(metrics_options, [&](const HttpRequestView& r) -> HttpReply {
        if (r.target != "/metrics") return {404, "text/plain", "not found: try /metrics\n", {}};
        return {200, "text/plain; version=0.0.4", metrics.render(), {}};
      });
  if (!metrics_server) return error("--metrics-addr: " + metrics_server.error().message);

  std::atomic<bool> synced{false};
  HttpServerOptions health_options;
  health_options.address = health_listen->first;
  health_options.port = health_listen->second;
  auto health_server =
      HttpServer::start(health_options, [&](const HttpRequestView& r) -> HttpReply {
        if (r.target == "/healthz") return {200, "text/plain", "ok\n", {}};
        if (r.target == "/readyz") {
          return synced ? HttpReply{200, "text/plain", "ok\n", {}}
                        : HttpReply{503, "text/plain", "caches not synced yet\n", {}};
        }
        return {404, "text/plain", "not found: try /healthz or /readyz\n", {}};
      });
  if (!health_server) return error("--health-addr: " + health_server.error().message);

  options.turn_taken = [&] {
    if (auto* c = controller_for_progress.load()) {
      // Ahead of routine work (the pod events of jobs placed before): placement is serial,
      // every job after this one waits for it.
      if (auto next = line.next()) c->queue().add_first(*next);
    }
  };
  JobReconciler reconciler(
      client,
      {jobs->store(), pods->store(), gpus, line, nodes->store(), services->store(),
       config_maps->store(), policy_maps->store(), expectations},
      clock,
      [&](const json& object, const EventSpec& e) {
        events.post(object,
                    e.type == "Warning" ? kube::EventType::Warning : kube::EventType::Normal,
                    e.reason, e.message);
      },
      metrics, options);
  {
    // A job deleted (or being deleted, held by finalizers) while its plan is solved frees the
    // solver at its next budget check.
    kube::ResourceEventHandlers cancel_solve;
    cancel_solve.on_update = [&](const kube::ObjectPtr&, const kube::ObjectPtr& job) {
      if ((*job)["metadata"].contains("deletionTimestamp"))
        reconciler.cancel_solve(kube::ObjectKey::of(*job));
    };
    cancel_solve.on_delete = [&](const kube::ObjectPtr& job) {
      reconciler.cancel_solve(kube::ObjectKey::of(*job));
    };
    jobs->add_handlers(std::move(cancel_solve));
  }

  kube::ControllerOptions controller_options;
  controller_options.name = "dependabletrainingjob";
  controller_options.workers = config.workers;
  controller_ptr = std::make_unique<kube::Controller>(
      [&](const kube::ObjectKey& key, std::stop_token s) { return reconciler.reconcile(key, s); },
      clock, std::move(controller_options));
  kube::Controller& controller = *controller_ptr;
  controller_for_progress = &controller;
  controller.watch_primary(*jobs);
  controller.watch_owned(*pods, kJobApiVersion, kJobKind);
  controller.watch_owned(*services, kJobApiVersion, kJobKind);
  // Capacity changes (nodes, other pods, the GPU catalog) concern every job not finished yet.
  auto unfinished_jobs = [&](const json&) {
    std::vector<kube::ObjectKey> keys;
    for (const auto& job : jobs->store().list()) {
      const std::string phase = phase_of(*job);
      if (phase != "Succeeded" && phase != "Failed") keys.push_back(kube::ObjectKey::of(*job));
    }
    return keys;
  };
  controller.watch_mapped(*nodes, unfinished_jobs);
  controller.watch_mapped(*config_maps, unfinished_jobs);
  // A job refused by the policy runs once the administrator allows what it asks.
  controller.watch_mapped(*policy_maps, unfinished_jobs);
  // Jobs waiting for capacity look again when it may have been freed.
  auto pending_jobs_except = [&](const std::optional<kube::ObjectKey>& self) {
    std::vector<kube::ObjectKey> keys;
    for (const auto& job : jobs->store().list()) {
      if (phase_of(*job) != "Pending") continue;
      auto key = kube::ObjectKey::of(*job);
      if (!self || !(key.namespace_ == self->namespace_ && key.name == self->name))
        keys.push_back(std::move(key));
    }
    return keys;
  };
  controller.watch_mapped(*pods, [&](const json& pod) {
    auto owner = kube::controller_owner_key(pod, kJobApiVersion, kJobKind);
    // Another workload's pod matters only while it holds GPUs (the handler sees the pod before
    // and after each change, so the one that stops holding them counts): a busy cluster's
    // thousands of CPU pods must not wake every pending job at each of their changes.
    if (!owner) {
      return pod_holds_gpus(pod) ? pending_jobs_except(std::nullopt)
                                 : std::vector<kube::ObjectKey>{};
    }
    // A job's own pod frees its GPUs when it ends or goes away.
    const std::string phase = phase_of(pod);
    const bool releasing =
        phase == "Succeeded" || phase == "Failed" || pod["metadata"].contains("deletionTimestamp");
    return releasing ? pending_jobs_except(owner) : std::vector<kube::ObjectKey>{};
  });
  // A job that finished or was suspended no longer holds its reservation. A job that has had
  // its turn at placement (planned, invalid, suspended, gone) lets the next one in creation
  // order plan now, from a cache that already shows this job's plan.
  controller.watch_mapped(*jobs, [&](const json& job) {
    const std::string phase = phase_of(job);
    const bool settled = phase == "Succeeded" || phase == "Failed" || phase == "Suspended" ||
                         job["metadata"].contains("deletionTimestamp");
    auto keys =
        settled ? pending_jobs_except(kube::ObjectKey::of(job)) : std::vector<kube::ObjectKey>{};
    if (!awaits_first_plan(job) || !jobs->store().get(kube::ObjectKey::of(job))) {
      if (auto next = line.next()) keys.push_back(std::move(*next));
    }
    return keys;
  });
  metrics.add_collector([&](MetricsRegistry& m) {
    m.clear("depl_jobs");
    std::map<std::string, int> by_phase;
    for (const char* p : {"Pending", "Running", "Succeeded", "Failed", "Suspended"})
      by_phase[p] = 0;
    for (const auto& job : jobs->store().list()) {
      const std::string phase = phase_of(*job);
      by_phase[phase.empty() ? "Pending" : phase] += 1;
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
    m.set("depl_events_dropped_total", {}, static_cast<double>(events.dropped()));
    for (const auto& [endpoint, server] :
         {std::pair{"progress", progress_server->get()},
          std::pair{"metrics", metrics_server->get()}, std::pair{"health", health_server->get()}}) {
      const HttpServerCounts c = server->counts();
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

  std::vector<std::jthread> informer_threads;
  for (auto* i : all) {
    informer_threads.emplace_back([i, stop](std::stop_token own) {
      std::stop_source both;
      std::stop_callback a(stop, [&] { both.request_stop(); });
      std::stop_callback b(own, [&] { both.request_stop(); });
      i->run(both.get_token());
    });
  }
  for (auto* i : all) {
    if (!i->store().wait_synced(stop)) break;
  }
  if (stop.stop_requested()) return {};
  synced = true;
  spdlog::info("msg=\"caches synced; reconciling\" progress_url={} metrics=:{} health=:{}",
               advertised, (*metrics_server)->port(), (*health_server)->port());
  if (on_ready) {
    on_ready({url_of(metrics_listen->first, (*metrics_server)->port()), advertised,
              url_of(health_listen->first, (*health_server)->port())});
  }

  if (!config.leader_elect) {
    controller.run(stop);
  } else {
    kube::LeaderElectionConfig le;
    le.lease_namespace =
        config.leader_election_namespace.empty() ? home_ns : config.leader_election_namespace;
    le.lease_name = config.leader_election_id;
    le.identity = identity;
    le.lease_duration = config.lease_duration;
    le.renew_deadline = config.renew_deadline;
    le.retry_period = config.retry_period;
    le.callbacks.on_started_leading = [&](std::stop_token leading) {
      metrics.set("depl_leader", {}, 1);
      spdlog::info("msg=\"became leader; reconciling\" identity={}", le.identity);
      controller.run(leading);
    };
    le.callbacks.on_stopped_leading = [&] {
      metrics.set("depl_leader", {}, 0);
      spdlog::warn("msg=\"leadership lost or released; no longer reconciling\" identity={}",
                   le.identity);
    };
    // The elector has a client of its own: unfenced (it writes the Lease to earn the fence)
    // and without the client's retries, which could hold one renewal past the renew deadline;
    // the elector retries every retryPeriod itself.
    kube::ClientOptions election_options = client_options;
    election_options.write_fence = nullptr;
    election_options.retry.max_attempts = 1;
    election_options.request_timeout = std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(100), config.renew_deadline / 2);
    kube::Client election_client(*transport, connection->credentials, election_options);
    auto elector = kube::LeaderElector::create(election_client, clock, random, le);
    if (!elector) return error("leader election: " + elector.error().message);
    elector_for_fence = elector->get();
    (*elector)->run(stop);
    elector_for_fence = nullptr;  // the progress endpoint still asks until it stops below
    election_client.stop();
  }
  // The progress endpoint closes first: while it listens it needs the API client, and a report
  // answered during shutdown without it would be refused (404) and end its worker, where a
  // refused connection makes the worker retry until the next controller listens.
  (*progress_server)->stop();
  // The last reconciles' Events still go out, for a moment.
  events.stop(clock.now() + std::chrono::seconds(2));
  client.stop();
  for (auto& t : informer_threads) t.request_stop();
  informer_threads.clear();
  (*metrics_server)->stop();
  (*health_server)->stop();
  return {};
}

}  // namespace depl::controller
