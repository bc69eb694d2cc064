// Controller: event handlers that enqueue keys, workers that reconcile them, and the outcome
// rules documented in the header.
#include "depl/kube/runtime/controller.hpp"

#include <exception>
#include <thread>

#include <spdlog/spdlog.h>

namespace depl::kube {

namespace {

std::string_view group_of(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

}  // namespace

std::optional<ObjectKey> controller_owner_key(const nlohmann::json& object,
                                              std::string_view owner_api_version,
                                              std::string_view owner_kind, bool owner_namespaced) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return std::nullopt;
  const auto owners = metadata->find("ownerReferences");
  if (owners == metadata->end() || !owners->is_array()) return std::nullopt;
  for (const auto& owner : *owners) {
    if (!owner.is_object() || !owner.value("controller", false)) continue;
    if (owner.value("kind", "") != owner_kind) continue;
    if (group_of(owner.value("apiVersion", "")) != group_of(owner_api_version)) continue;
    ObjectKey key;
    key.name = owner.value("name", "");
    if (key.name.empty()) continue;
    if (owner_namespaced) key.namespace_ = metadata->value("namespace", "");
    return key;
  }
  return std::nullopt;
}

std::string controller_uid(const nlohmann::json& object) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  const auto owners = metadata->find("ownerReferences");
  if (owners == metadata->end() || !owners->is_array()) return "";
  for (const auto& owner : *owners) {
    if (!owner.is_object() || !owner.value("controller", false)) continue;
    const auto uid = owner.find("uid");
    return uid != owner.end() && uid->is_string() ? uid->get<std::string>() : "";
  }
  return "";
}

Controller::Controller(Reconciler reconciler, Clock& clock, ControllerOptions options)
    : reconciler_(std::move(reconciler)),
      clock_(clock),
      name_(std::move(options.name)),
      workers_(std::max(1, options.workers)),
      queue_(clock,
             options.rate_limiter ? std::move(options.rate_limiter)
                                  : default_controller_rate_limiter(clock),
             name_) {}

void Controller::watch_primary(Informer& informer) {
  watch_mapped(informer, [](const nlohmann::json& object) {
    return std::vector<ObjectKey>{ObjectKey::of(object)};
  });
}

void Controller::watch_owned(Informer& informer, std::string owner_api_version,
                             std::string owner_kind, bool owner_namespaced) {
  watch_mapped(informer, [api_version = std::move(owner_api_version), kind = std::move(owner_kind),
                          owner_namespaced](const nlohmann::json& object) {
    std::vector<ObjectKey> keys;
    if (auto owner = controller_owner_key(object, api_version, kind, owner_namespaced)) {
      keys.push_back(std::move(*owner));
    }
    return keys;
  });
}

void Controller::watch_mapped(Informer& informer, KeyMapper mapper) {
  auto shared_mapper = std::make_shared<KeyMapper>(std::move(mapper));
  auto enqueue = [this, shared_mapper](const ObjectPtr& object) {
    for (const ObjectKey& key : (*shared_mapper)(*object)) queue_.add(key);
  };
  ResourceEventHandlers handlers;
  handlers.on_add = enqueue;
  handlers.on_delete = enqueue;
  // Both sides of an update: an owned object that changed owner concerns the old one too.
  handlers.on_update = [enqueue](const ObjectPtr& old_object, const ObjectPtr& new_object) {
    enqueue(old_object);
    enqueue(new_object);
  };
  informer.add_handlers(std::move(handlers));
}

void Controller::run(std::stop_token stop) {
  spdlog::info("msg=\"controller starting\" controller={} workers={}", name_, workers_);
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(workers_));
    for (int i = 0; i < workers_; ++i) {
      threads.emplace_back([this, stop] { worker(stop); });
    }
    std::mutex mutex;
    std::condition_variable_any cv;
    std::unique_lock lock(mutex);
    cv.wait(lock, stop, [] { return false; });
    queue_.shut_down();
  }  // joins the workers: each finishes its current reconcile (whose token is now requested)
  spdlog::info("msg=\"controller stopped\" controller={}", name_);
}

void Controller::worker(std::stop_token stop) {
  while (auto key = queue_.get(stop)) {
    ++active_workers_;
    process(*key, stop);
    --active_workers_;
    queue_.done(*key);
  }
}

void Controller::process(const ObjectKey& key, std::stop_token stop) {
  const Clock::TimePoint started = clock_.now();
  std::optional<Expected<Action, ReconcileError>> outcome;
  try {
    outcome.emplace(reconciler_(key, stop));
  } catch (const std::exception& e) {
    outcome.emplace(unexpected(ReconcileError{std::string("reconciler threw: ") + e.what()}));
  }
  const auto elapsed = clock_.now() - started;

  // The outcome rules from the header, in the same order.
  enum class Outcome { Success, RequeueAfter, Requeue, Error } kind;
  if (!outcome->has_value()) {
    kind = Outcome::Error;
    spdlog::warn("msg=\"reconcile failed\" controller={} object={} retries={} error=\"{}\"", name_,
                 key.to_string(), queue_.num_requeues(key), outcome->error().message);
    queue_.add_rate_limited(key);
  } else if (const auto& requeue = (*outcome)->requeue(); !requeue) {
    kind = Outcome::Success;
    queue_.forget(key);
  } else if (*requeue > std::chrono::nanoseconds::zero()) {
    kind = Outcome::RequeueAfter;
    queue_.forget(key);
    queue_.add_after(key, *requeue);
  } else {
    kind = Outcome::Requeue;
    queue_.add_rate_limited(key);
  }

  std::lock_guard lock(metrics_mutex_);
  reconcile_time_.observe(elapsed);
  switch (kind) {
    case Outcome::Success:
      ++success_;
      break;
    case Outcome::RequeueAfter:
      ++requeue_after_;
      break;
    case Outcome::Requeue:
      ++requeue_;
      break;
    case Outcome::Error:
      ++errors_;
      break;
  }
}

ControllerMetrics Controller::metrics() const {
  ControllerMetrics metrics;
  metrics.name = name_;
  {
    std::lock_guard lock(metrics_mutex_);
    metrics.reconcile_success = success_;
    metrics.reconcile_requeue_after = requeue_after_;
    metrics.reconcile_requeue = requeue_;
    metrics.reconcile_errors = errors_;
    metrics.reconcile_time = reconcile_time_;
  }
  metrics.active_workers = active_workers_.load();
  metrics.queue = queue_.metrics();
  return metrics;
}

}  // namespace depl::kube
