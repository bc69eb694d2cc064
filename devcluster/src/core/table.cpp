// Table conversion (kube-apiserver printers for the built-ins we serve, and the
// apiextensions-apiserver tableconvertor for custom resources).
#include "depl/devcluster/table.hpp"

#include <algorithm>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "depl/common/time.hpp"

namespace depl::devcluster {

using nlohmann::json;

namespace {

std::string age_of(const json& timestamp, std::chrono::system_clock::time_point now) {
  if (!timestamp.is_string()) return "<unknown>";
  auto t = parse_rfc3339(timestamp.get<std::string>());
  if (!t) return "<invalid>";
  return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

struct Column {
  PrinterColumn definition;
  std::function<json(const json&, std::chrono::system_clock::time_point)> cell;
};

PrinterColumn col(std::string name, std::string type = "string", int priority = 0,
                  std::string description = "") {
  PrinterColumn c;
  c.name = std::move(name);
  c.type = std::move(type);
  c.priority = priority;
  c.description = std::move(description);
  return c;
}

json str_at(const json& o, const json::json_pointer& p, const char* fallback = "") {
  if (o.contains(p) && o[p].is_string()) return o[p];
  return fallback;
}

Column name_column() {
  PrinterColumn c =
      col("Name", "string", 0, "Name must be unique within a namespace. Cannot be updated.");
  c.format = "name";
  return {c, [](const json& o, auto) { return str_at(o, "/metadata/name"_json_pointer); }};
}

Column age_column() {
  return {col("Age", "string", 0,
              "CreationTimestamp is a timestamp representing the server time "
              "when this object was created."),
          [](const json& o, auto now) {
            return json(age_of(o.value("/metadata/creationTimestamp"_json_pointer, json()), now));
          }};
}

std::string pod_status(const json& pod) {
  std::string reason = pod.value("/status/phase"_json_pointer, std::string("Pending"));
  if (pod.contains("/status/reason"_json_pointer)) {
    reason = pod["/status/reason"_json_pointer].get<std::string>();
  }
  // As kube-apiserver's printer: a pod held by scheduling gates reads SchedulingGated.
  if (pod.contains("/status/conditions"_json_pointer) &&
      pod["/status/conditions"_json_pointer].is_array()) {
    for (const auto& c : pod["/status/conditions"_json_pointer]) {
      if (c.is_object() && c.value("type", "") == "PodScheduled" &&
          c.value("reason", "") == "SchedulingGated") {
        reason = "SchedulingGated";
      }
    }
  }
  const json statuses = pod.value("/status/containerStatuses"_json_pointer, json::array());
  for (const auto& cs : statuses) {
    if (cs.contains("/state/waiting/reason"_json_pointer)) {
      reason = cs["/state/waiting/reason"_json_pointer].get<std::string>();
    } else if (cs.contains("/state/terminated/reason"_json_pointer)) {
      reason = cs["/state/terminated/reason"_json_pointer].get<std::string>();
    } else if (cs.contains("/state/terminated"_json_pointer)) {
      reason =
          fmt::format("ExitCode:{}", cs["/state/terminated"_json_pointer].value("exitCode", 0));
    }
  }
  if (pod.contains("/metadata/deletionTimestamp"_json_pointer)) reason = "Terminating";
  return reason;
}

std::vector<Column> pod_columns() {
  return {
      name_column(),
      {col("Ready", "string", 0,
           "The aggregate readiness state of this pod for accepting traffic."),
       [](const json& pod, auto) {
         std::size_t total = pod.value("/spec/containers"_json_pointer, json::array()).size();
         std::size_t ready = 0;
         for (const auto& cs : pod.value("/status/containerStatuses"_json_pointer, json::array())) {
           if (cs.value("ready", false)) ++ready;
         }
         return json(fmt::format("{}/{}", ready, total));
       }},
      {col("Status", "string", 0, "The aggregate status of the containers in this pod."),
       [](const json& pod, auto) { return json(pod_status(pod)); }},
      {col("Restarts", "string", 0,
           "The number of times the containers in this pod have been restarted."),
       [](const json& pod, auto) {
         std::int64_t restarts = 0;
         for (const auto& cs : pod.value("/status/containerStatuses"_json_pointer, json::array())) {
           restarts += cs.value("restartCount", 0);
         }
         return json(std::to_string(restarts));
       }},
      age_column(),
      {col("IP", "string", 1, "IP address allocated to the pod."),
       [](const json& pod, auto) { return str_at(pod, "/status/podIP"_json_pointer, "<none>"); }},
      {col("Node", "string", 1, "Name of the Node this pod is assigned to."),
       [](const json& pod, auto) { return str_at(pod, "/spec/nodeName"_json_pointer, "<none>"); }},
  };
}

std::vector<Column> node_columns() {
  return {
      name_column(),
      {col("Status", "string", 0, "The status of the node"),
       [](const json& node, auto) {
         std::string status = "Unknown";
         for (const auto& c : node.value("/status/conditions"_json_pointer, json::array())) {
           if (c.value("type", "") == "Ready") {
             status = c.value("status", "") == "True" ? "Ready" : "NotReady";
           }
         }
         if (node.value("/spec/unschedulable"_json_pointer, false)) status += ",SchedulingDisabled";
         return json(status);
       }},
      {col("Roles", "string", 0, "The roles of the node"),
       [](const json& node, auto) {
         std::string roles;
         const std::string prefix = "node-role.kubernetes.io/";
         const json labels = node.value("/metadata/labels"_json_pointer, json::object());
         for (auto& [k, v] : labels.items()) {
           if (k.rfind(prefix, 0) != 0) continue;
           if (!roles.empty()) roles.push_back(',');
           roles.append(k, prefix.size());
         }
         return json(roles.empty() ? "<none>" : roles);
       }},
      age_column(),
      {col("Version", "string", 0, "Kubelet Version reported by the node."),
       [](const json& node, auto) {
         return str_at(node, "/status/nodeInfo/kubeletVersion"_json_pointer);
       }},
      {col("Internal-IP", "string", 1, "List of internal IPs in the node"),
       [](const json& node, auto) {
         for (const auto& a : node.value("/status/addresses"_json_pointer, json::array())) {
           if (a.value("type", "") == "InternalIP") return json(a.value("address", ""));
         }
         return json("<none>");
       }},
  };
}

// A custom resource's additionalPrinterColumns cell: the JSONPath's value, shown as its declared
// type (apiextensions-apiserver's tableconvertor).
json custom_cell(const PrinterColumn& pc, const json& o,
                 std::chrono::system_clock::time_point now) {
  auto value = eval_json_path(o, pc.json_path);
  if (!value || value->is_null()) return json();
  if (pc.type == "date") {
    if (!value->is_string()) return json();
    return json(age_of(*value, now));
  }
  if (pc.type == "string") return value->is_string() ? *value : json(value->dump());
  if (pc.type == "integer" && value->is_number_float()) {
    return json(static_cast<std::int64_t>(value->get<double>()));
  }
  if (pc.type == "boolean" && !value->is_boolean()) return json();
  if ((pc.type == "number" || pc.type == "integer") && !value->is_number()) return json();
  if (value->is_object() || value->is_array()) return json(value->dump());
  return *value;
}

std::vector<Column> custom_columns(const ResourceType& type) {
  std::vector<Column> columns = {name_column()};
  for (const auto& pc : type.printer_columns) {
    columns.push_back({pc, [pc](const json& o, auto now) { return custom_cell(pc, o, now); }});
  }
  if (type.printer_columns.empty()) columns.push_back(age_column());
  return columns;
}

// The value at `pointer` (as text when it is not a string), or `fallback` when absent or null.
Column simple_column(std::string name, std::string pointer, std::string fallback = "<none>") {
  json::json_pointer p(pointer);
  return Column{col(std::move(name)), [p, fallback](const json& o, auto) {
                  if (o.contains(p) && !o[p].is_null()) {
                    return o[p].is_string() ? o[p] : json(o[p].dump());
                  }
                  return json(fallback);
                }};
}

// The number of keys of the objects at `pointers`, together.
Column count_column(std::string name, std::vector<std::string> pointers) {
  return Column{col(std::move(name), "integer"), [pointers](const json& o, auto) {
                  std::size_t n = 0;
                  for (const auto& p : pointers) {
                    json::json_pointer ptr(p);
                    if (o.contains(ptr) && o[ptr].is_object()) n += o[ptr].size();
                  }
                  return json(n);
                }};
}

std::vector<Column> service_columns() {
  return {
      simple_column("Type", "/spec/type", "ClusterIP"),
      simple_column("Cluster-IP", "/spec/clusterIP"),
      {col("External-IP"), [](const json&, auto) { return json("<none>"); }},
      {col("Port(s)"),
       [](const json& svc, auto) {
         std::string ports;
         for (const auto& p : svc.value("/spec/ports"_json_pointer, json::array())) {
           if (!ports.empty()) ports += ",";
           ports +=
               fmt::format("{}/{}", p.value("port", 0), p.value("protocol", std::string("TCP")));
         }
         return json(ports.empty() ? "<none>" : ports);
       }},
  };
}

std::vector<Column> deployment_columns() {
  return {
      {col("Ready"),
       [](const json& d, auto) {
         return json(fmt::format("{}/{}", d.value("/status/readyReplicas"_json_pointer, 0),
                                 d.value("/spec/replicas"_json_pointer, 1)));
       }},
      {col("Up-to-date", "integer"),
       [](const json& d, auto) {
         return json(d.value("/status/updatedReplicas"_json_pointer, 0));
       }},
      {col("Available", "integer"),
       [](const json& d, auto) {
         return json(d.value("/status/availableReplicas"_json_pointer, 0));
       }},
  };
}

// Events have no Name or Age column (kubectl get events).
std::vector<Column> event_columns() {
  return {
      {col("Last Seen"),
       [](const json& e, auto now) {
         json t = e.value("lastTimestamp", json());
         if (t.is_null()) t = e.value("eventTime", json());
         if (t.is_null()) t = e.value("deprecatedLastTimestamp", json());
         return json(age_of(t, now));
       }},
      simple_column("Type", "/type", ""),
      simple_column("Reason", "/reason", ""),
      {col("Object"),
       [](const json& e, auto) {
         json ref = e.value("involvedObject", e.value("regarding", json::object()));
         std::string kind = ref.value("kind", "");
         std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
         return json(fmt::format("{}/{}", kind, ref.value("name", "")));
       }},
      {col("Message"),
       [](const json& e, auto) {
         return json(e.value("message", e.value("note", std::string())));
       }},
  };
}

// The columns between Name and Age of the other built-in kinds (none for kinds not listed).
std::vector<Column> builtin_middle_columns(const std::string& plural) {
  if (plural == "namespaces") return {simple_column("Status", "/status/phase", "Active")};
  if (plural == "services") return service_columns();
  if (plural == "deployments") return deployment_columns();
  if (plural == "configmaps") return {count_column("Data", {"/data", "/binaryData"})};
  if (plural == "secrets") {
    return {simple_column("Type", "/type", "Opaque"), count_column("Data", {"/data"})};
  }
  if (plural == "leases") return {simple_column("Holder", "/spec/holderIdentity", "")};
  return {};
}

std::vector<Column> columns_for(const ResourceType& type) {
  if (type.custom) return custom_columns(type);
  const std::string& r = type.plural;
  if (r == "pods") return pod_columns();
  if (r == "nodes") return node_columns();
  if (r == "events") return event_columns();
  std::vector<Column> columns = {name_column()};
  if (r == "customresourcedefinitions") {
    // No Age: the creation time as a date column (apiextensions-apiserver's printer).
    columns.push_back({col("Created At", "date"), [](const json& o, auto) {
                         return str_at(o, "/metadata/creationTimestamp"_json_pointer);
                       }});
    return columns;
  }
  for (auto& c : builtin_middle_columns(r)) columns.push_back(std::move(c));
  columns.push_back(age_column());
  return columns;
}

json partial_metadata(const json& object) {
  json meta = object.value("metadata", json::object());
  meta.erase("managedFields");
  return {{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", meta}};
}

// One step of a printer-column JSONPath.
struct PathStep {
  enum Kind { Field, Index, Wildcard, Filter } kind;
  std::string name;  // Field: key; Filter: the @.field path
  std::size_t index = 0;
  json filter_value;  // Filter: compared value
};

std::optional<std::vector<PathStep>> parse_path(std::string path) {
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') {
    path = path.substr(1, path.size() - 2);
  }
  std::vector<PathStep> steps;
  std::size_t i = 0;
  if (!path.empty() && path[0] == '$') ++i;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      std::string name;
      while (i < path.size() && path[i] != '.' && path[i] != '[') {
        if (path[i] == '\\' && i + 1 < path.size()) ++i;
        name += path[i++];
      }
      if (name.empty()) return std::nullopt;
      steps.push_back({PathStep::Field, name, 0, {}});
    } else if (path[i] == '[') {
      auto close = path.find(']', i);
      if (close == std::string::npos) return std::nullopt;
      std::string inner = path.substr(i + 1, close - i - 1);
      if (inner.rfind("?(", 0) == 0) {
        // ?(@.type=="Ready") — the value may contain ']' only if quoted; find the real end.
        auto end = path.find(")]", i);
        if (end == std::string::npos) return std::nullopt;
        inner = path.substr(i + 3, end - i - 3);
        close = end + 1;
        auto eq = inner.find("==");
        if (eq == std::string::npos || inner.rfind("@.", 0) != 0) return std::nullopt;
        std::string field = inner.substr(2, eq - 2);
        std::string value = inner.substr(eq + 2);
        json v;
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
          v = value.substr(1, value.size() - 2);
        } else {
          v = json::parse(value, nullptr, false);
          if (v.is_discarded()) return std::nullopt;
        }
        steps.push_back({PathStep::Filter, field, 0, v});
      } else if (inner == "*") {
        steps.push_back({PathStep::Wildcard, "", 0, {}});
      } else if (!inner.empty() && (inner.front() == '\'' || inner.front() == '"')) {
        steps.push_back({PathStep::Field, inner.substr(1, inner.size() - 2), 0, {}});
      } else {
        try {
          steps.push_back({PathStep::Index, "", std::stoul(inner), {}});
        } catch (const std::exception&) {
          return std::nullopt;
        }
      }
      i = close + 1;
    } else {
      return std::nullopt;
    }
  }
  return steps;
}

const json* descend(const json& node, const std::string& dotted) {
  const json* current = &node;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    auto dot = dotted.find('.', start);
    std::string key = dotted.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!current->is_object() || !current->contains(key)) return nullptr;
    current = &(*current)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return current;
}

}  // namespace

std::string human_duration(std::chrono::seconds age) {
  // k8s.io/apimachinery/pkg/util/duration.HumanDuration
  long long s = age.count();
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 60 * 2) return fmt::format("{}s", s);
  long long minutes = s / 60;
  if (minutes < 10) {
    long long rem = s % 60;
    return rem == 0 ? fmt::format("{}m", minutes) : fmt::format("{}m{}s", minutes, rem);
  }
  if (minutes < 60 * 3) return fmt::format("{}m", minutes);
  long long hours = s / 3600;
  if (hours < 8) {
    long long rem = minutes % 60;
    return rem == 0 ? fmt::format("{}h", hours) : fmt::format("{}h{}m", hours, rem);
  }
  if (hours < 48) return fmt::format("{}h", hours);
  if (hours < 24 * 8) {
    long long rem = hours % 24;
    return rem == 0 ? fmt::format("{}d", hours / 24) : fmt::format("{}d{}h", hours / 24, rem);
  }
  if (hours < 24 * 365 * 2) return fmt::format("{}d", hours / 24);
  if (hours < 24 * 365 * 8) {
    long long days = hours / 24;
    long long rem = days % 365;
    return rem == 0 ? fmt::format("{}y", days / 365) : fmt::format("{}y{}d", days / 365, rem);
  }
  return fmt::format("{}y", hours / 24 / 365);
}

std::optional<json> eval_json_path(const json& object, const std::string& path) {
  auto steps = parse_path(path);
  if (!steps) return std::nullopt;
  std::vector<const json*> current = {&object};
  for (const auto& step : *steps) {
    std::vector<const json*> next;
    for (const json* node : current) {
      switch (step.kind) {
        case PathStep::Field:
          if (node->is_object() && node->contains(step.name)) next.push_back(&(*node)[step.name]);
          break;
        case PathStep::Index:
          if (node->is_array() && step.index < node->size()) next.push_back(&(*node)[step.index]);
          break;
        case PathStep::Wildcard:
          if (node->is_array()) {
            for (const auto& item : *node) next.push_back(&item);
          } else if (node->is_object()) {
            for (const auto& item : *node) next.push_back(&item);
          }
          break;
        case PathStep::Filter:
          if (node->is_array()) {
            for (const auto& item : *node) {
              const json* field = descend(item, step.name);
              if (field && *field == step.filter_value) next.push_back(&item);
            }
          }
          break;
      }
    }
    current = std::move(next);
    if (current.empty()) return std::nullopt;
  }
  return *current.front();
}

json to_table(const ResourceType& type, const json& object_or_list,
              std::chrono::system_clock::time_point now, const std::string& include_object) {
  std::vector<Column> columns = columns_for(type);
  json definitions = json::array();
  for (const auto& c : columns) {
    definitions.push_back({{"name", c.definition.name},
                           {"type", c.definition.type},
                           {"format", c.definition.format},
                           {"description", c.definition.description},
                           {"priority", c.definition.priority}});
  }
  json table = {{"kind", "Table"},
                {"apiVersion", "meta.k8s.io/v1"},
                {"metadata", json::object()},
                {"columnDefinitions", definitions},
                {"rows", json::array()}};
  bool is_list = object_or_list.contains("items") && object_or_list["items"].is_array();
  if (is_list) {
    json meta = object_or_list.value("metadata", json::object());
    if (meta.contains("resourceVersion"))
      table["metadata"]["resourceVersion"] = meta["resourceVersion"];
    if (meta.contains("continue")) table["metadata"]["continue"] = meta["continue"];
    if (meta.contains("remainingItemCount")) {
      table["metadata"]["remainingItemCount"] = meta["remainingItemCount"];
    }
  } else if (object_or_list.contains("/metadata/resourceVersion"_json_pointer)) {
    table["metadata"]["resourceVersion"] = object_or_list["/metadata/resourceVersion"_json_pointer];
  }
  auto add_row = [&](const json& object) {
    json cells = json::array();
    for (const auto& c : columns) cells.push_back(c.cell(object, now));
    json row = {{"cells", cells}};
    if (include_object == "Object") {
      row["object"] = object;
    } else if (include_object != "None") {
      row["object"] = partial_metadata(object);
    }
    table["rows"].push_back(std::move(row));
  };
  if (is_list) {
    for (const auto& item : object_or_list["items"]) add_row(item);
  } else {
    add_row(object_or_list);
  }
  return table;
}

}  // namespace depl::devcluster
