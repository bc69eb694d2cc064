// Deletion: preconditions, finalizers and deletionTimestamp, garbage collection (background,
// foreground, orphan), namespaces, graceful pod deletion.
#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using namespace testing;

json owned_by(json object, const json& owner, bool block = false) {
  object["metadata"]["ownerReferences"] = json::array({{{"apiVersion", owner["apiVersion"]},
                                                        {"kind", owner["kind"]},
                                                        {"name", owner["metadata"]["name"]},
                                                        {"uid", owner["metadata"]["uid"]},
                                                        {"controller", true},
                                                        {"blockOwnerDeletion", block}}});
  return object;
}

json configmap(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}};
}

TEST_F(StoreTest, DeleteReturnsTheObjectAndHonoursPreconditions) {
  json created = must(store.create(core("configmaps", "default"), configmap("c")), 201);
  ApiResult wrong_uid = store.remove(core("configmaps", "default", "c"), {.precondition_uid = "x"});
  EXPECT_EQ(wrong_uid.code, 409);
  EXPECT_NE(wrong_uid.body["message"].get<std::string>().find(
                "Precondition failed: UID in precondition: x"),
            std::string::npos);
  EXPECT_EQ(
      store.remove(core("configmaps", "default", "c"), {.precondition_resource_version = "1"}).code,
      409);
  json deleted =
      must(store.remove(core("configmaps", "default", "c"),
                        {.precondition_uid = created["metadata"]["uid"].get<std::string>()}));
  EXPECT_EQ(deleted["metadata"]["uid"], created["metadata"]["uid"]);
  EXPECT_EQ(store.get(core("configmaps", "default", "c")).code, 404);
  EXPECT_EQ(store.remove(core("configmaps", "default", "c")).code, 404);
}

TEST_F(StoreTest, FinalizersKeepTheObjectUntilRemoved) {
  install_crd();
  json job = a_job("j");
  job["metadata"]["finalizers"] = {"depl.dev/cleanup"};
  must(store.create(dtj("default"), job), 201);
  auto sub = store.watch(dtj("default"), {.resource_version = store.resource_version()});
  ASSERT_TRUE(sub);
  json deleting = must(store.remove(dtj("default", "j")));
  EXPECT_EQ(deleting["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z");
  json current = must(store.get(dtj("default", "j")));
  // New finalizers cannot be added any more.
  json more = current;
  more["metadata"]["finalizers"].push_back("other");
  ApiResult refused = store.update(dtj("default", "j"), more);
  EXPECT_EQ(refused.code, 422);
  EXPECT_NE(refused.body["message"].get<std::string>().find("no new finalizers can be added"),
            std::string::npos);
  // Removing the last finalizer deletes it.
  json done = current;
  done["metadata"]["finalizers"] = json::array();
  must(store.update(dtj("default", "j"), done));
  EXPECT_EQ(store.get(dtj("default", "j")).code, 404);
  std::vector<std::string> types;
  for (const auto& e : (*sub)->drain()) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{"MODIFIED", "DELETED"}));
}

TEST_F(StoreTest, BackgroundDeletionCollectsDependents) {
  json owner = must(store.create(core("configmaps", "default"), configmap("owner")), 201);
  must(store.create(core("configmaps", "default"), owned_by(configmap("child"), owner)), 201);
  json child = must(store.get(core("configmaps", "default", "child")));
  must(store.create(core("configmaps", "default"), owned_by(configmap("grandchild"), child)), 201);
  json other_owner = must(store.create(core("configmaps", "default"), configmap("other")), 201);
  json shared = owned_by(configmap("shared"), owner);
  shared["metadata"]["ownerReferences"].push_back(
      owned_by(configmap("x"), other_owner)["metadata"]["ownerReferences"][0]);
  must(store.create(core("configmaps", "default"), shared), 201);

  must(store.remove(core("configmaps", "default", "owner")));
  EXPECT_EQ(store.get(core("configmaps", "default", "child")).code, 404);
  EXPECT_EQ(store.get(core("configmaps", "default", "grandchild")).code, 404);
  EXPECT_EQ(store.get(core("configmaps", "default", "shared")).code, 200)
      << "another owner remains";
  must(store.remove(core("configmaps", "default", "other")));
  EXPECT_EQ(store.get(core("configmaps", "default", "shared")).code, 404);
}

TEST_F(StoreTest, ObjectCreatedForAnOwnerAlreadyGoneIsCollected) {
  // A controller that read its owner from a stale cache creates a child after the owner was
  // deleted: the create succeeds, and the garbage collector removes the child.
  json owner = must(store.create(core("configmaps", "default"), configmap("owner")), 201);
  must(store.remove(core("configmaps", "default", "owner")));
  must(store.create(core("configmaps", "default"), owned_by(configmap("late"), owner)), 201);
  EXPECT_EQ(store.get(core("configmaps", "default", "late")).code, 404);
  // One owner of two still there: kept.
  json alive = must(store.create(core("configmaps", "default"), configmap("alive")), 201);
  json both = owned_by(configmap("both"), owner);
  both["metadata"]["ownerReferences"].push_back(
      owned_by(configmap("x"), alive)["metadata"]["ownerReferences"][0]);
  must(store.create(core("configmaps", "default"), both), 201);
  EXPECT_EQ(store.get(core("configmaps", "default", "both")).code, 200);
}

TEST_F(StoreTest, ForegroundDeletionWaitsForBlockingDependents) {
  json owner = must(store.create(core("configmaps", "default"), configmap("owner")), 201);
  json child = owned_by(configmap("child"), owner, true);
  child["metadata"]["finalizers"] = {"test/hold"};
  must(store.create(core("configmaps", "default"), child), 201);
  json deleting = must(
      store.remove(core("configmaps", "default", "owner"), {.propagation_policy = "Foreground"}));
  EXPECT_TRUE(deleting["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(deleting["metadata"]["finalizers"], json::array({"foregroundDeletion"}));
  json held = must(store.get(core("configmaps", "default", "child")));
  EXPECT_TRUE(held["metadata"].contains("deletionTimestamp")) << "the dependent is being deleted";
  EXPECT_EQ(store.get(core("configmaps", "default", "owner")).code, 200) << "owner waits";
  held["metadata"]["finalizers"] = json::array();
  must(store.update(core("configmaps", "default", "child"), held));
  EXPECT_EQ(store.get(core("configmaps", "default", "child")).code, 404);
  EXPECT_EQ(store.get(core("configmaps", "default", "owner")).code, 404) << "owner follows";
}

TEST_F(StoreTest, OrphanDeletionRemovesOwnerReferences) {
  json owner = must(store.create(core("configmaps", "default"), configmap("owner")), 201);
  must(store.create(core("configmaps", "default"), owned_by(configmap("child"), owner)), 201);
  must(store.remove(core("configmaps", "default", "owner"), {.propagation_policy = "Orphan"}));
  json child = must(store.get(core("configmaps", "default", "child")));
  EXPECT_FALSE(child["metadata"].contains("ownerReferences"));
  EXPECT_EQ(
      store.remove(core("configmaps", "default", "child"), {.propagation_policy = "Sideways"}).code,
      422);
}

TEST_F(StoreTest, NamespaceDeletionTakesItsContents) {
  must(
      store.create(core("namespaces"),
                   {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team"}}}}),
      201);
  must(store.create(core("configmaps", "team"), configmap("c")), 201);
  json held = configmap("held");
  held["metadata"]["finalizers"] = {"test/hold"};
  must(store.create(core("configmaps", "team"), held), 201);
  json ns = must(store.remove(core("namespaces", "", "team")));
  EXPECT_EQ(ns["status"]["phase"], "Terminating");
  EXPECT_EQ(store.get(core("configmaps", "team", "c")).code, 404);
  EXPECT_EQ(store.create(core("configmaps", "team"), configmap("new")).code, 403);
  json h = must(store.get(core("configmaps", "team", "held")));
  h["metadata"]["finalizers"] = json::array();
  must(store.update(core("configmaps", "team", "held"), h));
  EXPECT_EQ(store.get(core("namespaces", "", "team")).code, 404);
  EXPECT_EQ(store.remove(core("namespaces", "", "default")).code, 403);
}

TEST(GracefulPodDeletion, BoundPodsWaitForTheKubelet) {
  FixedClock clock;
  ApiStore store{StoreOptions{100, [&] { return clock.now; }, true, 1}};
  json pod = a_pod("p");
  pod["spec"]["nodeName"] = "n1";
  ASSERT_EQ(store.create(core("pods", "default"), pod).code, 201);
  ApiResult first = store.remove(core("pods", "default", "p"));
  ASSERT_EQ(first.code, 200);
  EXPECT_EQ(first.body["metadata"]["deletionGracePeriodSeconds"], 30);
  EXPECT_EQ(first.body["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
  EXPECT_EQ(store.get(core("pods", "default", "p")).code, 200);
  // Updates during the grace period (the kubelet's status) keep the pod.
  json terminating = store.get(core("pods", "default", "p")).body;
  terminating["status"]["phase"] = "Running";
  terminating["status"]["message"] = "stopping";
  ASSERT_EQ(store.update(core("pods", "default", "p", "status"), terminating).code, 200);
  terminating = store.get(core("pods", "default", "p")).body;
  terminating["metadata"]["labels"]["seen"] = "yes";
  ASSERT_EQ(store.update(core("pods", "default", "p"), terminating).code, 200);
  EXPECT_EQ(store.get(core("pods", "default", "p")).code, 200);
  ASSERT_EQ(store.remove(core("pods", "default", "p"), {.grace_period_seconds = 0}).code, 200);
  EXPECT_EQ(store.get(core("pods", "default", "p")).code, 404);
  // Unbound pods go at once.
  ASSERT_EQ(store.create(core("pods", "default"), a_pod("q")).code, 201);
  ASSERT_EQ(store.remove(core("pods", "default", "q")).code, 200);
  EXPECT_EQ(store.get(core("pods", "default", "q")).code, 404);
}

TEST_F(StoreTest, DeleteCollectionBySelector) {
  must(store.create(core("pods", "default"), a_pod("a", {{"app", "x"}})), 201);
  must(store.create(core("pods", "default"), a_pod("b", {{"app", "y"}})), 201);
  json deleted =
      must(store.remove_collection(core("pods", "default"), {.label_selector = "app=x"}));
  EXPECT_EQ(deleted["items"].size(), 1u);
  EXPECT_EQ(must(store.list(core("pods", "default")))["items"].size(), 1u);
}

}  // namespace
}  // namespace depl::devcluster
