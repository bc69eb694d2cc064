// The checks of builtin_validation.hpp, worded as kube-apiserver words them.
#include "builtin_validation.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"
#include "depl/common/kubernetes_names.hpp"
#include "depl/common/quantity.hpp"

namespace depl::devcluster {
namespace {

using nlohmann::json;

constexpr const char* kDns1123Label =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr const char* kDns1123Subdomain =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr const char* kDns1035Label =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
constexpr const char* kEnvVarName =
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', "
    "or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
    "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
constexpr const char* kQualifiedNamePart =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
// What the JSON decoder says about a quantity it cannot read; the request is then a 400.
constexpr const char* kQuantityRegex =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

std::string quoted(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

FieldError invalid_value(const std::string& field, const std::string& shown,
                         const std::string& detail) {
  return {"FieldValueInvalid", field, fmt::format("Invalid value: {}: {}", shown, detail)};
}

// kube-apiserver's path of a map key: "limits[nvidia.com/gpu]".
std::string key_path(const std::string& map_path, const std::string& key) {
  return fmt::format("{}[{}]", map_path, key);
}

bool is_hugepages(const std::string& name) {
  return name.rfind("hugepages-", 0) == 0;
}

// Native resources are unprefixed or in kubernetes.io; the others are extended resources, which
// are counted in whole units and cannot be overcommitted.
bool is_native(const std::string& name) {
  const auto slash = name.find('/');
  if (slash == std::string::npos) return true;
  const std::string domain = name.substr(0, slash);
  return domain == "kubernetes.io" ||
         (domain.size() > 14 && domain.compare(domain.size() - 14, 14, ".kubernetes.io") == 0);
}

bool overcommit_allowed(const std::string& name) {
  return is_native(name) && !is_hugepages(name);
}

void check_resource_name(const std::string& name, const std::string& field,
                         std::vector<FieldError>& errors) {
  const auto slash = name.find('/');
  if (slash == std::string::npos) {
    if (!is_standard_container_resource(name)) {
      errors.push_back(
          invalid_value(field, quoted(name), "must be a standard resource for containers"));
    }
    return;
  }
  const std::string prefix = name.substr(0, slash);
  const std::string part = name.substr(slash + 1);
  if (!is_dns1123_subdomain(prefix)) {
    errors.push_back(invalid_value(field, quoted(name),
                                   "prefix part a lowercase RFC 1123 subdomain must consist of "
                                   "lower case alphanumeric characters, '-' or '.', and must "
                                   "start and end with an alphanumeric character"));
  }
  if (!is_qualified_name_part(part)) {
    errors.push_back(invalid_value(field, quoted(name), kQualifiedNamePart));
  }
}

struct ReadQuantities {
  std::map<std::string, double> values;
  std::map<std::string, std::string> shown;  // as sent, quoted when a string
  std::map<std::string, std::string> text;   // as sent, unquoted
};

// Reads a container's resources.limits or .requests, checking names and values. False when a
// quantity cannot be decoded (the whole request is then a 400).
bool read_quantities(const json& resources, const char* which, const std::string& path,
                     ReadQuantities& out, std::vector<FieldError>& errors) {
  auto it = resources.find(which);
  if (it == resources.end() || !it->is_object()) return true;
  for (const auto& [name, value] : it->items()) {
    double amount = 0;
    if (value.is_number()) {
      amount = value.get<double>();
    } else if (value.is_string()) {
      auto parsed = parse_quantity(value.get<std::string>());
      if (!parsed) return false;
      amount = *parsed;
    } else {
      return false;
    }
    const std::string field = key_path(path + "." + which, name);
    const std::string shown = value.is_string() ? quoted(value.get<std::string>()) : value.dump();
    check_resource_name(name, field, errors);
    if (amount < 0) {
      errors.push_back(invalid_value(field, shown, "must be greater than or equal to 0"));
    } else if (!is_native(name) && amount != static_cast<double>(static_cast<long long>(amount))) {
      errors.push_back(invalid_value(field, shown, "must be an integer"));
    }
    out.values[name] = amount;
    out.shown[name] = shown;
    out.text[name] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  return true;
}

// A container's resources; false when a quantity cannot be decoded.
bool check_resources(const json& container, const std::string& path,
                     std::vector<FieldError>& errors) {
  auto it = container.find("resources");
  if (it == container.end() || !it->is_object()) return true;
  const std::string resources_path = path + ".resources";
  ReadQuantities limits, requests;
  if (!read_quantities(*it, "limits", resources_path, limits, errors) ||
      !read_quantities(*it, "requests", resources_path, requests, errors)) {
    return false;
  }
  for (const auto& [name, request] : requests.values) {
    const std::string requests_path = resources_path + ".requests";
    auto limit = limits.values.find(name);
    if (limit == limits.values.end()) {
      if (!overcommit_allowed(name)) {
        errors.push_back({"FieldValueRequired", resources_path + ".limits",
                          "Required value: Limit must be set for non overcommitable resources"});
      }
      continue;
    }
    if (request != limit->second && !overcommit_allowed(name)) {
      errors.push_back(
          invalid_value(requests_path, requests.shown[name],
                        fmt::format("must be equal to {} limit of {}", name, limits.text[name])));
    } else if (request > limit->second) {
      errors.push_back(invalid_value(
          requests_path, requests.shown[name],
          fmt::format("must be less than or equal to {} limit of {}", name, limits.text[name])));
    }
  }
  return true;
}

void check_env(const json& container, const std::string& path, std::vector<FieldError>& errors) {
  auto env = container.find("env");
  if (env == container.end() || !env->is_array()) return;
  for (std::size_t i = 0; i < env->size(); ++i) {
    const json& var = (*env)[i];
    if (!var.is_object()) continue;
    const std::string field = fmt::format("{}.env[{}].name", path, i);
    auto name = var.find("name");
    if (name == var.end() || !name->is_string() || name->get<std::string>().empty()) {
      errors.push_back({"FieldValueRequired", field, "Required value"});
    } else if (!is_env_var_name(name->get<std::string>())) {
      errors.push_back(invalid_value(field, quoted(name->get<std::string>()), kEnvVarName));
    }
  }
}

void check_dns_label(const json& spec, const char* key, const std::string& path,
                     std::vector<FieldError>& errors) {
  auto it = spec.find(key);
  if (it == spec.end() || !it->is_string() || it->get<std::string>().empty()) return;
  const std::string value = it->get<std::string>();
  const std::string field = path + "." + key;
  if (value.size() > 63) {
    errors.push_back(invalid_value(field, quoted(value), "must be no more than 63 characters"));
  }
  if (!has_dns1123_label_form(value)) {
    errors.push_back(invalid_value(field, quoted(value), kDns1123Label));
  }
}

// apimachinery's IsQualifiedName, one message per problem: an optional DNS-1123 subdomain prefix
// and '/', then a name part.
std::vector<std::string> qualified_name_problems(const std::string& value) {
  std::vector<std::string> problems;
  std::string name = value;
  const auto slash = value.find('/');
  if (slash != std::string::npos) {
    if (value.find('/', slash + 1) != std::string::npos) {
      problems.push_back(
          "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
          "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
          "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
          "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return problems;
    }
    const std::string prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      problems.push_back("prefix part must be non-empty");
    } else if (!is_dns1123_subdomain(prefix)) {
      problems.push_back(
          "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
          "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
          "'example.com', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    }
  }
  if (name.empty()) {
    problems.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    problems.push_back("name part must be no more than 63 characters");
  } else if (!is_qualified_name_part(name)) {
    problems.push_back(kQualifiedNamePart);
  }
  return problems;
}

// validateSchedulingGates, and ValidatePodCreate's rule that a pod names no node while gated.
void check_scheduling_gates(const json& spec, bool creating, std::vector<FieldError>& errors) {
  auto gates = spec.find("schedulingGates");
  if (gates == spec.end() || !gates->is_array() || gates->empty()) return;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < gates->size(); ++i) {
    const json& gate = (*gates)[i];
    const std::string field = fmt::format("spec.schedulingGates[{}]", i);
    const std::string name = gate.is_object() && gate.contains("name") && gate["name"].is_string()
                                 ? gate["name"].get<std::string>()
                                 : std::string();
    for (const auto& problem : qualified_name_problems(name)) {
      errors.push_back(invalid_value(field, quoted(name), problem));
    }
    if (!seen.insert(name).second) {
      errors.push_back({"FieldValueDuplicate", field, "Duplicate value: " + quoted(name)});
    }
  }
  auto node = spec.find("nodeName");
  if (creating && node != spec.end() && node->is_string() && !node->get<std::string>().empty()) {
    errors.push_back({"FieldValueForbidden", "spec.nodeName",
                      "Forbidden: cannot be set until all schedulingGates have been cleared"});
  }
}

// A pod's spec.schedulingGroup (GenericWorkload): the PodGroup it names must be a valid name.
void check_scheduling_group(const json& spec, std::vector<FieldError>& errors) {
  const json& group = json_member(spec, "schedulingGroup");
  if (group.is_null()) return;
  const json& name = json_member(group, "podGroupName");
  if (!name.is_string() || name.get_ref<const std::string&>().empty()) {
    errors.push_back({"FieldValueRequired", "spec.schedulingGroup.podGroupName", "Required value"});
    return;
  }
  const std::string& value = name.get_ref<const std::string&>();
  if (!is_dns1123_subdomain(value)) {
    errors.push_back(
        invalid_value("spec.schedulingGroup.podGroupName", quoted(value), kDns1123Subdomain));
  }
}

std::optional<ApiResult> validate_pod(const ResourceType& type, const json& pod, bool creating) {
  const std::string name = pod.value("/metadata/name"_json_pointer, std::string());
  std::vector<FieldError> errors;
  // A reference, not `cond ? pod["spec"] : json::object()`, which copies the spec.
  static const json kNoSpec = json::object();
  auto found = pod.find("spec");
  const json& spec = found != pod.end() && found->is_object() ? *found : kNoSpec;
  for (const char* list : {"initContainers", "containers"}) {
    auto containers = spec.find(list);
    if (containers == spec.end() || !containers->is_array()) continue;
    for (std::size_t i = 0; i < containers->size(); ++i) {
      const json& container = (*containers)[i];
      if (!container.is_object()) continue;
      const std::string path = fmt::format("spec.{}[{}]", list, i);
      if (!check_resources(container, path, errors)) {
        return bad_request(fmt::format("{} in version \"{}\" cannot be handled as a {}: {}",
                                       type.kind, type.version, type.kind, kQuantityRegex));
      }
      check_env(container, path, errors);
    }
  }
  check_dns_label(spec, "hostname", "spec", errors);
  check_dns_label(spec, "subdomain", "spec", errors);
  check_scheduling_gates(spec, creating, errors);
  check_scheduling_group(spec, errors);
  if (errors.empty()) return std::nullopt;
  return invalid(type.qualified_kind(), name, type.kind, type.group, errors);
}

const char* kConfigKey =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')";

std::string supported(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + quoted(v);
  return out;
}

FieldError unsupported(const std::string& field, const std::string& value,
                       const std::vector<std::string>& values) {
  return {
      "FieldValueNotSupported", field,
      fmt::format("Unsupported value: {}: supported values: {}", quoted(value), supported(values))};
}

bool valid_port_name(const std::string& name) {
  // IANA_SVC_NAME: at most 15 lower-case alphanumerics or '-', a letter in it, no "--", no '-'
  // at either end.
  if (name.empty() || name.size() > 15 || name.front() == '-' || name.back() == '-') return false;
  bool letter = false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c >= 'a' && c <= 'z') letter = true;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    if (c == '-' && i > 0 && name[i - 1] == '-') return false;
  }
  return letter;
}

std::optional<ApiResult> result_of(const ResourceType& type, const json& object,
                                   const std::vector<FieldError>& errors) {
  if (errors.empty()) return std::nullopt;
  const std::string name = object.value("/metadata/name"_json_pointer, std::string());
  return invalid(type.qualified_kind(), name, type.kind, type.group, errors);
}

std::optional<ApiResult> validate_service(const ResourceType& type, const json& service) {
  const std::string name = service.value("/metadata/name"_json_pointer, std::string());
  std::vector<FieldError> errors;
  if (name.size() > 63) {
    errors.push_back(
        invalid_value("metadata.name", quoted(name), "must be no more than 63 characters"));
  }
  if (!has_dns1035_label_form(name)) {
    errors.push_back(invalid_value("metadata.name", quoted(name), kDns1035Label));
  }
  const json& spec = json_member(service, "spec");
  const std::string service_type = json_string(spec.is_object() ? spec : json::object(), "type");
  static const std::vector<std::string> kTypes = {"ClusterIP", "ExternalName", "LoadBalancer",
                                                  "NodePort"};
  if (!service_type.empty() &&
      std::find(kTypes.begin(), kTypes.end(), service_type) == kTypes.end()) {
    errors.push_back(unsupported("spec.type", service_type, kTypes));
  }
  const json& ports = json_member(spec, "ports");
  const bool headless = spec.is_object() && json_string(spec, "clusterIP") == "None";
  if ((!ports.is_array() || ports.empty()) && !headless && service_type != "ExternalName") {
    errors.push_back({"FieldValueRequired", "spec.ports", "Required value"});
  }
  if (ports.is_array()) {
    std::set<std::string> names;
    static const std::vector<std::string> kProtocols = {"SCTP", "TCP", "UDP"};
    for (std::size_t i = 0; i < ports.size(); ++i) {
      const json& p = ports[i];
      if (!p.is_object()) continue;
      const std::string path = fmt::format("spec.ports[{}]", i);
      const std::string port_name = json_string(p, "name");
      if (port_name.empty() && ports.size() > 1) {
        errors.push_back({"FieldValueRequired", path + ".name", "Required value"});
      } else if (!port_name.empty()) {
        if (!valid_port_name(port_name)) {
          errors.push_back(invalid_value(path + ".name", quoted(port_name),
                                         "a DNS-1123 label must consist of lower case "
                                         "alphanumeric characters or '-', and must start and "
                                         "end with an alphanumeric character"));
        } else if (!names.insert(port_name).second) {
          errors.push_back({"FieldValueDuplicate", path + ".name",
                            fmt::format("Duplicate value: {}", quoted(port_name))});
        }
      }
      const json& port = json_member(p, "port");
      if (!port.is_number_integer() || port.get<std::int64_t>() < 1 ||
          port.get<std::int64_t>() > 65535) {
        errors.push_back(invalid_value(path + ".port", port.is_null() ? "0" : port.dump(),
                                       "must be between 1 and 65535, inclusive"));
      }
      const std::string protocol = json_string(p, "protocol");
      if (!protocol.empty() &&
          std::find(kProtocols.begin(), kProtocols.end(), protocol) == kProtocols.end()) {
        errors.push_back(unsupported(path + ".protocol", protocol, kProtocols));
      }
      const json& target = json_member(p, "targetPort");
      if (target.is_number_integer() &&
          (target.get<std::int64_t>() < 1 || target.get<std::int64_t>() > 65535)) {
        errors.push_back(invalid_value(path + ".targetPort", target.dump(),
                                       "must be between 1 and 65535, inclusive"));
      } else if (target.is_string() && !valid_port_name(target.get<std::string>())) {
        errors.push_back(invalid_value(path + ".targetPort", quoted(target.get<std::string>()),
                                       "must contain only alpha-numeric characters (a-z, 0-9), "
                                       "and hyphens (-)"));
      }
    }
  }
  return result_of(type, service, errors);
}

bool valid_config_key(const std::string& key) {
  if (key.empty() || key.size() > 253 || key == "." || key == "..") return false;
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return true;
}

// data and binaryData (or stringData) keys, and the total size.
void check_config_data(const json& object, std::vector<const char*> maps,
                       std::vector<FieldError>& errors) {
  std::size_t total = 0;
  std::set<std::string> seen;
  for (const char* map : maps) {
    const json& data = json_member(object, map);
    if (!data.is_object()) continue;
    for (const auto& [key, value] : data.items()) {
      const std::string field = fmt::format("{}[{}]", map, key);
      if (!valid_config_key(key)) {
        errors.push_back(invalid_value(field, quoted(key), kConfigKey));
      } else if (std::string(map) == "binaryData" && seen.count(key)) {
        errors.push_back(invalid_value(field, quoted(key), "duplicate of key present in data"));
      }
      seen.insert(key);
      if (value.is_string()) total += value.get_ref<const std::string&>().size();
    }
  }
  if (total > 1048576) {
    errors.push_back(
        {"FieldValueTooLong", maps.front(), "Too long: may not be more than 1048576 bytes"});
  }
}

std::optional<ApiResult> validate_secret(const ResourceType& type, const json& secret) {
  std::vector<FieldError> errors;
  check_config_data(secret, {"data", "stringData"}, errors);
  const std::string secret_type = json_string(secret, "type");
  const json& data = json_member(secret, "data");
  auto require_key = [&](const char* key) {
    if (!data.is_object() || !data.contains(key)) {
      errors.push_back({"FieldValueRequired", fmt::format("data[{}]", key), "Required value"});
    }
  };
  if (secret_type == "kubernetes.io/service-account-token") {
    const json& annotations = json_member(json_member(secret, "metadata"), "annotations");
    if (!annotations.is_object() ||
        json_string(annotations, "kubernetes.io/service-account.name").empty()) {
      errors.push_back({"FieldValueRequired",
                        "metadata.annotations[kubernetes.io/service-account.name]",
                        "Required value"});
    }
  } else if (secret_type == "kubernetes.io/dockerconfigjson") {
    require_key(".dockerconfigjson");
  } else if (secret_type == "kubernetes.io/dockercfg") {
    require_key(".dockercfg");
  } else if (secret_type == "kubernetes.io/tls") {
    require_key("tls.crt");
    require_key("tls.key");
  } else if (secret_type == "kubernetes.io/ssh-auth") {
    require_key("ssh-privatekey");
  }
  return result_of(type, secret, errors);
}

std::optional<ApiResult> validate_config_map(const ResourceType& type, const json& config_map) {
  std::vector<FieldError> errors;
  check_config_data(config_map, {"data", "binaryData"}, errors);
  return result_of(type, config_map, errors);
}

std::optional<ApiResult> validate_lease(const ResourceType& type, const json& lease) {
  std::vector<FieldError> errors;
  const json& spec = json_member(lease, "spec");
  const json& duration = json_member(spec, "leaseDurationSeconds");
  if (duration.is_number_integer() && duration.get<std::int64_t>() <= 0) {
    errors.push_back(
        invalid_value("spec.leaseDurationSeconds", duration.dump(), "must be greater than 0"));
  }
  const json& transitions = json_member(spec, "leaseTransitions");
  if (transitions.is_number_integer() && transitions.get<std::int64_t>() < 0) {
    errors.push_back(invalid_value("spec.leaseTransitions", transitions.dump(),
                                   "must be greater than or equal to 0"));
  }
  if (!json_string(spec.is_object() ? spec : json::object(), "preferredHolder").empty() &&
      json_string(spec.is_object() ? spec : json::object(), "strategy").empty()) {
    errors.push_back({"FieldValueForbidden", "spec.preferredHolder",
                      "Forbidden: preferredHolder can only be set when strategy is set"});
  }
  return result_of(type, lease, errors);
}

// Events are checked in their client form: core/v1 (message, involvedObject) or events.k8s.io/v1
// (note, regarding).
std::optional<ApiResult> validate_event(const ResourceType& type, const json& event) {
  std::vector<FieldError> errors;
  const bool v1 = type.group == "events.k8s.io";
  const std::string ns = event.value("/metadata/namespace"_json_pointer, std::string());
  const char* regarding = v1 ? "regarding" : "involvedObject";
  const char* note = v1 ? "note" : "message";
  const json& involved = json_member(event, regarding);
  const std::string involved_ns =
      involved.is_object() ? json_string(involved, "namespace") : std::string();
  if (!involved_ns.empty() && involved_ns != ns) {
    errors.push_back(invalid_value(std::string(regarding) + ".namespace", quoted(involved_ns),
                                   "does not match event.namespace"));
  }
  const std::string event_type = json_string(event, "type");
  static const std::vector<std::string> kTypes = {"Normal", "Warning"};
  const bool new_style = v1 || !json_member(event, "eventTime").is_null();
  if (v1 && json_member(event, "eventTime").is_null()) {
    errors.push_back({"FieldValueRequired", "eventTime", "Required value"});
  }
  if (new_style) {
    const char* controller = v1 ? "reportingController" : "reportingComponent";
    for (const char* required : {controller, "reportingInstance", "action", "reason"}) {
      if (json_string(event, required).empty()) {
        errors.push_back({"FieldValueRequired", required, "Required value"});
      }
    }
    if (std::find(kTypes.begin(), kTypes.end(), event_type) == kTypes.end()) {
      errors.push_back(unsupported("type", event_type, kTypes));
    }
    if (json_string(event, note).size() > 1024) {
      errors.push_back({"FieldValueTooLong", note, "Too long: may not be more than 1024 bytes"});
    }
  } else if (!event_type.empty() &&
             std::find(kTypes.begin(), kTypes.end(), event_type) == kTypes.end()) {
    errors.push_back(unsupported("type", event_type, kTypes));
  }
  return result_of(type, event, errors);
}

// kube-apiserver's pkg/apis/scheduling/validation for PodGroups and Workloads
// (scheduling.k8s.io/v1beta1): a scheduling policy is exactly one of basic and gang, and a gang's
// minCount is at least 1. False when minCount is not an integer (the request is then a 400, as
// the JSON decoder refuses it).
bool check_scheduling_policy(const json& policy, const std::string& path,
                             std::vector<FieldError>& errors) {
  const json& basic = json_member(policy, "basic");
  const json& gang = json_member(policy, "gang");
  if (basic.is_null() && gang.is_null()) {
    errors.push_back(invalid_value(path, "\"\"", "must specify one of: `basic`, `gang`"));
    return true;
  }
  if (!basic.is_null() && !gang.is_null()) {
    errors.push_back(
        invalid_value(path, "\"{`basic`, `gang`}\"",
                      "exactly one of `basic`, `gang` is required, but multiple fields are set"));
    return true;
  }
  if (gang.is_null()) return true;
  const json& min_count = json_member(gang, "minCount");
  if (!min_count.is_null() && !min_count.is_number_integer()) return false;
  const std::int64_t n = min_count.is_null() ? 0 : min_count.get<std::int64_t>();
  if (n < INT32_MIN || n > INT32_MAX) return false;
  if (n == 0) {
    errors.push_back({"FieldValueRequired", path + ".gang.minCount", "Required value"});
  } else if (n < 0) {
    errors.push_back(
        invalid_value(path + ".gang.minCount", std::to_string(n), "must be greater than zero"));
  }
  return true;
}

ApiResult undecodable(const ResourceType& type, const std::string& field) {
  return bad_request(fmt::format(
      "{} in version \"{}\" cannot be handled as a {}: json: cannot unmarshal into Go struct "
      "field {} of type int32",
      type.kind, type.version, type.kind, field));
}

std::optional<ApiResult> validate_pod_group(const ResourceType& type, const json& pod_group) {
  std::vector<FieldError> errors;
  const json& spec = json_member(pod_group, "spec");
  if (!check_scheduling_policy(json_member(spec, "schedulingPolicy"), "spec.schedulingPolicy",
                               errors)) {
    return undecodable(type, "spec.schedulingPolicy.gang.minCount");
  }
  return result_of(type, pod_group, errors);
}

std::optional<ApiResult> validate_workload(const ResourceType& type, const json& workload) {
  std::vector<FieldError> errors;
  const json& spec = json_member(workload, "spec");
  const json& controller = json_member(spec, "controllerRef");
  if (!controller.is_null()) {
    for (const char* key : {"kind", "name"}) {
      if (json_string(controller, key).empty()) {
        errors.push_back(
            {"FieldValueRequired", fmt::format("spec.controllerRef.{}", key), "Required value"});
      }
    }
  }
  const json& templates = json_member(spec, "podGroupTemplates");
  const std::size_t count = templates.is_array() ? templates.size() : 0;
  if (count == 0) {
    errors.push_back({"FieldValueRequired", "spec.podGroupTemplates",
                      "Required value: must have at least one item"});
  } else if (count > 8) {
    errors.push_back({"FieldValueTooMany", "spec.podGroupTemplates",
                      fmt::format("Too many: {}: must have at most 8 items", count)});
  } else {
    std::set<std::string> names;
    for (std::size_t i = 0; i < count; ++i) {
      const std::string path = fmt::format("spec.podGroupTemplates[{}]", i);
      const std::string name = json_string(templates[i], "name");
      if (name.empty()) {
        errors.push_back({"FieldValueRequired", path + ".name", "Required value"});
      } else if (name.size() > 63 || !has_dns1123_label_form(name)) {
        errors.push_back(
            invalid_value(path + ".name", quoted(name),
                          name.size() > 63 ? "must be no more than 63 characters" : kDns1123Label));
      }
      if (!name.empty() && !names.insert(name).second) {
        errors.push_back({"FieldValueDuplicate", path, "Duplicate value: " + quoted(name)});
      }
      if (!check_scheduling_policy(json_member(templates[i], "schedulingPolicy"),
                                   path + ".schedulingPolicy", errors)) {
        return undecodable(type, path + ".schedulingPolicy.gang.minCount");
      }
    }
  }
  return result_of(type, workload, errors);
}

bool is_scheduling(const ResourceType& type, const char* plural) {
  return !type.custom && type.group == "scheduling.k8s.io" && type.plural == plural;
}

// What a PodGroup or Workload update may not change. A PodGroup keeps its policy (basic or gang;
// a gang's minCount may change, as v1beta1 allows) and the fields its API marks immutable; a
// Workload keeps its templates and, once set, its controllerRef.
void check_scheduling_update(const ResourceType& type, const json& old, const json& object,
                             std::vector<FieldError>& errors) {
  const json& before = json_member(old, "spec");
  const json& after = json_member(object, "spec");
  auto immutable = [&](const char* key) {
    if (json_member(before, key) != json_member(after, key)) {
      const json& now = json_member(after, key);
      errors.push_back(invalid_value(fmt::format("spec.{}", key),
                                     now.is_null() ? "null" : now.dump(), "field is immutable"));
    }
  };
  if (type.plural == "podgroups") {
    const json& policy_before = json_member(before, "schedulingPolicy");
    const json& policy_after = json_member(after, "schedulingPolicy");
    for (const char* kind : {"basic", "gang"}) {
      if (json_member(policy_before, kind).is_null() != json_member(policy_after, kind).is_null()) {
        const json& now = json_member(policy_after, kind);
        errors.push_back(invalid_value(fmt::format("spec.schedulingPolicy.{}", kind),
                                       now.is_null() ? "null" : now.dump(), "field is immutable"));
      }
    }
    for (const char* key : {"workloadRef", "parentCompositePodGroupName", "disruptionMode",
                            "priorityClassName", "schedulingConstraints"}) {
      immutable(key);
    }
  } else {
    immutable("podGroupTemplates");
    if (!json_member(before, "controllerRef").is_null()) immutable("controllerRef");
  }
}

bool is_core(const ResourceType& type, const char* plural) {
  return !type.custom && type.group.empty() && type.plural == plural;
}

}  // namespace

void apply_pod_spec_defaults(json& object) {
  auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) return;
  auto default_member = [](json& o, const char* key, const json& value) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) o[key] = value;
  };
  default_member(*spec, "restartPolicy", "Always");
  default_member(*spec, "terminationGracePeriodSeconds", 30);
  default_member(*spec, "schedulerName", "default-scheduler");
  default_member(*spec, "dnsPolicy", "ClusterFirst");
  for (const char* list : {"initContainers", "containers"}) {
    auto containers = spec->find(list);
    if (containers == spec->end() || !containers->is_array()) continue;
    for (auto& c : *containers) {
      if (!c.is_object()) continue;
      default_member(c, "terminationMessagePath", "/dev/termination-log");
      default_member(c, "terminationMessagePolicy", "File");
      if (!c.contains("imagePullPolicy")) {
        const std::string image = json_string(c, "image");
        const bool latest =
            image.find(':') == std::string::npos ||
            (image.size() >= 7 && image.compare(image.size() - 7, 7, ":latest") == 0);
        c["imagePullPolicy"] = latest ? "Always" : "IfNotPresent";
      }
      if (c.contains("ports") && c["ports"].is_array()) {
        for (auto& p : c["ports"]) {
          if (p.is_object() && !p.contains("protocol")) p["protocol"] = "TCP";
        }
      }
    }
  }
}

std::optional<ApiResult> validate_builtin_object(const ResourceType& type, const json& object,
                                                 bool creating) {
  if (type.custom) return std::nullopt;
  if (type.group == "coordination.k8s.io" && type.plural == "leases") {
    return validate_lease(type, object);
  }
  if (type.plural == "events" && (type.group.empty() || type.group == "events.k8s.io")) {
    return validate_event(type, object);
  }
  if (is_scheduling(type, "podgroups")) return validate_pod_group(type, object);
  if (is_scheduling(type, "workloads")) return validate_workload(type, object);
  if (!type.group.empty()) return std::nullopt;
  if (type.plural == "pods") return validate_pod(type, object, creating);
  if (type.plural == "services") return validate_service(type, object);
  if (type.plural == "secrets") return validate_secret(type, object);
  if (type.plural == "configmaps") return validate_config_map(type, object);
  return std::nullopt;
}

std::optional<ApiResult> validate_builtin_update(const ResourceType& type, const json& old,
                                                 const json& object) {
  std::vector<FieldError> errors;
  if (is_core(type, "pods")) {
    // What kube-apiserver's ValidatePodUpdate lets change; the rest of the spec must be equal.
    json allowed = json_member(old, "spec").is_object() ? old["spec"] : json::object();
    const json& next = json_member(object, "spec");
    if (next.is_object()) {
      for (const char* list : {"containers", "initContainers"}) {
        const json& mine = json_member(next, list);
        json& theirs = allowed[list];
        if (!mine.is_array() || !theirs.is_array() || mine.size() != theirs.size()) {
          if (theirs.is_null()) allowed.erase(list);
          continue;
        }
        for (std::size_t i = 0; i < mine.size(); ++i) {
          if (theirs[i].is_object() && mine[i].is_object() && mine[i].contains("image")) {
            theirs[i]["image"] = mine[i]["image"];
          }
        }
      }
      const json& deadline = json_member(next, "activeDeadlineSeconds");
      const json& old_deadline = json_member(allowed, "activeDeadlineSeconds");
      if (deadline.is_number_integer() &&
          (old_deadline.is_null() ||
           (old_deadline.is_number_integer() &&
            deadline.get<std::int64_t>() <= old_deadline.get<std::int64_t>()))) {
        allowed["activeDeadlineSeconds"] = deadline;
      }
      const json& tolerations = json_member(next, "tolerations");
      const json& old_tolerations = json_member(allowed, "tolerations");
      if (tolerations.is_array()) {
        bool additions_only = true;
        if (old_tolerations.is_array()) {
          for (const auto& t : old_tolerations) {
            additions_only = additions_only && std::find(tolerations.begin(), tolerations.end(),
                                                         t) != tolerations.end();
          }
        }
        if (additions_only) allowed["tolerations"] = tolerations;
      }
      // validateOnlyDeletedSchedulingGates: each gate the old spec lacks is named; whatever
      // the gates became is then taken as allowed, as the API server munges them.
      const json& gates = json_member(next, "schedulingGates");
      const json& old_gates = json_member(allowed, "schedulingGates");
      const bool gated = old_gates.is_array() && !old_gates.empty();
      if (gates.is_array()) {
        for (std::size_t i = 0; i < gates.size(); ++i) {
          const json& name = json_member(gates[i], "name");
          const bool known = old_gates.is_array() &&
                             std::any_of(old_gates.begin(), old_gates.end(), [&](const json& g) {
                               return json_member(g, "name") == name;
                             });
          if (!known) {
            errors.push_back(
                {"FieldValueForbidden", fmt::format("spec.schedulingGates[{}].name", i),
                 fmt::format("Forbidden: only deletion is allowed, but found new scheduling "
                             "gate '{}'",
                             name.is_string() ? name.get<std::string>() : name.dump())});
          }
        }
      }
      if (gates.is_null()) {
        allowed.erase("schedulingGates");
      } else {
        allowed["schedulingGates"] = gates;
      }
      // A gated pod's nodeSelector may gain entries (a queue such as Kueue places the pod on a
      // flavor's nodes as it lets it go); existing entries may not change or go.
      const json& selector = json_member(next, "nodeSelector");
      const json& old_selector = json_member(allowed, "nodeSelector");
      if (gated && selector != old_selector) {
        bool additions_only = selector.is_object() || selector.is_null();
        if (additions_only && old_selector.is_object()) {
          for (const auto& [key, value] : old_selector.items()) {
            additions_only = additions_only && selector.is_object() && selector.contains(key) &&
                             selector[key] == value;
          }
        }
        if (!additions_only) {
          errors.push_back(invalid_value(
              "spec.nodeSelector", selector.is_null() ? "null" : selector.dump(),
              "only additions to spec.nodeSelector are allowed (no mutations or deletions)"));
        }
        if (selector.is_null()) {
          allowed.erase("nodeSelector");
        } else {
          allowed["nodeSelector"] = selector;
        }
      }
    }
    if (allowed != (next.is_object() ? next : json::object())) {
      errors.push_back(
          {"FieldValueForbidden", "spec",
           "Forbidden: pod updates may not change fields other than "
           "`spec.containers[*].image`,`spec.initContainers[*].image`,"
           "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
           "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
           "was previously negative)"});
    }
  } else if (is_scheduling(type, "podgroups") || is_scheduling(type, "workloads")) {
    check_scheduling_update(type, old, object, errors);
  } else if (is_core(type, "services")) {
    const std::string before = json_string(
        json_member(old, "spec").is_object() ? old["spec"] : json::object(), "clusterIP");
    const std::string after = json_string(
        json_member(object, "spec").is_object() ? object["spec"] : json::object(), "clusterIP");
    if (!before.empty() && before != after) {
      errors.push_back(invalid_value("spec.clusterIP", quoted(after), "field is immutable"));
    }
  } else if (is_core(type, "secrets") || is_core(type, "configmaps")) {
    const bool secret = type.plural == "secrets";
    if (secret && json_string(old, "type") != json_string(object, "type")) {
      errors.push_back(
          invalid_value("type", quoted(json_string(object, "type")), "field is immutable"));
    }
    if (json_member(old, "immutable") == json(true)) {
      if (json_member(object, "immutable") != json(true)) {
        errors.push_back({"FieldValueForbidden", "immutable",
                          "Forbidden: field is immutable when `immutable` is set"});
      }
      for (const char* data : {"data", secret ? "stringData" : "binaryData"}) {
        if (json_member(old, data) != json_member(object, data)) {
          errors.push_back({"FieldValueForbidden", data,
                            "Forbidden: field is immutable when `immutable` is set"});
        }
      }
    }
  }
  return result_of(type, object, errors);
}

}  // namespace depl::devcluster
