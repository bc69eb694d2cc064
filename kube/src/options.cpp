#include "depl/kube/options.hpp"

namespace depl::kube {

const char* content_type(PatchType type) {
  switch (type) {
    case PatchType::Merge:
      return "application/merge-patch+json";
    case PatchType::Json:
      return "application/json-patch+json";
    case PatchType::StrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::Apply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

nlohmann::json DeleteOptions::to_body() const {
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (propagation_policy) {
    switch (*propagation_policy) {
      case PropagationPolicy::Background:
        body["propagationPolicy"] = "Background";
        break;
      case PropagationPolicy::Foreground:
        body["propagationPolicy"] = "Foreground";
        break;
      case PropagationPolicy::Orphan:
        body["propagationPolicy"] = "Orphan";
        break;
    }
  }
  if (grace_period_seconds) body["gracePeriodSeconds"] = *grace_period_seconds;
  if (!precondition_uid.empty()) body["preconditions"]["uid"] = precondition_uid;
  if (!precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = precondition_resource_version;
  }
  if (dry_run) body["dryRun"] = nlohmann::json::array({"All"});
  return body;
}

}  // namespace depl::kube
