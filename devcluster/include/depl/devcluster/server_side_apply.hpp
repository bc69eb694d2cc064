// Server-side apply: field ownership per field manager (metadata.managedFields, FieldsV1), the
// merge of an applied configuration into the live object, conflict detection and the tracking of
// fields set by ordinary updates. Pure functions; the store calls them under its lock.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/devcluster/api_result.hpp"

namespace depl::devcluster {

// A set of field paths in FieldsV1 form: {"f:spec":{"f:replicas":{}}, ...}; list items with a key
// as "k:{\"name\":\"c\"}", "." marking a node owned itself. Lists without a known key (and
// without x-kubernetes-list-type=map) are atomic and owned whole.
using FieldSet = nlohmann::json;

// Which list fields merge by key: built-ins use the strategic-merge keys, custom resources the
// schema's x-kubernetes-list-type/x-kubernetes-list-map-keys. `schema` may be null; it is not
// copied (a context lives as long as the request it serves).
struct ApplyContext {
  const nlohmann::json* schema = nullptr;  // openAPIV3Schema
  bool builtin = true;
  // Fields (top-level) that this endpoint ignores: "status" on the main endpoint of a type with
  // a status subresource; everything but status on /status.
  bool has_status_subresource = false;
  bool status_endpoint = false;
};

// The fields `config` sets (metadata.name/namespace, apiVersion, kind excluded).
FieldSet fields_of(const nlohmann::json& config, const ApplyContext& context);

struct ApplyOutcome {
  nlohmann::json object;  // the merged object with updated metadata.managedFields
};

// Applies `config` for `manager` to `live` (null when the object does not exist yet). On
// conflicts with other managers (fields they own whose value would change) and !force: a 409
// Status listing each conflict ("conflict with \"other\": .spec.replicas"). `time` stamps the
// managedFields entry.
Expected<ApplyOutcome, ApiResult> server_side_apply(const nlohmann::json& live,
                                                    const nlohmann::json& config,
                                                    const std::string& manager, bool force,
                                                    const ApplyContext& context,
                                                    const std::string& time);

// Records an ordinary write (create/update/patch) by `manager`: the fields that changed from
// `before` to `after` become owned by `manager` (operation Update) and leave other managers.
// Updates `after`'s metadata.managedFields in place.
void track_update(const nlohmann::json& before, nlohmann::json& after, const std::string& manager,
                  const ApplyContext& context, const std::string& time);

}  // namespace depl::devcluster
