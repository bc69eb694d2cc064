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

SchedulingDecision choose_node(const json& pod, const std::vector<json>& nodes,
                               const std::map<std::string, PodResources>& used) {
  const PodResources want = pod_requests(pod);
  std::map<std::string, int> reasons;
  const json* best = nullptr;
  double best_free_gpu = 0;
  std::string best_name;
  for (const auto& node : nodes) {
    const std::string name = at(node, {"metadata", "name"}).is_string()
                                 ? at(node, {"metadata", "name"}).get<std::string>()
                                 : "";
    std::vector<std::string> why;
    if (!node_is_ready(node)) {
      why.push_back("node(s) were not ready");
    } else if (at(node, {"spec", "unschedulable"}) == true) {
      why.push_back("node(s) were unschedulable");
    } else if (!matches_node_selector(pod, node) || !matches_required_affinity(pod, node)) {
      why.push_back("node(s) didn't match Pod's node affinity/selector");
    } else if (auto taint = untolerated_taint(pod, node)) {
      const std::string value = taint->value("value", "");
      why.push_back(
          fmt::format("node(s) had untolerated taint {{{}: {}}}", taint->value("key", ""), value));
    } else {
      const PodResources cap = node_allocatable(node);
      PodResources have;
      if (auto it = used.find(name); it != used.end()) have = it->second;
      if (have.pods + 1 > cap.pods) why.push_back("Too many pods");
      if (want.cpu > 0 && have.cpu + want.cpu > cap.cpu + 1e-9) why.push_back("Insufficient cpu");
      if (want.memory > 0 && have.memory + want.memory > cap.memory + 1e-9) {
        why.push_back("Insufficient memory");
      }
      if (want.gpu > 0 && have.gpu + want.gpu > cap.gpu + 1e-9) {
        why.push_back("Insufficient nvidia.com/gpu");
      }
      if (why.empty()) {
        const double free_gpu = cap.gpu - have.gpu - want.gpu;
        if (!best || free_gpu < best_free_gpu || (free_gpu == best_free_gpu && name < best_name)) {
          best = &node;
          best_free_gpu = free_gpu;
          best_name = name;
        }
      }
    }
    for (const auto& w : why) ++reasons[w];
  }
  SchedulingDecision decision;
  if (best) {
    decision.node = best_name;
    return decision;
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

}  // namespace depl::devcluster
