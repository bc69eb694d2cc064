#include "depl/kube/typed.hpp"

namespace depl::kube {

using Json = nlohmann::json;

namespace {
const Json& null_json() {
  static const Json kNull;
  return kNull;
}

std::string string_of(const Json& value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::int64_t int_of(const Json& value) {
  return value.is_number_integer() ? value.get<std::int64_t>() : 0;
}

std::map<std::string, std::string> string_map(const Json& value) {
  std::map<std::string, std::string> out;
  if (!value.is_object()) return out;
  for (const auto& [key, item] : value.items()) {
    if (item.is_string()) out.emplace(key, item.get<std::string>());
  }
  return out;
}

OwnerReference owner_from(const Json& ref) {
  OwnerReference out;
  out.api_version = string_of(ref.value("apiVersion", Json()));
  out.kind = string_of(ref.value("kind", Json()));
  out.name = string_of(ref.value("name", Json()));
  out.uid = string_of(ref.value("uid", Json()));
  out.controller = ref.value("controller", Json(false)) == true;
  out.block_owner_deletion = ref.value("blockOwnerDeletion", Json(false)) == true;
  return out;
}

bool condition_true(const std::vector<Condition>& conditions, std::string_view type) {
  for (const auto& condition : conditions) {
    if (condition.type == type) return condition.status == "True";
  }
  return false;
}
}  // namespace

Json OwnerReference::to_json() const {
  Json out = {{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"uid", uid}};
  if (controller) out["controller"] = true;
  if (block_owner_deletion) out["blockOwnerDeletion"] = true;
  return out;
}

const Json& ObjectView::at(const char* pointer) const {
  const Json::json_pointer ptr(pointer);
  if (!object_.is_object() || !object_.contains(ptr)) return null_json();
  return object_.at(ptr);
}

std::string ObjectView::string_at(const char* pointer) const {
  return string_of(at(pointer));
}

std::string ObjectView::api_version() const {
  return string_at("/apiVersion");
}
std::string ObjectView::kind() const {
  return string_at("/kind");
}
std::string ObjectView::name() const {
  return string_at("/metadata/name");
}
std::string ObjectView::namespace_() const {
  return string_at("/metadata/namespace");
}
std::string ObjectView::uid() const {
  return string_at("/metadata/uid");
}
std::string ObjectView::resource_version() const {
  return string_at("/metadata/resourceVersion");
}
std::int64_t ObjectView::generation() const {
  return int_of(at("/metadata/generation"));
}
std::string ObjectView::creation_timestamp() const {
  return string_at("/metadata/creationTimestamp");
}
std::optional<std::string> ObjectView::deletion_timestamp() const {
  const Json& value = at("/metadata/deletionTimestamp");
  if (!value.is_string()) return std::nullopt;
  return value.get<std::string>();
}
std::map<std::string, std::string> ObjectView::labels() const {
  return string_map(at("/metadata/labels"));
}
std::map<std::string, std::string> ObjectView::annotations() const {
  return string_map(at("/metadata/annotations"));
}
std::string ObjectView::label(std::string_view key) const {
  const Json& labels = at("/metadata/labels");
  if (!labels.is_object()) return {};
  auto it = labels.find(std::string(key));
  return it == labels.end() ? std::string() : string_of(*it);
}
std::vector<std::string> ObjectView::finalizers() const {
  std::vector<std::string> out;
  const Json& list = at("/metadata/finalizers");
  if (!list.is_array()) return out;
  for (const auto& item : list) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}
std::vector<OwnerReference> ObjectView::owner_references() const {
  std::vector<OwnerReference> out;
  const Json& list = at("/metadata/ownerReferences");
  if (!list.is_array()) return out;
  for (const auto& item : list) {
    if (item.is_object()) out.push_back(owner_from(item));
  }
  return out;
}
std::optional<OwnerReference> ObjectView::controller_reference() const {
  for (auto& ref : owner_references()) {
    if (ref.controller) return ref;
  }
  return std::nullopt;
}
std::string ObjectView::key() const {
  std::string ns = namespace_();
  return ns.empty() ? name() : ns + "/" + name();
}

std::vector<Condition> conditions_of(const Json& status) {
  std::vector<Condition> out;
  if (!status.is_object()) return out;
  auto list = status.find("conditions");
  if (list == status.end() || !list->is_array()) return out;
  for (const auto& item : *list) {
    if (!item.is_object()) continue;
    out.push_back(
        Condition{string_of(item.value("type", Json())), string_of(item.value("status", Json())),
                  string_of(item.value("reason", Json())), string_of(item.value("message", Json())),
                  string_of(item.value("lastTransitionTime", Json()))});
  }
  return out;
}

std::string PodView::phase() const {
  return string_at("/status/phase");
}
std::string PodView::node_name() const {
  return string_at("/spec/nodeName");
}
std::string PodView::pod_ip() const {
  return string_at("/status/podIP");
}
std::vector<Condition> PodView::conditions() const {
  return conditions_of(at("/status"));
}
bool PodView::is_ready() const {
  return condition_true(conditions(), "Ready");
}
std::int64_t PodView::restart_count() const {
  const Json& statuses = at("/status/containerStatuses");
  std::int64_t total = 0;
  if (!statuses.is_array()) return 0;
  for (const auto& status : statuses) {
    if (status.is_object()) total += int_of(status.value("restartCount", Json()));
  }
  return total;
}

std::vector<Condition> NodeView::conditions() const {
  return conditions_of(at("/status"));
}
bool NodeView::is_ready() const {
  return condition_true(conditions(), "Ready");
}
bool NodeView::is_unschedulable() const {
  return at("/spec/unschedulable") == true;
}
std::string NodeView::allocatable(std::string_view resource) const {
  const Json& map = at("/status/allocatable");
  if (!map.is_object()) return {};
  auto it = map.find(std::string(resource));
  return it == map.end() ? std::string() : string_of(*it);
}
std::string NodeView::capacity(std::string_view resource) const {
  const Json& map = at("/status/capacity");
  if (!map.is_object()) return {};
  auto it = map.find(std::string(resource));
  return it == map.end() ? std::string() : string_of(*it);
}

std::string LeaseView::holder_identity() const {
  return string_at("/spec/holderIdentity");
}
std::int64_t LeaseView::lease_duration_seconds() const {
  return int_of(at("/spec/leaseDurationSeconds"));
}
std::string LeaseView::acquire_time() const {
  return string_at("/spec/acquireTime");
}
std::string LeaseView::renew_time() const {
  return string_at("/spec/renewTime");
}
std::int64_t LeaseView::lease_transitions() const {
  return int_of(at("/spec/leaseTransitions"));
}

std::string EventView::reason() const {
  return string_at("/reason");
}
std::string EventView::message() const {
  return string_at("/message");
}
std::string EventView::type() const {
  return string_at("/type");
}
std::int64_t EventView::count() const {
  return int_of(at("/count"));
}
const Json& EventView::involved_object() const {
  return at("/involvedObject");
}

}  // namespace depl::kube
