#include "depl/controller/controller_caches.hpp"

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"
#include "depl/controller/job_resource.hpp"
#include "depl/controller/pod_cache.hpp"
#include "depl/controller/worker_pods.hpp"

namespace depl::controller {
namespace {

namespace resources = kube::resources;

struct WatchScope {
  std::string ns;
  std::string labels;
  std::string fields;
  std::optional<kube::FieldFilter> prefilter;
};

WatchScope scope(std::string ns, std::string labels = "", std::string fields = "",
                 std::optional<kube::FieldFilter> prefilter = std::nullopt) {
  return {std::move(ns), std::move(labels), std::move(fields), std::move(prefilter)};
}

std::unique_ptr<kube::Informer> make_informer(kube::Client& client, Clock& clock,
                                              RandomSource& random, kube::ResourceType type,
                                              WatchScope scope) {
  kube::WatcherOptions o;
  o.namespace_ = std::move(scope.ns);
  o.label_selector = std::move(scope.labels);
  o.field_selector = std::move(scope.fields);
  // Every cache drops managedFields (see the transforms): skip them as events are read.
  o.drop_managed_fields = true;
  o.prefilter = std::move(scope.prefilter);
  // The reconciler looks objects up by owner only; the other default indexes (labels, node
  // name) would hold an entry per label and pod of the whole cluster for nothing.
  std::map<std::string, kube::IndexFunction, std::less<>> indexes;
  indexes.emplace(std::string(kube::indexes::kByOwnerUid), kube::indexes::by_owner_uid());
  return std::make_unique<kube::Informer>(client, std::move(type), o, clock, random,
                                          std::move(indexes));
}

}  // namespace

ControllerCaches::ControllerCaches(kube::Client& client, Clock& clock, RandomSource& random,
                                   CacheOptions options)
    : line_(gpus_), expectations_(clock), departed_(clock) {
  const std::string managed = fmt::format("{}={}", kManagedByLabel, kManagedByValue);
  auto informer = [&](kube::ResourceType type, WatchScope scope) {
    return make_informer(client, clock, random, std::move(type), std::move(scope));
  };
  jobs_ = informer(job_resource(), scope(options.watch_namespace));
  // Pods are decoded with only what trim_cached_pod reads (it still runs on each).
  pods_ = informer(resources::pods(), scope("", "", "", cached_pod_fields()));
  nodes_ = informer(resources::nodes(), scope(""));
  services_ = informer(resources::services(), scope(options.watch_namespace, managed));
  config_maps_ = informer(resources::config_maps(), scope(options.catalog_namespace, "",
                                                          "metadata.name=" + options.catalog_name));
  job_policy_ = informer(
      resources::config_maps(),
      scope(options.catalog_namespace, "", fmt::format("metadata.name={}", kJobPolicyConfigMap)));

  // What the caches keep: no managedFields anywhere (nothing here reads them), and of pods only
  // what placement and the reconciler read (trim_cached_pod drops managedFields too).
  for (kube::Informer* i :
       {jobs_.get(), nodes_.get(), services_.get(), config_maps_.get(), job_policy_.get()}) {
    i->set_transform(kube::strip_managed_fields);
  }
  pods_->set_transform(trim_cached_pod);

  // These handlers come before the controller's (added later by whoever runs the controller):
  // the line and the ledger are up to date when a reconcile that an event starts reads them, and
  // that reconcile finds the pod or Service observed.
  jobs_->add_handlers(line_.handlers());
  nodes_->add_handlers(line_.node_handlers());
  // A changed GPU catalog may make a node's GPUs usable (their GFLOP/s or price known).
  kube::ResourceEventHandlers catalog_changed;
  catalog_changed.on_add = [this](const kube::ObjectPtr&) { line_.room_may_have_grown(); };
  catalog_changed.on_update = [this](const kube::ObjectPtr&, const kube::ObjectPtr&) {
    line_.room_may_have_grown();
  };
  config_maps_->add_handlers(std::move(catalog_changed));
  kube::ResourceEventHandlers forget_job;
  forget_job.on_delete = [this](const kube::ObjectPtr& job) {
    const std::string uid = json_string(json_member(*job, "metadata"), "uid");
    expectations_.erase(uid);
    departed_.erase(uid);
  };
  jobs_->add_handlers(std::move(forget_job));
  pods_->add_handlers(gpus_.handlers());
  pods_->add_handlers(expectations_.handlers("Pod"));
  pods_->add_handlers(departed_.handlers());
  services_->add_handlers(expectations_.handlers("Service"));
}

ControllerCaches::~ControllerCaches() {
  stop();
}

JobCaches ControllerCaches::job_caches() {
  return {jobs_->store(),
          pods_->store(),
          gpus_,
          line_,
          nodes_->store(),
          services_->store(),
          config_maps_->store(),
          job_policy_->store(),
          expectations_,
          departed_};
}

std::vector<kube::Informer*> ControllerCaches::all() {
  return {jobs_.get(),     pods_.get(),        nodes_.get(),
          services_.get(), config_maps_.get(), job_policy_.get()};
}

void ControllerCaches::start(std::stop_token stop) {
  for (kube::Informer* i : all()) {
    threads_.emplace_back([i, stop](std::stop_token own) {
      std::stop_source both;
      std::stop_callback a(stop, [&] { both.request_stop(); });
      std::stop_callback b(own, [&] { both.request_stop(); });
      i->run(both.get_token());
    });
  }
}

bool ControllerCaches::wait_synced(std::stop_token stop) {
  for (kube::Informer* i : all()) {
    if (!i->store().wait_synced(stop)) return false;
  }
  return !stop.stop_requested();
}

void ControllerCaches::stop() {
  for (auto& t : threads_) t.request_stop();
  threads_.clear();
}

}  // namespace depl::controller
