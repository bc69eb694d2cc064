#include "depl/controller/creation_rejection.hpp"

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"
#include "depl/controller/job_status.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

constexpr const char* kNotRunning = "no workers run while the API server refuses them";

long generation_of(const json& job) {
  const json& g = json_at(job, {"metadata", "generation"});
  return g.is_number_integer() ? g.get<long>() : 1;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The index of the element of `list` whose "name" is `name`, or -1.
int index_by_name(const json& list, const std::string& name) {
  if (!list.is_array() || name.empty()) return -1;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (json_string(list[i], "name") == name) return static_cast<int>(i);
  }
  return -1;
}

// The number in "[n]" right after `prefix` in `field`, or -1.
int index_after(const std::string& field, const std::string& prefix) {
  if (!starts_with(field, prefix + "[")) return -1;
  try {
    return std::stoi(field.substr(prefix.size() + 1));
  } catch (...) {
    return -1;
  }
}

// The job's field a worker Pod's (or the Service's) `field` was built from (worker_pods.cpp), or
// "" when it is not the user's.
std::string job_field_of(const json& job, const json& object, const std::string& field) {
  if (field == "metadata.name" || starts_with(field, "metadata.labels") ||
      field == "spec.hostname" || field == "spec.subdomain") {
    return "metadata.name";  // object names and hostnames are made from the job's name
  }
  if (json_string(object, "kind") != "Pod") return "";
  const json& spec = json_member(job, "spec");
  const json& pod_spec = json_member(object, "spec");
  if (field == "spec.serviceAccountName" || starts_with(field, "spec.nodeSelector")) {
    return "spec.podTemplate." + field.substr(5);
  }
  if (int k = index_after(field, "spec.tolerations"); k >= 1) {
    return fmt::format("spec.podTemplate.tolerations[{}]", k - 1);  // [0] is the operator's
  }
  const std::string container = "spec.containers[0]";
  if (!starts_with(field, container + ".")) return "";
  const json& containers = json_member(pod_spec, "containers");
  if (!containers.is_array() || containers.empty()) return "";
  const json& env = json_member(containers[0], "env");
  if (!env.is_array()) return "";
  std::string model_name;  // the variant the pod runs
  for (const auto& e : env) {
    if (json_string(e, "name") == "DEPL_MODEL") model_name = json_string(e, "value");
  }
  const json& models = json_member(spec, "models");
  const int model = index_by_name(models, model_name);
  if (model < 0) return "";
  const std::string model_path = fmt::format("spec.models[{}]", model);
  if (starts_with(field, container + ".resources")) return model_path + ".resources";
  if (starts_with(field, container + ".image")) return model_path + ".image";
  const int k = index_after(field, container + ".env");
  if (k >= 0 && static_cast<std::size_t>(k) < env.size()) {
    // The model's env follows the contract's variables: find the entry by name.
    const int m = index_by_name(json_member(models[static_cast<std::size_t>(model)], "env"),
                                json_string(env[static_cast<std::size_t>(k)], "name"));
    if (m >= 0) return fmt::format("{}.env[{}]", model_path, m);
  }
  return "";
}

// `text` cut to at most `limit` bytes on a UTF-8 character boundary, marked when cut.
std::string bounded(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t end = limit - 3;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

}  // namespace

bool is_rejection(const kube::ApiError& error) {
  return error.code == 422 || error.code == 400;
}

std::string rejection_message(const json& job, const json& object, const kube::ApiError& error) {
  std::string what;
  const json& causes = json_member(error.details, "causes");
  if (causes.is_array()) {
    for (const auto& cause : causes) {
      const std::string field = json_string(cause, "field");
      const std::string message = json_string(cause, "message");
      if (field.empty() && message.empty()) continue;
      if (!what.empty()) what += "; ";
      what += field.empty() ? message : fmt::format("{}: {}", field, message);
      if (const std::string from = job_field_of(job, object, field); !from.empty()) {
        what += fmt::format(" (from the job's {})", from);
      }
    }
  }
  if (what.empty()) what = error.message;
  return bounded(
      fmt::format("the API server refused {} {} ({} {}): {}", json_string(object, "kind"),
                  json_string(json_member(object, "metadata"), "name"), error.code, error.reason,
                  what),
      kMaxRejectionMessage);
}

std::string failed_create_message(const json& object, const kube::ApiError& error) {
  return bounded(
      fmt::format("Error creating {} {}: {}", json_string(object, "kind"),
                  json_string(json_member(object, "metadata"), "name"), error.to_string()),
      kMaxRejectionMessage);
}

std::optional<std::string> recorded_rejection(const JobStatus& status, long generation) {
  const Condition* valid = status.condition(conditions::kValid);
  if (valid != nullptr && valid->status == "False" && valid->reason == kRejectedByApiServer &&
      valid->observed_generation == generation) {
    return valid->message;
  }
  return std::nullopt;
}

bool record_rejection(JobStatus& status, const std::string& message, long generation,
                      const std::string& now_rfc3339) {
  const JobStatus before = status;
  set_condition(status, conditions::kValid, false, kRejectedByApiServer, message, generation,
                now_rfc3339);
  set_condition(status, conditions::kRunning, false, kRejectedByApiServer, kNotRunning, generation,
                now_rfc3339);
  status.phase = phases::kPending;
  status.message = message;
  return !(status == before);
}

std::optional<json> job_recording_rejection(const json& built_from, const json& latest,
                                            const std::string& message,
                                            const std::string& now_rfc3339) {
  const long generation = generation_of(built_from);
  if (generation_of(latest) != generation) return std::nullopt;
  JobStatus status = decode_status(json_member(latest, "status"));
  if (!record_rejection(status, message, generation, now_rfc3339)) return std::nullopt;
  json updated = latest;
  updated["status"] = encode_status(status);
  return updated;
}

}  // namespace depl::controller
