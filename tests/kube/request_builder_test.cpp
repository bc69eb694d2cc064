// Requests as values: paths, query strings, headers, bodies for every verb and option.
#include "depl/kube/request_builder.hpp"

#include <gtest/gtest.h>

namespace depl::kube {
namespace {

using nlohmann::json;

// A namespaced custom resource (the operator's, as test data: the library has no built-in
// knowledge of it).
ResourceType example_crd() {
  return {"depl.dev", "v1alpha1", "dependabletrainingjobs", "DependableTrainingJob", true};
}

TEST(ResourcePaths, NamespacedClusterScopedAndAllNamespaces) {
  EXPECT_EQ(collection_path(resources::pods(), "team-a"), "/api/v1/namespaces/team-a/pods");
  EXPECT_EQ(collection_path(resources::pods(), ""), "/api/v1/pods");
  EXPECT_EQ(collection_path(resources::nodes(), "ignored"), "/api/v1/nodes");
  EXPECT_EQ(object_path(resources::leases(), "kube-system", "depl-leader"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/depl-leader");
  EXPECT_EQ(object_path(example_crd(), "ml", "job-1", "status"),
            "/apis/depl.dev/v1alpha1/namespaces/ml/dependabletrainingjobs/job-1/status");
  EXPECT_EQ(object_path(resources::nodes(), "", "node-1"), "/api/v1/nodes/node-1");
  EXPECT_EQ(resources::leases().api_version(), "coordination.k8s.io/v1");
  EXPECT_EQ(resources::pods().api_version(), "v1");
}

TEST(ResourcePaths, SegmentsArePercentEncoded) {
  EXPECT_EQ(object_path(resources::pods(), "a b", "x/y?z"),
            "/api/v1/namespaces/a%20b/pods/x%2Fy%3Fz");
}

TEST(RequestBuilder, GetWithResourceVersion) {
  auto request = requests::get(resources::pods(), "ns", "p", {.resource_version = "0"});
  ASSERT_TRUE(request);
  EXPECT_EQ(request->method, "GET");
  EXPECT_EQ(request->target(), "/api/v1/namespaces/ns/pods/p?resourceVersion=0");
  EXPECT_EQ(request->header("accept"), "application/json");
  EXPECT_TRUE(request->body.empty());
}

TEST(RequestBuilder, GetRejectsMissingNameOrNamespace) {
  auto no_ns = requests::get(resources::pods(), "", "p");
  ASSERT_FALSE(no_ns);
  EXPECT_EQ(no_ns.error().reason, ApiError::kInvalidRequest);
  EXPECT_NE(no_ns.error().message.find("namespace is empty"), std::string::npos);
  EXPECT_FALSE(requests::get(resources::nodes(), "", ""));
  EXPECT_TRUE(requests::get(resources::nodes(), "", "n1"));
}

TEST(RequestBuilder, ListQueryInOrderAndEncoded) {
  ListOptions options;
  options.label_selector = "app=x,tier!=db";
  options.field_selector = "spec.nodeName=n1";
  options.limit = 500;
  options.continue_token = "abc==";
  auto request = requests::list(resources::pods(), "", options);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->target(),
            "/api/v1/pods?labelSelector=app%3Dx%2Ctier%21%3Ddb&fieldSelector=spec.nodeName%3Dn1"
            "&limit=500&continue=abc%3D%3D");
  EXPECT_EQ(request->query_param("labelSelector"), "app=x,tier!=db");
  EXPECT_FALSE(requests::list(resources::pods(), "", {.limit = 0}));
}

TEST(RequestBuilder, WatchSetsBookmarksAndTimeout) {
  WatchOptions options;
  options.resource_version = "1234";
  options.timeout_seconds = 317;
  auto request = requests::watch(resources::pods(), "ns", options);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->target(),
            "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=1234&allowWatchBookmarks=true"
            "&timeoutSeconds=317");
  options.allow_bookmarks = false;
  options.timeout_seconds.reset();
  EXPECT_EQ(requests::watch(resources::pods(), "ns", options)->target(),
            "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=1234");
}

TEST(RequestBuilder, StreamingListNeedsNotOlderThan) {
  WatchOptions options;
  options.send_initial_events = true;
  EXPECT_FALSE(requests::watch(resources::pods(), "ns", options));
  options.resource_version_match = "NotOlderThan";
  auto request = requests::watch(resources::pods(), "ns", options);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->query_param("sendInitialEvents"), "true");
  EXPECT_EQ(request->query_param("resourceVersionMatch"), "NotOlderThan");
}

TEST(RequestBuilder, CreateTakesNamespaceFromObjectWhenNotGiven) {
  json pod = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}, {"namespace", "ml"}}}};
  auto request =
      requests::create(resources::pods(), "", pod, {.field_manager = "depl", .dry_run = true});
  ASSERT_TRUE(request);
  EXPECT_EQ(request->method, "POST");
  EXPECT_EQ(request->target(), "/api/v1/namespaces/ml/pods?dryRun=All&fieldManager=depl");
  EXPECT_EQ(request->header("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(request->body), pod);
  json no_ns = {{"metadata", {{"name", "p"}}}};
  EXPECT_FALSE(requests::create(resources::pods(), "", no_ns));
  EXPECT_TRUE(requests::create(resources::nodes(), "", no_ns));
}

TEST(RequestBuilder, ReplaceAndReplaceStatusUseObjectMetadata) {
  json job = {{"metadata", {{"name", "j"}, {"namespace", "ml"}, {"resourceVersion", "7"}}},
              {"status", {{"phase", "Running"}}}};
  auto replace = requests::replace(example_crd(), job);
  ASSERT_TRUE(replace);
  EXPECT_EQ(replace->method, "PUT");
  EXPECT_EQ(replace->path, "/apis/depl.dev/v1alpha1/namespaces/ml/dependabletrainingjobs/j");
  EXPECT_EQ(json::parse(replace->body)["metadata"]["resourceVersion"], "7");
  auto status = requests::replace_status(example_crd(), job);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->path, "/apis/depl.dev/v1alpha1/namespaces/ml/dependabletrainingjobs/j/status");
  EXPECT_FALSE(requests::replace(resources::pods(), json{{"metadata", {{"name", "x"}}}}));
}

TEST(RequestBuilder, DeleteOptionsBody) {
  DeleteOptions options;
  options.propagation_policy = PropagationPolicy::Foreground;
  options.grace_period_seconds = 0;
  options.precondition_uid = "u-1";
  options.precondition_resource_version = "42";
  options.dry_run = true;
  auto request = requests::remove(resources::pods(), "ns", "p", options);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->method, "DELETE");
  EXPECT_EQ(request->path, "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(
      json::parse(request->body),
      json::parse(R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground",
              "gracePeriodSeconds":0,"preconditions":{"uid":"u-1","resourceVersion":"42"},
              "dryRun":["All"]})"));
  EXPECT_EQ(json::parse(requests::remove(resources::pods(), "ns", "p")->body),
            json::parse(R"({"kind":"DeleteOptions","apiVersion":"v1"})"));
  EXPECT_FALSE(requests::remove(resources::pods(), "ns", "p", {.grace_period_seconds = -1}));
}

TEST(RequestBuilder, PatchContentTypes) {
  const json merge = {{"metadata", {{"labels", {{"a", "b"}}}}}};
  const json ops = json::array({{{"op", "add"}, {"path", "/metadata/labels/a"}, {"value", "b"}}});
  EXPECT_EQ(requests::patch(resources::pods(), "ns", "p", PatchType::Merge, merge)
                ->header("Content-Type"),
            "application/merge-patch+json");
  EXPECT_EQ(
      requests::patch(resources::pods(), "ns", "p", PatchType::Json, ops)->header("Content-Type"),
      "application/json-patch+json");
  EXPECT_EQ(requests::patch(resources::pods(), "ns", "p", PatchType::StrategicMerge, merge)
                ->header("Content-Type"),
            "application/strategic-merge-patch+json");
  auto apply =
      requests::patch(resources::pods(), "ns", "p", PatchType::Apply, merge,
                      {.field_manager = "depl-controller", .force = true, .subresource = "status"});
  ASSERT_TRUE(apply);
  EXPECT_EQ(apply->method, "PATCH");
  EXPECT_EQ(apply->header("Content-Type"), "application/apply-patch+yaml");
  EXPECT_EQ(apply->target(),
            "/api/v1/namespaces/ns/pods/p/status?fieldManager=depl-controller&force=true");
  EXPECT_EQ(json::parse(apply->body), merge);
}

TEST(RequestBuilder, PatchValidation) {
  const json merge = {{"spec", json::object()}};
  EXPECT_FALSE(requests::patch(resources::pods(), "ns", "p", PatchType::Json, merge));
  EXPECT_FALSE(requests::patch(resources::pods(), "ns", "p", PatchType::Merge, json::array()));
  auto no_manager = requests::patch(resources::pods(), "ns", "p", PatchType::Apply, merge);
  ASSERT_FALSE(no_manager);
  EXPECT_NE(no_manager.error().message.find("field manager"), std::string::npos);
  EXPECT_FALSE(
      requests::patch(resources::pods(), "ns", "p", PatchType::Merge, merge, {.force = true}));
  EXPECT_FALSE(requests::patch(resources::pods(), "ns", "p", PatchType::Merge, merge,
                               {.subresource = "exec"}));
}

}  // namespace
}  // namespace depl::kube
