#include "depl/controller/create_expectations.hpp"

#include <spdlog/spdlog.h>

#include "depl/common/json_fields.hpp"
#include "depl/kube/runtime/controller.hpp"

namespace depl::controller {

using nlohmann::json;

namespace {

std::tuple<std::string, std::string, std::string> object_id(const std::string& kind,
                                                            const std::string& ns,
                                                            const std::string& name) {
  return {kind, ns, name};
}

}  // namespace

CreateExpectations::CreateExpectations(Clock& clock, Clock::Duration ttl)
    : clock_(clock), ttl_(ttl) {}

void CreateExpectations::expect(const std::string& owner, const std::string& kind,
                                const std::string& ns, const std::string& name) {
  std::lock_guard lock(mutex_);
  Awaited& awaited = by_owner_[owner];
  awaited.objects.insert(object_id(kind, ns, name));
  awaited.expires = clock_.now() + ttl_;
}

void CreateExpectations::forget(const std::string& owner, const std::string& kind,
                                const std::string& ns, const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return;
  it->second.objects.erase(object_id(kind, ns, name));
  if (it->second.objects.empty()) by_owner_.erase(it);
}

void CreateExpectations::observed(const std::string& kind, const json& object) {
  const std::string owner = kube::controller_uid(object);
  if (owner.empty()) return;
  const json& meta = object["metadata"];  // there: it has a controller
  std::lock_guard lock(mutex_);
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return;
  it->second.objects.erase(
      object_id(kind, json_string(meta, "namespace"), json_string(meta, "name")));
  if (it->second.objects.empty()) by_owner_.erase(it);
}

void CreateExpectations::erase(const std::string& owner) {
  std::lock_guard lock(mutex_);
  by_owner_.erase(owner);
  refused_rounds_.erase(owner);
}

void CreateExpectations::set_round_without_pods(const std::string& owner,
                                                std::optional<JobView::Round> round) {
  std::lock_guard lock(mutex_);
  if (round) {
    refused_rounds_[owner] = *round;
  } else {
    refused_rounds_.erase(owner);
  }
}

std::optional<JobView::Round> CreateExpectations::round_without_pods(const std::string& owner) {
  std::lock_guard lock(mutex_);
  auto it = refused_rounds_.find(owner);
  if (it == refused_rounds_.end()) return std::nullopt;
  return it->second;
}

std::optional<CreateExpectations::Pending> CreateExpectations::pending(const std::string& owner,
                                                                       const InCache& in_cache) {
  std::lock_guard lock(mutex_);
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return std::nullopt;
  if (in_cache) {
    std::erase_if(it->second.objects, [&](const auto& id) {
      return in_cache(std::get<0>(id), std::get<1>(id), std::get<2>(id));
    });
    if (it->second.objects.empty()) {
      by_owner_.erase(it);
      return std::nullopt;
    }
  }
  const auto now = clock_.now();
  if (now >= it->second.expires) {
    // A watch that lost an object, or an object created and deleted before any event showed
    // it: worth a line, as it held the job back for the whole TTL.
    std::string never_seen;
    for (const auto& [kind, ns, name] : it->second.objects)
      never_seen += (never_seen.empty() ? "" : ",") + kind + "/" + ns + "/" + name;
    spdlog::warn(
        "msg=\"gave up waiting for the caches to show created objects\" owner_uid={} "
        "objects={}",
        owner, never_seen);
    by_owner_.erase(it);
    return std::nullopt;
  }
  return Pending{it->second.objects.size(), it->second.expires - now};
}

kube::ResourceEventHandlers CreateExpectations::handlers(const std::string& kind) {
  kube::ResourceEventHandlers h;
  h.on_add = [this, kind](const kube::ObjectPtr& object) { observed(kind, *object); };
  h.on_update = [this, kind](const kube::ObjectPtr&, const kube::ObjectPtr& object) {
    observed(kind, *object);
  };
  h.on_delete = [this, kind](const kube::ObjectPtr& object) { observed(kind, *object); };
  return h;
}

}  // namespace depl::controller
