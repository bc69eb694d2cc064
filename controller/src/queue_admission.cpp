#include "depl/controller/queue_admission.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "depl/common/json_fields.hpp"
#include "depl/common/kubernetes_names.hpp"
#include "depl/common/time.hpp"

namespace depl::controller {

using nlohmann::json;

std::string queue_name_of(const json& job) {
  const std::string named = json_string(json_member(job, "spec"), "queueName");
  if (!named.empty()) return named;
  return json_string(json_at(job, {"metadata", "labels"}), kQueueNameLabel);
}

std::optional<std::string> queue_name_problem(const json& job) {
  const bool from_spec = !json_string(json_member(job, "spec"), "queueName").empty();
  const std::string name = queue_name_of(job);
  if (name.empty()) return std::nullopt;
  if (name.size() <= 63 && is_dns1123_subdomain(name)) return std::nullopt;
  return fmt::format(
      "{} {}: a queue name is a LocalQueue's name and a label value: lower case letters, "
      "digits, '-' and '.', starting and ending with a letter or digit, at most 63 characters",
      from_spec ? "spec.queueName" : fmt::format("metadata.labels[{}]", kQueueNameLabel),
      json(name).dump());
}

std::string pod_group_name(const std::string& job, int revision, std::size_t phase, int round) {
  std::string name = fmt::format("{}-p{}-v{}-r{}", job, phase, revision, round);
  if (name.size() <= 63) return name;
  // FNV-1a of the whole name keeps cut names of different jobs apart.
  std::uint64_t h = 1469598103934665603ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  std::string head = name.substr(0, 63 - 9);
  while (!head.empty() && (head.back() == '-' || head.back() == '.')) head.pop_back();
  return fmt::format("{}-{:08x}", head, static_cast<std::uint32_t>(h));
}

void join_pod_group(json& pod, const std::string& queue, const std::string& group,
                    int total_count) {
  json& meta = pod["metadata"];
  meta["labels"][kQueueNameLabel] = queue;
  meta["labels"][kPodGroupNameLabel] = group;
  meta["annotations"][kPodGroupTotalCountAnnotation] = std::to_string(total_count);
  meta["annotations"][kRetriableInGroupAnnotation] = "false";
}

std::string holding_gates(const json& pod) {
  const json& spec = json_member(pod, "spec");
  const json& gates = json_member(spec, "schedulingGates");
  if (!gates.is_array() || gates.empty()) return {};
  if (!json_string(spec, "nodeName").empty()) return {};
  if (json_at(pod, {"metadata", "deletionTimestamp"}).is_string()) return {};
  const std::string phase = json_string(json_member(pod, "status"), "phase");
  if (phase == "Succeeded" || phase == "Failed") return {};
  std::string names;
  for (const auto& gate : gates) {
    const std::string name = json_string(gate, "name");
    if (name.empty()) continue;
    names += (names.empty() ? "" : ", ") + name;
  }
  return names.empty() ? std::string("(unnamed)") : names;
}

double queued_seconds(const QueueRecord& queue, std::chrono::system_clock::time_point now) {
  double total = queue.waited_seconds;
  if (auto since = parse_rfc3339(queue.since); since && now > *since) {
    total += std::chrono::duration<double>(now - *since).count();
  }
  return total;
}

std::optional<double> seconds_until_wait_threatens_deadline(std::optional<double> deadline_seconds,
                                                            double plan_seconds,
                                                            double queued_seconds) {
  if (!deadline_seconds) return std::nullopt;
  return *deadline_seconds - plan_seconds - queued_seconds;
}

}  // namespace depl::controller
