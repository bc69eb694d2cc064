#include "depl/controller/job_policy.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "depl/common/json_fields.hpp"

namespace depl::controller {

using nlohmann::json;

namespace {

// A toleration as Kubernetes compares them: operator defaults to Equal.
std::string toleration_key(const json& t) {
  const std::string op = json_string(t, "operator").empty() ? "Equal" : json_string(t, "operator");
  return fmt::format("{}|{}|{}|{}", json_string(t, "key"), op, json_string(t, "value"),
                     json_string(t, "effect"));
}

std::string describe_list(const std::vector<std::string>& items) {
  if (items.empty()) return "none";
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

bool image_allowed(const std::string& image, const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (!p.empty() && p.back() == '*') {
      if (image.compare(0, p.size() - 1, p, 0, p.size() - 1) == 0) return true;
    } else if (image == p) {
      return true;
    }
  }
  return false;
}

Expected<json> list_in(const json& data, const char* key) {
  const json* value = json_find(data, key);
  if (value == nullptr) return json();
  const json parsed = value->is_string() ? json::parse(value->get<std::string>(), nullptr, false)
                                         : json(json::value_t::discarded);
  if (!parsed.is_array()) {
    return error(fmt::format("ConfigMap {} data.{}: must be a JSON list, got {}",
                             kJobPolicyConfigMap, key,
                             value->dump(-1, ' ', false, json::error_handler_t::replace)));
  }
  return parsed;
}

}  // namespace

Expected<JobPolicy> parse_job_policy(const json& config_map) {
  JobPolicy policy;
  const json* data = json_find(config_map, "data");
  if (data == nullptr) return policy;
  auto accounts = list_in(*data, "serviceAccounts");
  if (!accounts) return unexpected(accounts.error());
  if (!accounts->is_null()) {
    for (const auto& a : *accounts) {
      if (!a.is_string()) {
        return error(
            fmt::format("ConfigMap {} data.serviceAccounts: every entry must be a name, "
                        "got {}",
                        kJobPolicyConfigMap, a.dump()));
      }
      policy.service_accounts.push_back(a.get<std::string>());
    }
  }
  auto tolerations = list_in(*data, "tolerations");
  if (!tolerations) return unexpected(tolerations.error());
  if (!tolerations->is_null()) {
    for (const auto& t : *tolerations) {
      if (!t.is_object()) {
        return error(
            fmt::format("ConfigMap {} data.tolerations: every entry must be a "
                        "toleration object, got {}",
                        kJobPolicyConfigMap, t.dump()));
      }
      policy.tolerations.push_back(t);
    }
  }
  auto images = list_in(*data, "images");
  if (!images) return unexpected(images.error());
  if (!images->is_null()) {
    policy.images.clear();
    for (const auto& i : *images) {
      if (!i.is_string()) {
        return error(fmt::format("ConfigMap {} data.images: every entry must be a string, got {}",
                                 kJobPolicyConfigMap, i.dump()));
      }
      policy.images.push_back(i.get<std::string>());
    }
  }
  return policy;
}

std::vector<std::string> check_job_policy(const json& job, const JobPolicy& policy) {
  std::vector<std::string> problems;
  const json* spec = json_find(job, "spec");
  if (spec == nullptr) return problems;
  if (const json* pt = json_find(*spec, "podTemplate"); pt != nullptr && pt->is_object()) {
    const std::string sa = json_string(*pt, "serviceAccountName");
    if (!sa.empty() && std::find(policy.service_accounts.begin(), policy.service_accounts.end(),
                                 sa) == policy.service_accounts.end()) {
      problems.push_back(fmt::format(
          "spec.podTemplate.serviceAccountName: \"{}\" is not allowed by the operator's job "
          "policy (allowed: {}; an administrator allows more in the chart's "
          "jobPolicy.serviceAccounts)",
          sa, describe_list(policy.service_accounts)));
    }
    if (const json* tolerations = json_find(*pt, "tolerations");
        tolerations != nullptr && tolerations->is_array()) {
      std::vector<std::string> allowed;
      for (const auto& t : policy.tolerations) allowed.push_back(toleration_key(t));
      for (std::size_t i = 0; i < tolerations->size(); ++i) {
        const json& t = (*tolerations)[i];
        if (!t.is_object()) continue;
        if (std::find(allowed.begin(), allowed.end(), toleration_key(t)) != allowed.end()) continue;
        problems.push_back(fmt::format(
            "spec.podTemplate.tolerations[{}]: {} is not allowed by the operator's job policy "
            "(allowed: {}; an administrator allows more in the chart's jobPolicy.tolerations)",
            i, t.dump(-1, ' ', false, json::error_handler_t::replace),
            policy.tolerations.empty()
                ? std::string("none")
                : json(policy.tolerations).dump(-1, ' ', false, json::error_handler_t::replace)));
      }
    }
  }
  if (const json* models = json_find(*spec, "models"); models != nullptr && models->is_array()) {
    for (std::size_t i = 0; i < models->size(); ++i) {
      const std::string image = json_string((*models)[i], "image");
      if (image.empty() || image_allowed(image, policy.images)) continue;
      problems.push_back(fmt::format(
          "spec.models[{}].image: \"{}\" is not allowed by the operator's job policy (allowed: "
          "{}; an administrator allows more in the chart's jobPolicy.images)",
          i, image, describe_list(policy.images)));
    }
  }
  return problems;
}

}  // namespace depl::controller
