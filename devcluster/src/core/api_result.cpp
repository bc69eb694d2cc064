// Status bodies worded like kube-apiserver's.
#include "depl/devcluster/api_result.hpp"

#include <fmt/format.h>

namespace depl::devcluster {

nlohmann::json status_body(int code, const std::string& reason, const std::string& message,
                           const nlohmann::json& details) {
  nlohmann::json body = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}};
  if (!details.is_null()) body["details"] = details;
  return body;
}

ApiResult status_error(int code, const std::string& reason, const std::string& message,
                       const nlohmann::json& details) {
  return ApiResult{code, status_body(code, reason, message, details), {}};
}

namespace {
// Splits "plural.group" into details {name, group, kind}.
nlohmann::json name_details(const std::string& qualified_resource, const std::string& name) {
  auto dot = qualified_resource.find('.');
  nlohmann::json details = {{"name", name}};
  if (dot == std::string::npos) {
    details["kind"] = qualified_resource;
  } else {
    details["kind"] = qualified_resource.substr(0, dot);
    details["group"] = qualified_resource.substr(dot + 1);
  }
  return details;
}
}  // namespace

ApiResult not_found(const std::string& qualified_resource, const std::string& name) {
  return status_error(404, "NotFound", fmt::format("{} \"{}\" not found", qualified_resource, name),
                      name_details(qualified_resource, name));
}

ApiResult already_exists(const std::string& qualified_resource, const std::string& name) {
  return status_error(409, "AlreadyExists",
                      fmt::format("{} \"{}\" already exists", qualified_resource, name),
                      name_details(qualified_resource, name));
}

ApiResult conflict(const std::string& qualified_resource, const std::string& name,
                   const std::string& why) {
  return status_error(
      409, "Conflict",
      fmt::format("Operation cannot be fulfilled on {} \"{}\": {}", qualified_resource, name, why),
      name_details(qualified_resource, name));
}

ApiResult bad_request(const std::string& message) {
  return status_error(400, "BadRequest", message);
}

ApiResult invalid(const std::string& qualified_kind, const std::string& name,
                  const std::string& kind, const std::string& group,
                  const std::vector<FieldError>& errors) {
  std::string joined;
  nlohmann::json causes = nlohmann::json::array();
  for (const auto& e : errors) {
    std::string line = e.field.empty() ? e.message : fmt::format("{}: {}", e.field, e.message);
    if (!joined.empty()) joined += ", ";
    joined += line;
    causes.push_back({{"reason", e.type}, {"message", e.message}, {"field", e.field}});
  }
  std::string message = fmt::format("{} \"{}\" is invalid: ", qualified_kind, name);
  message += errors.size() > 1 ? "[" + joined + "]" : joined;
  nlohmann::json details = {{"name", name}, {"kind", kind}, {"causes", causes}};
  if (!group.empty()) details["group"] = group;
  return status_error(422, "Invalid", message, details);
}

}  // namespace depl::devcluster
