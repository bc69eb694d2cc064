#include "depl/controller/creation_rejection.hpp"

#include <fmt/format.h>

#include "depl/controller/job_decision.hpp"
#include "depl/controller/job_status.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

constexpr const char* kNotRunning = "no workers run while the API server refuses them";

std::string str(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& at(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it != object.end() ? *it : kNull;
}

long generation_of(const json& job) {
  const json& g = at(at(job, "metadata"), "generation");
  return g.is_number_integer() ? g.get<long>() : 1;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The index of the element of `list` whose "name" is `name`, or -1.
int index_by_name(const json& list, const std::string& name) {
  if (!list.is_array() || name.empty()) return -1;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (str(list[i], "name") == name) return static_cast<int>(i);
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
  if (str(object, "kind") != "Pod") return "";
  const json& spec = at(job, "spec");
  const json& pod_spec = at(object, "spec");
  if (field == "spec.serviceAccountName" || starts_with(field, "spec.nodeSelector")) {
    return "spec.podTemplate." + field.substr(5);
  }
  if (int k = index_after(field, "spec.tolerations"); k >= 1) {
    return fmt::format("spec.podTemplate.tolerations[{}]", k - 1);  // [0] is the operator's
  }
  const std::string container = "spec.containers[0]";
  if (!starts_with(field, container + ".")) return "";
  const json& containers = at(pod_spec, "containers");
  if (!containers.is_array() || containers.empty()) return "";
  const json& env = at(containers[0], "env");
  if (!env.is_array()) return "";
  std::string model_name;  // the variant the pod runs
  for (const auto& e : env) {
    if (str(e, "name") == "DEPL_MODEL") model_name = str(e, "value");
  }
  const json& models = at(spec, "models");
  const int model = index_by_name(models, model_name);
  if (model < 0) return "";
  const std::string model_path = fmt::format("spec.models[{}]", model);
  if (starts_with(field, container + ".resources")) return model_path + ".resources";
  if (starts_with(field, container + ".image")) return model_path + ".image";
  const int k = index_after(field, container + ".env");
  if (k >= 0 && static_cast<std::size_t>(k) < env.size()) {
    // The model's env follows the contract's variables: find the entry by name.
    const int m = index_by_name(at(models[static_cast<std::size_t>(model)], "env"),
                                str(env[static_cast<std::size_t>(k)], "name"));
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
  const json& causes = at(error.details, "causes");
  if (causes.is_array()) {
    for (const auto& cause : causes) {
      const std::string field = str(cause, "field");
      const std::string message = str(cause, "message");
      if (field.empty() && message.empty()) continue;
      if (!what.empty()) what += "; ";
      what += field.empty() ? message : fmt::format("{}: {}", field, message);
      if (const std::string from = job_field_of(job, object, field); !from.empty()) {
        what += fmt::format(" (from the job's {})", from);
      }
    }
  }
  if (what.empty()) what = error.message;
  return bounded(fmt::format("the API server refused {} {} ({} {}): {}", str(object, "kind"),
                             str(at(object, "metadata"), "name"), error.code, error.reason, what),
                 kMaxRejectionMessage);
}

std::string failed_create_message(const json& object, const kube::ApiError& error) {
  return bounded(fmt::format("Error creating {} {}: {}", str(object, "kind"),
                             str(at(object, "metadata"), "name"), error.to_string()),
                 kMaxRejectionMessage);
}

std::optional<std::string> recorded_rejection(const json& status, long generation) {
  const json& conditions = at(status, "conditions");
  if (!conditions.is_array()) return std::nullopt;
  for (const auto& c : conditions) {
    if (str(c, "type") != conditions::kValid) continue;
    const json& observed = at(c, "observedGeneration");
    if (str(c, "status") == "False" && str(c, "reason") == kRejectedByApiServer &&
        observed.is_number_integer() && observed.get<long>() == generation) {
      return str(c, "message");
    }
    return std::nullopt;
  }
  return std::nullopt;
}

bool record_rejection(json& status, const std::string& message, long generation,
                      const std::string& now_rfc3339) {
  if (!status.is_object()) status = json::object();
  const json before = status;
  set_condition(status, conditions::kValid, false, kRejectedByApiServer, message, generation,
                now_rfc3339);
  set_condition(status, conditions::kRunning, false, kRejectedByApiServer, kNotRunning, generation,
                now_rfc3339);
  status["phase"] = phases::kPending;
  status["message"] = message;
  return status != before;
}

std::optional<json> job_recording_rejection(const json& built_from, const json& latest,
                                            const std::string& message,
                                            const std::string& now_rfc3339) {
  const long generation = generation_of(built_from);
  if (generation_of(latest) != generation) return std::nullopt;
  json updated = latest;
  if (!record_rejection(updated["status"], message, generation, now_rfc3339)) return std::nullopt;
  return updated;
}

}  // namespace depl::controller
