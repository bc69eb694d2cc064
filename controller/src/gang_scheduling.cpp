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

json build_pod_group(const json& job, const std::string& name, int min_member) {
  const json& meta = json_member(job, "metadata");
  return {
      {"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
      {"kind", "PodGroup"},
      {"metadata",
       {{"name", name},
        {"namespace", json_string(meta, "namespace")},
        {"labels", {{kJobLabel, json_string(meta, "name")}, {kManagedByLabel, kManagedByValue}}},
        {"ownerReferences", json::array({owner_reference(job)})}}},
      {"spec", {{"minMember", min_member}}}};
}

void join_gang(json& pod, const std::string& name) {
  pod["metadata"]["labels"][kGangLabel] = name;
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

Expected<bool> PodGroupDiscovery::served() {
  std::lock_guard lock(mutex_);
  if (served_) return true;
  const auto now = clock_.now();
  if (not_served_since_ && now - *not_served_since_ < recheck_after_) return false;
  kube::HttpRequest request;
  request.method = "GET";
  request.path = "/apis/scheduling.x-k8s.io/v1alpha1";
  request.set_header("Accept", "application/json");
  auto answer = client_.send_json(std::move(request));
  if (!answer) {
    if (!answer.error().is_not_found()) {
      return error(
          fmt::format("discovery of scheduling.x-k8s.io/v1alpha1: {}", answer.error().to_string()));
    }
    not_served_since_ = now;
    return false;
  }
  served_ = lists_pod_groups(*answer);
  if (!served_) not_served_since_ = now;
  return served_;
}

}  // namespace depl::controller
