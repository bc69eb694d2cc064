// The outcome of one API operation, shaped like an HTTP response: a status code and a JSON body
// (the object, a list, a Table or a meta/v1 Status). The HTTP layer writes it out verbatim.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::devcluster {

struct ApiResult {
  int code = 200;
  nlohmann::json body;
  std::vector<std::string> warnings;  // "Warning:" headers (e.g. fieldValidation=Warn)
  // The written object itself, shared and never modified, in place of a copy in `body` (which
  // then stays null): how a write answers when its WriteOptions::shared_answer asks for it.
  std::shared_ptr<const nlohmann::json> object = nullptr;

  bool ok() const { return code >= 200 && code < 300; }
  // What the answer says: the shared object when there is one, else `body`.
  const nlohmann::json& answer() const { return object ? *object : body; }
};

// A meta/v1 Status failure: {"kind":"Status","apiVersion":"v1","status":"Failure",
// "message":..., "reason":..., "code":..., "details":...}. `details` is omitted when null.
nlohmann::json status_body(int code, const std::string& reason, const std::string& message,
                           const nlohmann::json& details = nullptr);
ApiResult status_error(int code, const std::string& reason, const std::string& message,
                       const nlohmann::json& details = nullptr);

// The common failures, worded as kube-apiserver words them.
// 404 `<resource> "<name>" not found` (resource is plural[.group]).
ApiResult not_found(const std::string& qualified_resource, const std::string& name);
// 409 AlreadyExists `<resource> "<name>" already exists`.
ApiResult already_exists(const std::string& qualified_resource, const std::string& name);
// 409 Conflict `Operation cannot be fulfilled on <resource> "<name>": <why>`.
ApiResult conflict(const std::string& qualified_resource, const std::string& name,
                   const std::string& why);
// 400 BadRequest.
ApiResult bad_request(const std::string& message);
// 422 Invalid `<Kind.group> "<name>" is invalid: <field>: <what>[, ...]` with details.causes[]
// ({reason:"FieldValueInvalid"|..., message, field}).
struct FieldError {
  std::string type = "FieldValueInvalid";  // FieldValueRequired, FieldValueNotSupported, ...
  std::string field;                       // "spec.target.probability"
  std::string message;                     // "Invalid value: 1.5: spec... should be ..."
};
ApiResult invalid(const std::string& qualified_kind, const std::string& name,
                  const std::string& kind, const std::string& group,
                  const std::vector<FieldError>& errors);

}  // namespace depl::devcluster
