#include "sim/gang_scheduling.hpp"

#include <fmt/format.h>

#include <functional>

#include "depl/common/quantity.hpp"

namespace depl::devcluster {

using json = nlohmann::json;

namespace {

const json& member(const json& object, const char* key) {
  static const json null_value;
  if (!object.is_object()) return null_value;
  auto it = object.find(key);
  return it == object.end() ? null_value : *it;
}

std::string pod_name(const json& pod) {
  const json& name = member(member(pod, "metadata"), "name");
  return name.is_string() ? name.get<std::string>() : std::string();
}

std::string group_name(const json& pod_group) {
  const json& meta = member(pod_group, "metadata");
  const json& ns = member(meta, "namespace");
  const json& name = member(meta, "name");
  return fmt::format("{}/{}", ns.is_string() ? ns.get<std::string>() : "",
                     name.is_string() ? name.get<std::string>() : "");
}

double quantity(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return 0;
  auto q = parse_quantity(v.get<std::string>());
  return q ? *q : 0;
}

// What spec.minResources asks for beyond what the ready nodes have free, in the plugin's words
// ("resource gap: ..."), or "" when it is covered.
std::string resource_gap(const json& min_resources, int min_member,
                         const std::vector<NodeFacts>& nodes, const NodeUsage& used) {
  PodResources free;
  for (const auto& node : nodes) {
    if (!node.ready || node.unschedulable) continue;
    PodResources have;
    if (auto it = used.find(node.name); it != used.end()) have = it->second;
    free.cpu += node.allocatable.cpu - have.cpu;
    free.memory += node.allocatable.memory - have.memory;
    free.gpu += node.allocatable.gpu - have.gpu;
    free.pods += node.allocatable.pods - have.pods;
  }
  std::vector<std::string> gaps;
  auto check = [&](const char* name, double want, double have) {
    if (want > have + 1e-9) gaps.push_back(fmt::format("{}: {:g}", name, want - have));
  };
  if (min_resources.is_object()) {
    check("cpu", quantity(member(min_resources, "cpu")), free.cpu);
    check("memory", quantity(member(min_resources, "memory")), free.memory);
    check("nvidia.com/gpu", quantity(member(min_resources, "nvidia.com/gpu")), free.gpu);
  }
  check("pods", min_member, free.pods);
  if (gaps.empty()) return {};
  return fmt::format("resource gap: {}", fmt::join(gaps, ", "));
}

void add(NodeUsage& used, const std::string& node, const PodResources& r) {
  PodResources& u = used[node];
  u.cpu += r.cpu;
  u.memory += r.memory;
  u.gpu += r.gpu;
  u.pods += 1;
}

}  // namespace

std::string_view pod_group_of(const json& pod) {
  const json& label = member(member(member(pod, "metadata"), "labels"), kPodGroupLabel);
  return label.is_string() ? std::string_view(label.get_ref<const std::string&>())
                           : std::string_view();
}

namespace {

GangDecision refuse_all(const std::vector<const json*>& waiting,
                        const std::function<std::string(const json&)>& message_for) {
  GangDecision decision;
  decision.nodes.assign(waiting.size(), std::nullopt);
  for (const json* pod : waiting) decision.messages.push_back(message_for(*pod));
  return decision;
}

// Places the waiting pods of the group `group` ("<namespace>/<name>") one after another; if
// fewer than `min_count` (the field `min_field` of the group) would then be bound, with the
// `bound` ones, none is.
GangDecision place_together(const std::vector<const json*>& waiting, int bound,
                            const std::string& group, int min_count, const char* min_field,
                            const std::vector<NodeFacts>& nodes, NodeUsage used) {
  GangDecision decision;
  decision.nodes.assign(waiting.size(), std::nullopt);
  decision.messages.assign(waiting.size(), std::string());
  int placed = 0;
  std::string first_refusal;
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    const SchedulingDecision one = choose_among(*waiting[i], nodes, used);
    if (one.node) {
      add(used, *one.node, pod_requests(*waiting[i]));
      decision.nodes[i] = one.node;
      ++placed;
    } else {
      decision.messages[i] = one.message;
      if (first_refusal.empty()) first_refusal = one.message;
    }
  }
  if (bound + placed >= min_count) return decision;
  return refuse_all(waiting, [&](const json&) {
    return fmt::format(
        "PodGroup {}: {} of its pods are bound and {} more fit, fewer than {} {}; none is bound "
        "until they all fit ({})",
        group, bound, placed, min_field, min_count, first_refusal);
  });
}

}  // namespace

GangDecision place_gang(const std::vector<const json*>& waiting, int bound, const json* pod_group,
                        const std::vector<NodeFacts>& nodes, NodeUsage used) {
  if (!pod_group) {
    return refuse_all(waiting, [](const json& pod) {
      return fmt::format("PodGroup {} of pod {} not found", pod_group_of(pod), pod_name(pod));
    });
  }
  const json& spec = member(*pod_group, "spec");
  const json& min_member_value = member(spec, "minMember");
  const int min_member = min_member_value.is_number_integer() ? min_member_value.get<int>() : 0;
  const int siblings = bound + static_cast<int>(waiting.size());
  if (siblings < min_member) {
    return refuse_all(waiting, [&](const json& pod) {
      return fmt::format(
          "pre-filter pod {} cannot find enough sibling pods, current pods number: {}, "
          "minMember of group: {}",
          pod_name(pod), siblings, min_member);
    });
  }
  if (const json& min_resources = member(spec, "minResources"); min_resources.is_object()) {
    const std::string gap = resource_gap(min_resources, min_member, nodes, used);
    if (!gap.empty()) {
      return refuse_all(waiting, [&](const json&) {
        return fmt::format("PodGroup {} does not fit: {}", group_name(*pod_group), gap);
      });
    }
  }
  return place_together(waiting, bound, group_name(*pod_group), min_member, "minMember", nodes,
                        std::move(used));
}

std::string_view scheduling_group_of(const json& pod) {
  const json& name = member(member(member(pod, "spec"), "schedulingGroup"), "podGroupName");
  return name.is_string() ? std::string_view(name.get_ref<const std::string&>())
                          : std::string_view();
}

GangDecision place_native_gang(const std::vector<const json*>& waiting, int bound,
                               const json* pod_group, const std::vector<NodeFacts>& nodes,
                               NodeUsage used) {
  if (!pod_group) {
    return refuse_all(waiting, [](const json& pod) {
      const json& ns = member(member(pod, "metadata"), "namespace");
      return fmt::format("PodGroup {}/{} of pod {} not found: waiting for it",
                         ns.is_string() ? ns.get<std::string>() : "", scheduling_group_of(pod),
                         pod_name(pod));
    });
  }
  const json& policy = member(member(*pod_group, "spec"), "schedulingPolicy");
  const json& min_count_value = member(member(policy, "gang"), "minCount");
  // Basic policy (or none): each pod on its own, as without a group.
  const int min_count = min_count_value.is_number_integer() ? min_count_value.get<int>() : 0;
  const int siblings = bound + static_cast<int>(waiting.size());
  if (siblings < min_count) {
    return refuse_all(waiting, [&](const json&) {
      return fmt::format(
          "PodGroup {}: {} of its pods exist, fewer than minCount {}; none is bound until "
          "{} can be placed together",
          group_name(*pod_group), siblings, min_count, min_count);
    });
  }
  return place_together(waiting, bound, group_name(*pod_group), min_count, "minCount", nodes,
                        std::move(used));
}

}  // namespace depl::devcluster
