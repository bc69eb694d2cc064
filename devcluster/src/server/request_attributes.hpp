// What a request asks, in the terms kube-apiserver's authorizers use (its RequestInfoFactory):
// the verb (a GET is get, list or watch; a list or watch selecting metadata.name=<n> names <n>),
// the resource, subresource, namespace and name, or the path of a non-resource request.
#pragma once

#include "depl/devcluster/rbac.hpp"
#include "server/api_path.hpp"
#include "server/http_types.hpp"

namespace depl::devcluster {

RequestAttributes request_attributes(const HttpRequest& request, const ApiPath& path,
                                     UserInfo user);

}  // namespace depl::devcluster
