// RBAC as kube-apiserver evaluates it, over the store's Roles, ClusterRoles and bindings: rule
// matching (verbs, groups, resources and subresources, resourceNames, non-resource URLs),
// subjects (users, groups, service accounts), the superuser group, kube's 403 wording, and a
// change of the RBAC objects counting at once.
#include <gtest/gtest.h>

#include "depl/devcluster/rbac.hpp"
#include "test_support.hpp"

namespace depl::devcluster::testing {
namespace {

const std::string kRbac = "rbac.authorization.k8s.io";

ResourceRef rbac(const std::string& plural, const std::string& ns = "") {
  return {kRbac, "v1", plural, ns, "", ""};
}

RequestAttributes request(const UserInfo& user, const std::string& verb,
                          const std::string& resource, const std::string& ns,
                          const std::string& name = "", const std::string& group = "",
                          const std::string& subresource = "") {
  RequestAttributes a;
  a.user = user;
  a.verb = verb;
  a.resource = resource;
  a.ns = ns;
  a.name = name;
  a.api_group = group;
  a.subresource = subresource;
  return a;
}

class RbacTest : public StoreTest {
 protected:
  void SetUp() override {
    must(store.create(core("namespaces"), json{{"metadata", {{"name", "apps"}}}}), 201);
    for (const auto& object : bootstrap_rbac_objects()) {
      const bool role = object["kind"] == "ClusterRole";
      must(store.create(rbac(role ? "clusterroles" : "clusterrolebindings"), object), 201);
    }
  }
  UserInfo robot = service_account_user("apps", "robot", "uid-1");
};

TEST_F(RbacTest, RulesMatchVerbsGroupsResourcesSubresourcesAndNames) {
  must(store.create(rbac("roles", "apps"), json::parse(R"({"metadata":{"name":"r"},"rules":[
      {"apiGroups":[""],"resources":["pods","pods/log"],"verbs":["get","list"]},
      {"apiGroups":["apps"],"resources":["deployments"],"verbs":["*"]},
      {"apiGroups":[""],"resources":["secrets"],"verbs":["get"],"resourceNames":["mine"]},
      {"apiGroups":["depl.dev"],"resources":["*/status"],"verbs":["update"]}]})")),
       201);
  must(store.create(rbac("rolebindings", "apps"), json::parse(R"({"metadata":{"name":"b"},
      "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},
      "subjects":[{"kind":"ServiceAccount","name":"robot"}]})")),
       201);
  RbacAuthorizer authorizer(store);
  auto allowed = [&](const RequestAttributes& a) { return authorizer.authorize(a).allowed; };
  EXPECT_TRUE(allowed(request(robot, "list", "pods", "apps")));
  EXPECT_TRUE(allowed(request(robot, "get", "pods", "apps", "p", "", "log")));
  EXPECT_FALSE(allowed(request(robot, "get", "pods", "apps", "p", "", "exec")));
  EXPECT_FALSE(allowed(request(robot, "delete", "pods", "apps", "p")));
  EXPECT_FALSE(allowed(request(robot, "list", "pods", "other")));  // the binding's namespace only
  EXPECT_FALSE(allowed(request(robot, "list", "pods", "")));       // nor cluster-wide
  EXPECT_TRUE(allowed(request(robot, "patch", "deployments", "apps", "d", "apps")));
  EXPECT_FALSE(allowed(request(robot, "patch", "deployments", "apps", "d", "")));
  EXPECT_TRUE(allowed(request(robot, "get", "secrets", "apps", "mine")));
  EXPECT_FALSE(allowed(request(robot, "get", "secrets", "apps", "theirs")));
  EXPECT_FALSE(allowed(request(robot, "list", "secrets", "apps")));  // a list names none
  EXPECT_TRUE(allowed(request(robot, "update", "jobs", "apps", "j", "depl.dev", "status")));
  EXPECT_FALSE(allowed(request(robot, "update", "jobs", "apps", "j", "depl.dev")));
  // Another service account of the same name elsewhere is someone else.
  EXPECT_FALSE(
      allowed(request(service_account_user("other", "robot", "u"), "list", "pods", "apps")));
}

TEST_F(RbacTest, BootstrapRolesLetEveryoneCheckHealthAndAuthenticatedUsersDiscover) {
  RbacAuthorizer authorizer(store);
  auto path = [](const UserInfo& user, const std::string& p) {
    RequestAttributes a;
    a.user = user;
    a.resource_request = false;
    a.verb = "get";
    a.path = p;
    return a;
  };
  UserInfo anonymous{"system:anonymous", "", {"system:unauthenticated"}, {}};
  EXPECT_TRUE(authorizer.authorize(path(anonymous, "/version")).allowed);
  EXPECT_TRUE(authorizer.authorize(path(anonymous, "/readyz")).allowed);
  EXPECT_FALSE(authorizer.authorize(path(anonymous, "/api")).allowed);
  EXPECT_TRUE(authorizer.authorize(path(robot, "/apis/apps/v1")).allowed);
  EXPECT_TRUE(authorizer.authorize(path(robot, "/openapi/v3/api/v1")).allowed);
  EXPECT_FALSE(authorizer.authorize(path(robot, "/metrics")).allowed);
  EXPECT_TRUE(authorizer
                  .authorize(request(robot, "create", "selfsubjectaccessreviews", "", "",
                                     "authorization.k8s.io"))
                  .allowed);
  UserInfo admin{"kubernetes-admin", "", {"system:masters", "system:authenticated"}, {}};
  const auto decision = authorizer.authorize(request(admin, "delete", "nodes", "", "n"));
  EXPECT_TRUE(decision.allowed);
}

TEST_F(RbacTest, ClusterBindingsGrantEverywhereAndAChangeCountsAtOnce) {
  must(store.create(rbac("clusterroles"), json::parse(R"({"metadata":{"name":"reader"},"rules":[
      {"apiGroups":[""],"resources":["nodes"],"verbs":["list"]}]})")),
       201);
  RbacAuthorizer authorizer(store);
  EXPECT_FALSE(authorizer.authorize(request(robot, "list", "nodes", "")).allowed);
  must(store.create(rbac("clusterrolebindings"), json::parse(R"({"metadata":{"name":"readers"},
      "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"reader"},
      "subjects":[{"kind":"Group","name":"system:serviceaccounts:apps"}]})")),
       201);
  const auto decision = authorizer.authorize(request(robot, "list", "nodes", ""));
  EXPECT_TRUE(decision.allowed);
  EXPECT_EQ(decision.reason,
            "RBAC: allowed by ClusterRoleBinding \"readers\" of ClusterRole \"reader\" to Group "
            "\"system:serviceaccounts:apps\"");
  must(store.patch({kRbac, "v1", "clusterroles", "", "reader", ""}, PatchType::Merge,
                   R"({"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}]})"));
  EXPECT_FALSE(authorizer.authorize(request(robot, "list", "nodes", "")).allowed);
  EXPECT_EQ(authorizer.rules_for(robot, "").size(), 5u)
      << "reader's, system:discovery's, system:basic-user's two, system:public-info-viewer's";
}

TEST(RbacForbidden, WordedAsKubeApiserverWordsIt) {
  UserInfo robot = service_account_user("ns", "sa", "u");
  const ApiResult namespaced = forbidden(request(robot, "create", "pods", "default"));
  EXPECT_EQ(namespaced.code, 403);
  EXPECT_EQ(namespaced.body["reason"], "Forbidden");
  EXPECT_EQ(namespaced.body["message"],
            "pods is forbidden: User \"system:serviceaccount:ns:sa\" cannot create resource "
            "\"pods\" in API group \"\" in the namespace \"default\"");
  const ApiResult named =
      forbidden(request(robot, "update", "dependabletrainingjobs", "", "j", "depl.dev", "status"));
  EXPECT_EQ(named.body["message"],
            "dependabletrainingjobs.depl.dev \"j\" is forbidden: User "
            "\"system:serviceaccount:ns:sa\" cannot update resource "
            "\"dependabletrainingjobs/status\" in API group \"depl.dev\" at the cluster scope");
  EXPECT_EQ(named.body["details"],
            json({{"name", "j"}, {"group", "depl.dev"}, {"kind", "dependabletrainingjobs"}}));
  RequestAttributes path;
  path.user = robot;
  path.resource_request = false;
  path.verb = "get";
  path.path = "/metrics";
  EXPECT_EQ(forbidden(path).body["message"],
            "forbidden: User \"system:serviceaccount:ns:sa\" cannot get path \"/metrics\"");
}

}  // namespace
}  // namespace depl::devcluster::testing
