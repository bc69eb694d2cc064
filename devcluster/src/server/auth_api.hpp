// The create-only resources that answer questions about identities and permissions, computed
// when asked and never stored, as kube-apiserver serves them: SelfSubjectReview and TokenReview
// (authentication.k8s.io/v1), SelfSubjectAccessReview, SubjectAccessReview,
// LocalSubjectAccessReview and SelfSubjectRulesReview (authorization.k8s.io/v1), and the
// serviceaccounts/<name>/token subresource (TokenRequest), which issues service account tokens.
#pragma once

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_store.hpp"
#include "depl/devcluster/rbac.hpp"
#include "server/authentication.hpp"

namespace depl::devcluster {

// Whether `ref` addresses one of the review resources or serviceaccounts/<name>/token.
bool is_auth_resource(const ResourceRef& ref);

// The answer to a POST of `body` to `ref` (is_auth_resource) by `user`.
ApiResult answer_auth_request(const ResourceRef& ref, nlohmann::json body, const UserInfo& user,
                              ApiStore& store, RbacAuthorizer& authorizer,
                              Authenticator& authenticator);

}  // namespace depl::devcluster
