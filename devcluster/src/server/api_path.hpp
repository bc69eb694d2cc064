// Parses a Kubernetes REST path into what it addresses: a discovery document, an OpenAPI
// document, a health endpoint, or a resource (group, version, namespace, plural, name,
// subresource), including the legacy /watch/ prefix. Pure; scope is checked later against the
// registry because only it knows whether a plural is namespaced.
#pragma once

#include <string>
#include <string_view>

#include "depl/devcluster/api_store.hpp"

namespace depl::devcluster {

struct ApiPath {
  enum class Kind {
    NotFound,
    Version,            // /version
    Health,             // /healthz, /readyz, /livez (and their sub-checks)
    CoreVersions,       // /api
    GroupList,          // /apis
    Group,              // /apis/<g>
    ResourceList,       // /api/v1, /apis/<g>/<v>
    Resource,           // any path below those
    OpenApiV3Index,     // /openapi/v3
    OpenApiV3Document,  // /openapi/v3/api/v1, /openapi/v3/apis/<g>/<v>
    OpenApiV2,          // /openapi/v2, /swagger.json
  };
  Kind kind = Kind::NotFound;
  ResourceRef ref;            // Group/ResourceList/Resource: group and version (and the rest)
  bool legacy_watch = false;  // /api/v1/watch/... or /apis/<g>/<v>/watch/...
  std::string openapi_path;   // OpenApiV3Document: "api/v1" or "apis/<g>/<v>"
};

ApiPath parse_api_path(std::string_view path);

}  // namespace depl::devcluster
