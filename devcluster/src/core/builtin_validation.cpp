// The checks of builtin_validation.hpp, worded as kube-apiserver words them.
#include "builtin_validation.hpp"

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "depl/common/kubernetes_names.hpp"
#include "depl/common/quantity.hpp"

namespace depl::devcluster {
namespace {

using nlohmann::json;

constexpr const char* kDns1123Label =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
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

std::optional<ApiResult> validate_pod(const ResourceType& type, const json& pod) {
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
  if (errors.empty()) return std::nullopt;
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
  if (errors.empty()) return std::nullopt;
  return invalid(type.qualified_kind(), name, type.kind, type.group, errors);
}

}  // namespace

std::optional<ApiResult> validate_builtin_object(const ResourceType& type, const json& object) {
  if (type.custom || !type.group.empty()) return std::nullopt;
  if (type.plural == "pods") return validate_pod(type, object);
  if (type.plural == "services") return validate_service(type, object);
  return std::nullopt;
}

}  // namespace depl::devcluster
