#include "sim/scheduling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "depl/common/quantity.hpp"

namespace depl::devcluster {

namespace {

using json = nlohmann::json;

double quantity(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return 0;
  auto q = parse_quantity(v.get<std::string>());
  return q ? *q : 0;
}

const json& at(const json& object, std::initializer_list<const char*> path) {
  static const json null_value;
  const json* cur = &object;
  for (const char* key : path) {
    if (!cur->is_object()) return null_value;
    auto it = cur->find(key);
    if (it == cur->end()) return null_value;
    cur = &*it;
  }
  return *cur;
}

PodResources container_requests(const json& container) {
  PodResources r;
  const json& requests = at(container, {"resources", "requests"});
  const json& limits = at(container, {"resources", "limits"});
  auto get = [&](const char* name) {
    if (requests.is_object() && requests.contains(name)) return quantity(requests[name]);
    if (limits.is_object() && limits.contains(name)) return quantity(limits[name]);
    return 0.0;
  };
  r.cpu = get("cpu");
  r.memory = get("memory");
  r.gpu = get("nvidia.com/gpu");
  return r;
}

std::string label(const json& node, const std::string& key) {
  const json& labels = at(node, {"metadata", "labels"});
  if (!labels.is_object() || !labels.contains(key) || !labels[key].is_string()) return "";
  return labels[key].get<std::string>();
}

bool has_label(const json& node, const std::string& key) {
  const json& labels = at(node, {"metadata", "labels"});
  return labels.is_object() && labels.contains(key);
}

bool expression_matches(const json& expr, const json& node) {
  const std::string key = expr.value("key", "");
  const std::string op = expr.value("operator", "");
  std::vector<std::string> values;
  if (expr.contains("values") && expr["values"].is_array()) {
    for (const auto& v : expr["values"]) {
      if (v.is_string()) values.push_back(v.get<std::string>());
    }
  }
  const bool present = has_label(node, key);
  const std::string value = label(node, key);
  const bool listed = std::find(values.begin(), values.end(), value) != values.end();
  if (op == "In") return present && listed;
  if (op == "NotIn") return !present || !listed;
  if (op == "Exists") return present;
  if (op == "DoesNotExist") return !present;
  if (op == "Gt" || op == "Lt") {
    if (!present || values.size() != 1) return false;
    const double have = std::strtod(value.c_str(), nullptr);
    const double want = std::strtod(values[0].c_str(), nullptr);
    return op == "Gt" ? have > want : have < want;
  }
  return false;
}

bool tolerates(const json& toleration, const json& taint) {
  const std::string effect = toleration.value("effect", "");
  if (!effect.empty() && effect != taint.value("effect", "")) return false;
  const std::string key = toleration.value("key", "");
  const std::string op = toleration.value("operator", "Equal");
  if (op == "Exists") return key.empty() || key == taint.value("key", "");
  return key == taint.value("key", "") && toleration.value("value", "") == taint.value("value", "");
}

}  // namespace

PodResources pod_requests(const json& pod) {
  PodResources total;
  total.pods = 1;
  const json& containers = at(pod, {"spec", "containers"});
  if (containers.is_array()) {
    for (const auto& c : containers) {
      const auto r = container_requests(c);
      total.cpu += r.cpu;
      total.memory += r.memory;
      total.gpu += r.gpu;
    }
  }
  const json& inits = at(pod, {"spec", "initContainers"});
  if (inits.is_array()) {
    for (const auto& c : inits) {
      const auto r = container_requests(c);
      total.cpu = std::max(total.cpu, r.cpu);
      total.memory = std::max(total.memory, r.memory);
      total.gpu = std::max(total.gpu, r.gpu);
    }
  }
  return total;
}

PodResources node_allocatable(const json& node) {
  PodResources r;
  const json& alloc = at(node, {"status", "allocatable"});
  if (!alloc.is_object()) return r;
  if (alloc.contains("cpu")) r.cpu = quantity(alloc["cpu"]);
  if (alloc.contains("memory")) r.memory = quantity(alloc["memory"]);
  if (alloc.contains("nvidia.com/gpu")) r.gpu = quantity(alloc["nvidia.com/gpu"]);
  r.pods = alloc.contains("pods") ? static_cast<int>(quantity(alloc["pods"])) : 110;
  return r;
}

bool pod_is_terminal(const json& pod) {
  const json& phase = at(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

std::string_view pod_node_name(const json& pod) {
  const json& node = at(pod, {"spec", "nodeName"});
  return node.is_string() ? std::string_view(node.get_ref<const std::string&>())
                          : std::string_view();
}

bool node_is_ready(const json& node) {
  const json& conditions = at(node, {"status", "conditions"});
  if (!conditions.is_array()) return false;
  for (const auto& c : conditions) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

bool matches_node_selector(const json& pod, const json& node) {
  const json& selector = at(pod, {"spec", "nodeSelector"});
  if (!selector.is_object()) return true;
  for (const auto& [key, value] : selector.items()) {
    if (!has_label(node, key) || !value.is_string() ||
        label(node, key) != value.get<std::string>()) {
      return false;
    }
  }
  return true;
}

bool matches_required_affinity(const json& pod, const json& node) {
  const json& terms =
      at(pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
               "nodeSelectorTerms"});
  if (!terms.is_array() || terms.empty()) return true;
  // Terms are ORed; the expressions of one term are ANDed.
  for (const auto& term : terms) {
    bool all = true;
    bool any_expression = false;
    for (const char* list : {"matchExpressions"}) {
      if (!term.contains(list) || !term[list].is_array()) continue;
      for (const auto& expr : term[list]) {
        any_expression = true;
        if (!expression_matches(expr, node)) {
          all = false;
          break;
        }
      }
    }
    if (term.contains("matchFields") && term["matchFields"].is_array()) {
      for (const auto& expr : term["matchFields"]) {
        any_expression = true;
        // Only metadata.name is a valid node field.
        json by_name = {
            {"metadata", {{"labels", {{"metadata.name", at(node, {"metadata", "name"})}}}}}};
        if (!expression_matches(expr, by_name)) all = false;
      }
    }
    if (all && any_expression) return true;
  }
  return false;
}

std::optional<json> untolerated_taint(const json& pod, const json& node) {
  const json& taints = at(node, {"spec", "taints"});
  if (!taints.is_array()) return std::nullopt;
  const json& tolerations = at(pod, {"spec", "tolerations"});
  for (const auto& taint : taints) {
    const std::string effect = taint.value("effect", "");
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    bool ok = false;
    if (tolerations.is_array()) {
      for (const auto& t : tolerations) ok = ok || tolerates(t, taint);
    }
    if (!ok) return taint;
  }
  return std::nullopt;
}

NodeFacts node_facts(const json& node) {
  NodeFacts f;
  f.node = &node;
  const json& name = at(node, {"metadata", "name"});
  if (name.is_string()) f.name = name.get<std::string>();
  f.ready = node_is_ready(node);
  f.unschedulable = at(node, {"spec", "unschedulable"}) == true;
  f.allocatable = node_allocatable(node);
  return f;
}

namespace {

// Why `node` cannot take a pod asking for `want` ("" when it can), in kube-scheduler's words.
// Several resource shortfalls are each a reason of their own.
std::vector<std::string> refusals(const json& pod, const PodResources& want, const NodeFacts& node,
                                  const NodeUsage& used) {
  std::vector<std::string> why;
  if (!node.ready) {
    why.push_back("node(s) were not ready");
  } else if (node.unschedulable) {
    why.push_back("node(s) were unschedulable");
  } else if (!matches_node_selector(pod, *node.node) ||
             !matches_required_affinity(pod, *node.node)) {
    why.push_back("node(s) didn't match Pod's node affinity/selector");
  } else if (auto taint = untolerated_taint(pod, *node.node)) {
    const std::string value = taint->value("value", "");
    why.push_back(
        fmt::format("node(s) had untolerated taint {{{}: {}}}", taint->value("key", ""), value));
  } else {
    const PodResources& cap = node.allocatable;
    PodResources have;
    if (auto it = used.find(node.name); it != used.end()) have = it->second;
    if (have.pods + 1 > cap.pods) why.push_back("Too many pods");
    if (want.cpu > 0 && have.cpu + want.cpu > cap.cpu + 1e-9) why.push_back("Insufficient cpu");
    if (want.memory > 0 && have.memory + want.memory > cap.memory + 1e-9) {
      why.push_back("Insufficient memory");
    }
    if (want.gpu > 0 && have.gpu + want.gpu > cap.gpu + 1e-9) {
      why.push_back("Insufficient nvidia.com/gpu");
    }
  }
  return why;
}

}  // namespace

SchedulingDecision choose_among(const json& pod, const std::vector<NodeFacts>& nodes,
                                const NodeUsage& used) {
  const PodResources want = pod_requests(pod);
  const bool any_selector = at(pod, {"spec", "nodeSelector"}).is_object();
  const bool any_affinity = !at(pod, {"spec", "affinity"}).is_null();
  // The fitting node left with the fewest free GPUs wins (then the name). Nodes are checked
  // cheapest test first; the reasons are only put into words when no node fits.
  const NodeFacts* best = nullptr;
  double best_free_gpu = 0;
  for (const auto& node : nodes) {
    if (!node.ready || node.unschedulable) continue;
    const PodResources& cap = node.allocatable;
    PodResources have;
    if (auto it = used.find(node.name); it != used.end()) have = it->second;
    if (have.pods + 1 > cap.pods || (want.cpu > 0 && have.cpu + want.cpu > cap.cpu + 1e-9) ||
        (want.memory > 0 && have.memory + want.memory > cap.memory + 1e-9) ||
        (want.gpu > 0 && have.gpu + want.gpu > cap.gpu + 1e-9)) {
      continue;
    }
    const double free_gpu = cap.gpu - have.gpu - want.gpu;
    if (best && (free_gpu > best_free_gpu || (free_gpu == best_free_gpu && node.name > best->name)))
      continue;  // fits, but would not win: its labels and taints need no look
    if ((any_selector || any_affinity) &&
        (!matches_node_selector(pod, *node.node) || !matches_required_affinity(pod, *node.node)))
      continue;
    if (untolerated_taint(pod, *node.node)) continue;
    best = &node;
    best_free_gpu = free_gpu;
  }
  SchedulingDecision decision;
  if (best) {
    decision.node = best->name;
    return decision;
  }
  std::map<std::string, int> reasons;
  for (const auto& node : nodes) {
    for (const auto& w : refusals(pod, want, node, used)) ++reasons[w];
  }
  std::string message = fmt::format("0/{} nodes are available", nodes.size());
  bool first = true;
  for (const auto& [why, count] : reasons) {
    message += fmt::format("{} {} {}", first ? ":" : ",", count, why);
    first = false;
  }
  decision.message = message + ".";
  return decision;
}

SchedulingDecision choose_node(const json& pod, const std::vector<json>& nodes,
                               const NodeUsage& used) {
  std::vector<NodeFacts> facts;
  facts.reserve(nodes.size());
  for (const auto& node : nodes) facts.push_back(node_facts(node));
  return choose_among(pod, facts, used);
}

}  // namespace depl::devcluster
