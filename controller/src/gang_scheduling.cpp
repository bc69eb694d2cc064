#include "depl/controller/gang_scheduling.hpp"

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"
#include "depl/controller/worker_pods.hpp"

namespace depl::controller {

using nlohmann::json;

bool gang_scheduling_asked(const json& job, bool operator_default) {
  const json& asked = json_member(json_member(job, "spec"), "gangScheduling");
  return asked.is_boolean() ? asked.get<bool>() : operator_default;
}

kube::ResourceType pod_group_resource_of(const json& pod_group) {
  return json_string(pod_group, "apiVersion") == "scheduling.k8s.io/v1beta1"
             ? native_pod_group_resource()
             : pod_group_resource();
}

json build_pod_group(const json& job, const std::string& name, int min_member, GangApi api) {
  const json& meta = json_member(job, "metadata");
  const bool native = api == GangApi::Native;
  return {
      {"apiVersion", native ? "scheduling.k8s.io/v1beta1" : "scheduling.x-k8s.io/v1alpha1"},
      {"kind", "PodGroup"},
      {"metadata",
       {{"name", name},
        {"namespace", json_string(meta, "namespace")},
        {"labels", {{kJobLabel, json_string(meta, "name")}, {kManagedByLabel, kManagedByValue}}},
        {"ownerReferences", json::array({owner_reference(job)})}}},
      {"spec", native ? json{{"schedulingPolicy", {{"gang", {{"minCount", min_member}}}}}}
                      : json{{"minMember", min_member}}}};
}

void join_gang(json& pod, const std::string& name, GangApi api) {
  if (api == GangApi::Native) {
    pod["spec"]["schedulingGroup"] = {{"podGroupName", name}};
  } else {
    pod["metadata"]["labels"][kGangLabel] = name;
  }
}

bool lists_pod_groups(const json& resource_list) {
  const json& resources = json_member(resource_list, "resources");
  if (!resources.is_array()) return false;
  for (const auto& r : resources) {
    if (json_string(r, "name") == "podgroups") return true;
  }
  return false;
}

PodGroupDiscovery::PodGroupDiscovery(kube::Client& client, Clock& clock,
                                     std::chrono::seconds recheck_after)
    : client_(client), clock_(clock), recheck_after_(recheck_after) {}

Expected<bool> PodGroupDiscovery::ask(Known& known, const std::string& path, Clock::TimePoint now) {
  if (known.served) return true;
  if (known.not_served_since && now - *known.not_served_since < recheck_after_) return false;
  kube::HttpRequest request;
  request.method = "GET";
  request.path = path;
  request.set_header("Accept", "application/json");
  auto answer = client_.send_json(std::move(request));
  if (!answer) {
    if (!answer.error().is_not_found()) {
      return error(fmt::format("discovery of {}: {}", path.substr(6), answer.error().to_string()));
    }
    known.not_served_since = now;
    return false;
  }
  known.served = lists_pod_groups(*answer);
  if (!known.served) known.not_served_since = now;
  return known.served;
}

Expected<GangApi> PodGroupDiscovery::served() {
  std::lock_guard lock(mutex_);
  const auto now = clock_.now();
  auto native = ask(native_, "/apis/scheduling.k8s.io/v1beta1", now);
  if (!native) return unexpected(native.error());
  if (*native) return GangApi::Native;
  auto coscheduling = ask(coscheduling_, "/apis/scheduling.x-k8s.io/v1alpha1", now);
  if (!coscheduling) return unexpected(coscheduling.error());
  return *coscheduling ? GangApi::Coscheduling : GangApi::None;
}

}  // namespace depl::controller
