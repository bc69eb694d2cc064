// What an administrator lets DependableTrainingJobs ask of their worker pods: whoever may create a
// job gets pods made by the controller, so the ServiceAccount, tolerations and images a job may
// name are an allow-list (the ConfigMap depl-job-policy in the controller's namespace, from the
// chart's values.jobPolicy). A job that asks for more is refused (InvalidSpec) with a message
// naming the field; nothing else of the pod is the job's to choose (worker_pods.hpp sets a
// restricted Pod Security Standard securityContext).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"

namespace depl::controller {

inline constexpr const char* kJobPolicyConfigMap = "depl-job-policy";

struct JobPolicy {
  // Names spec.podTemplate.serviceAccountName may take, besides none: without one, workers run as
  // the namespace's default ServiceAccount with no API token mounted.
  std::vector<std::string> service_accounts;
  // Entries spec.podTemplate.tolerations may list: each must equal one of these in key,
  // operator, value and effect (tolerationSeconds is the job's). The operator itself adds
  // nvidia.com/gpu:NoSchedule to every worker.
  std::vector<nlohmann::json> tolerations;
  // What models[].image may be: "*" anything, "<prefix>*" any image starting with the prefix,
  // otherwise exactly that reference.
  std::vector<std::string> images = {"*"};
};

// The policy a depl-job-policy ConfigMap holds (data.serviceAccounts, data.tolerations,
// data.images, each a JSON list; a key left out keeps the default). An error names the key.
Expected<JobPolicy> parse_job_policy(const nlohmann::json& config_map);

// What `job` asks that `policy` does not allow, each "path: why" naming the field; empty when
// nothing. Fields of the wrong shape are validate_worker_fields' to report and are skipped.
std::vector<std::string> check_job_policy(const nlohmann::json& job, const JobPolicy& policy);

}  // namespace depl::controller
