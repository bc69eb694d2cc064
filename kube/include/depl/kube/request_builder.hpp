// Builds every API request as an HttpRequest value: method, path, query, headers, body.
// No I/O, no credentials (the client adds Authorization). Tests assert on these values, and
// the client sends exactly what these functions return.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/kube/api_error.hpp"
#include "depl/kube/http.hpp"
#include "depl/kube/options.hpp"
#include "depl/kube/resource.hpp"

namespace depl::kube::requests {

// Each returns ApiError{0, InvalidRequest} when the arguments cannot make a valid request
// (empty name, missing namespace for a namespaced object, Apply without field manager, ...).
Expected<HttpRequest, ApiError> get(const ResourceType& type, std::string_view ns,
                                    std::string_view name, const GetOptions& options = {});
// `ns` empty lists across all namespaces (namespaced types).
Expected<HttpRequest, ApiError> list(const ResourceType& type, std::string_view ns,
                                     const ListOptions& options = {});
Expected<HttpRequest, ApiError> watch(const ResourceType& type, std::string_view ns,
                                      const WatchOptions& options = {});
// Namespace comes from `ns`, or from the object's metadata.namespace when `ns` is empty.
Expected<HttpRequest, ApiError> create(const ResourceType& type, std::string_view ns,
                                       const nlohmann::json& object,
                                       const WriteOptions& options = {});
// PUT of the whole object; name and namespace from its metadata. Send metadata.resourceVersion
// to get optimistic concurrency (409 on a stale version).
Expected<HttpRequest, ApiError> replace(const ResourceType& type, const nlohmann::json& object,
                                        const WriteOptions& options = {});
Expected<HttpRequest, ApiError> replace_status(const ResourceType& type,
                                               const nlohmann::json& object,
                                               const WriteOptions& options = {});
Expected<HttpRequest, ApiError> remove(const ResourceType& type, std::string_view ns,
                                       std::string_view name, const DeleteOptions& options = {});
Expected<HttpRequest, ApiError> patch(const ResourceType& type, std::string_view ns,
                                      std::string_view name, PatchType patch_type,
                                      const nlohmann::json& patch,
                                      const PatchOptions& options = {});

}  // namespace depl::kube::requests
