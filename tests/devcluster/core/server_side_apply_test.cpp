// Server-side apply through the store: creation, field ownership, conflicts, force, removal of
// fields a manager stops applying, and managedFields from ordinary updates.
#include "depl/devcluster/server_side_apply.hpp"

#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using namespace testing;

json deployment(int replicas, const std::string& image, bool with_label = true) {
  json d = json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
     "spec":{"selector":{"matchLabels":{"app":"web"}},
             "template":{"metadata":{"labels":{"app":"web"}},
                         "spec":{"containers":[{"name":"main"}]}}}})");
  d["spec"]["replicas"] = replicas;
  d["spec"]["template"]["spec"]["containers"][0]["image"] = image;
  if (with_label) d["metadata"]["labels"] = {{"team", "a"}};
  return d;
}

ResourceRef deployments(const std::string& name = "") {
  return {"apps", "v1", "deployments", "default", name, ""};
}

std::vector<std::string> managers(const json& object) {
  std::vector<std::string> out;
  for (const auto& m : object["metadata"]["managedFields"]) {
    out.push_back(m["manager"].get<std::string>() + ":" + m["operation"].get<std::string>());
  }
  return out;
}

TEST(FieldSets, KeyedListsUseMergeKeys) {
  ApplyContext context;
  json set = fields_of(deployment(1, "a"), context);
  EXPECT_TRUE(
      set["f:spec"]["f:template"]["f:spec"]["f:containers"].contains(R"(k:{"name":"main"})"));
  EXPECT_TRUE(set["f:spec"].contains("f:replicas"));
  EXPECT_TRUE(set["f:metadata"].contains("f:labels"));
  EXPECT_FALSE(set["f:metadata"].contains("f:name"));
  EXPECT_FALSE(set.contains("f:apiVersion"));
}

TEST_F(StoreTest, ApplyCreatesThenConflictsThenForces) {
  ApiResult created = store.patch(deployments("web"), PatchType::Apply,
                                  deployment(2, "img:1").dump(), {.field_manager = "kubectl"});
  ASSERT_EQ(created.code, 201) << created.body.dump();
  EXPECT_EQ(created.body["spec"]["replicas"], 2);
  EXPECT_EQ(managers(created.body), std::vector<std::string>{"kubectl:Apply"});

  // Same config again: no change, same resourceVersion.
  json again = must(store.patch(deployments("web"), PatchType::Apply, deployment(2, "img:1").dump(),
                                {.field_manager = "kubectl"}));
  EXPECT_EQ(rv_of(again), rv_of(created.body));

  // Another manager changing replicas conflicts.
  json other = json::parse(
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5}})");
  ApiResult conflict =
      store.patch(deployments("web"), PatchType::Apply, other.dump(), {.field_manager = "hpa"});
  ASSERT_EQ(conflict.code, 409) << conflict.body.dump();
  EXPECT_EQ(conflict.body["reason"], "Conflict");
  EXPECT_EQ(
      conflict.body["message"],
      "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas");
  EXPECT_EQ(conflict.body["details"]["causes"][0]["field"], ".spec.replicas");

  // Agreeing on the value is shared ownership, not a conflict.
  json agree = other;
  agree["spec"]["replicas"] = 2;
  must(store.patch(deployments("web"), PatchType::Apply, agree.dump(), {.field_manager = "hpa"}));

  json forced = must(store.patch(deployments("web"), PatchType::Apply, other.dump(),
                                 {.field_manager = "hpa", .force = true}));
  EXPECT_EQ(forced["spec"]["replicas"], 5);
  // kubectl no longer owns replicas: dropping it from kubectl's config keeps hpa's value.
  json without_replicas = deployment(2, "img:2");
  without_replicas["spec"].erase("replicas");
  json after = must(store.patch(deployments("web"), PatchType::Apply, without_replicas.dump(),
                                {.field_manager = "kubectl"}));
  EXPECT_EQ(after["spec"]["replicas"], 5);
  EXPECT_EQ(after["spec"]["template"]["spec"]["containers"][0]["image"], "img:2");
}

TEST_F(StoreTest, ApplyRemovesFieldsTheManagerStopsApplying) {
  must(store.patch(deployments("web"), PatchType::Apply, deployment(1, "a").dump(),
                   {.field_manager = "kubectl"}),
       201);
  json applied = must(store.patch(deployments("web"), PatchType::Apply,
                                  deployment(1, "a", false).dump(), {.field_manager = "kubectl"}));
  EXPECT_FALSE(applied["metadata"].contains("labels") &&
               applied["metadata"]["labels"].contains("team"));
}

TEST_F(StoreTest, ApplyMergesKeyedListItemsAndDropsUnappliedOnes) {
  json two = deployment(1, "a");
  two["spec"]["template"]["spec"]["containers"].push_back({{"name", "side"}, {"image", "s:1"}});
  must(store.patch(deployments("web"), PatchType::Apply, two.dump(), {.field_manager = "kubectl"}),
       201);
  // Another manager adds an env var to "main" through an update.
  must(store.patch(
      deployments("web"), PatchType::Strategic,
      R"({"spec":{"template":{"spec":{"containers":[{"name":"main","env":[{"name":"X","value":"1"}]}]}}}})",
      {.field_manager = "injector"}));
  json one = deployment(1, "b");
  json after = must(
      store.patch(deployments("web"), PatchType::Apply, one.dump(), {.field_manager = "kubectl"}));
  const json& containers = after["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(containers.size(), 1u) << containers.dump();
  EXPECT_EQ(containers[0]["name"], "main");
  EXPECT_EQ(containers[0]["image"], "b");
  EXPECT_EQ(containers[0]["env"], json::parse(R"([{"name":"X","value":"1"}])"))
      << "kept: owned by injector";
}

TEST_F(StoreTest, ApplyAcceptsYamlAndNeedsAFieldManager) {
  std::string yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"1\"\n";
  ApiResult r = store.patch(core("configmaps", "default", "c"), PatchType::Apply, yaml,
                            {.field_manager = "m"});
  ASSERT_EQ(r.code, 201) << r.body.dump();
  EXPECT_EQ(r.body["data"]["a"], "1");
  ApiResult missing = store.patch(core("configmaps", "default", "c"), PatchType::Apply, yaml);
  EXPECT_EQ(missing.code, 422);
  EXPECT_EQ(missing.body["details"]["causes"][0]["field"], "fieldManager");
}

TEST_F(StoreTest, UpdatesAreTrackedAsUpdateOperations) {
  must(store.patch(deployments("web"), PatchType::Apply, deployment(1, "a").dump(),
                   {.field_manager = "kubectl"}),
       201);
  json patched =
      must(store.patch(deployments("web"), PatchType::Merge, R"({"spec":{"replicas":3}})",
                       {.user_agent = "depl-controller/0.1"}));
  EXPECT_EQ(managers(patched),
            (std::vector<std::string>{"kubectl:Apply", "depl-controller:Update"}));
  // The update took replicas from kubectl, so re-applying replicas=1 conflicts with the controller.
  ApiResult conflict = store.patch(deployments("web"), PatchType::Apply, deployment(1, "a").dump(),
                                   {.field_manager = "kubectl"});
  EXPECT_EQ(conflict.code, 409);
  EXPECT_NE(conflict.body["message"].get<std::string>().find("conflict with \"depl-controller\""),
            std::string::npos);
}

TEST_F(StoreTest, ManagedFieldsCanBeRewrittenByAPatch) {
  // What kubectl does when upgrading client-side-apply ownership to server-side apply.
  json created = must(store.create(deployments(), deployment(1, "a"),
                                   {.field_manager = "kubectl-client-side-apply"}),
                      201);
  ASSERT_EQ(managers(created), std::vector<std::string>{"kubectl-client-side-apply:Update"});
  json ops = json::array(
      {{{"op", "replace"}, {"path", "/metadata/managedFields/0/manager"}, {"value", "kubectl"}},
       {{"op", "replace"}, {"path", "/metadata/managedFields/0/operation"}, {"value", "Apply"}}});
  json upgraded = must(
      store.patch(deployments("web"), PatchType::Json, ops.dump(), {.field_manager = "kubectl"}));
  EXPECT_EQ(managers(upgraded), std::vector<std::string>{"kubectl:Apply"});
  json applied = must(store.patch(deployments("web"), PatchType::Apply, deployment(3, "a").dump(),
                                  {.field_manager = "kubectl"}));
  EXPECT_EQ(applied["spec"]["replicas"], 3);
}

TEST_F(StoreTest, ApplyToCustomResourceStatus) {
  install_crd();
  must(store.patch(dtj("default", "j"), PatchType::Apply, a_job("j").dump(),
                   {.field_manager = "kubectl"}),
       201);
  json status = {{"apiVersion", "depl.dev/v1alpha1"},
                 {"kind", "DependableTrainingJob"},
                 {"metadata", {{"name", "j"}}},
                 {"status", {{"phase", "Pending"}}}};
  json r = must(store.patch(dtj("default", "j", "status"), PatchType::Apply, status.dump(),
                            {.field_manager = "depl-controller"}));
  EXPECT_EQ(r["status"]["phase"], "Pending");
  EXPECT_EQ(r["metadata"]["generation"], 1);
  bool status_entry = false;
  for (const auto& m : r["metadata"]["managedFields"]) {
    if (m["manager"] == "depl-controller") status_entry = m.value("subresource", "") == "status";
  }
  EXPECT_TRUE(status_entry);
}

// managedFields a request writes are stored as written when they are in the store's own form and
// rewritten in it otherwise: unknown members dropped, a "." owning its item alone.
TEST_F(StoreTest, ClientWrittenManagedFieldsAreStoredInTheStoresForm) {
  json created =
      must(store.create(deployments(), deployment(1, "a"), {.field_manager = "kubectl"}), 201);
  json entries = created["metadata"]["managedFields"];
  ASSERT_EQ(entries.size(), 1u);
  const json tool = json::parse(R"({"manager":"tool","operation":"Update","apiVersion":"apps/v1",
    "time":"2025-12-31T00:00:00Z","fieldsType":"FieldsV1",
    "fieldsV1":{"f:metadata":{"f:labels":{"f:team":{}}}}})");
  json noted = tool;
  noted["note"] = "mine";
  json dotted = tool;
  dotted["manager"] = "other";
  dotted["fieldsV1"] = {{"f:metadata", {{"f:labels", {{".", {{"f:team", json::object()}}}}}}}};
  entries.push_back(noted);
  entries.push_back(dotted);
  json ops =
      json::array({{{"op", "replace"}, {"path", "/metadata/managedFields"}, {"value", entries}}});
  json patched = must(
      store.patch(deployments("web"), PatchType::Json, ops.dump(), {.field_manager = "kubectl"}));
  EXPECT_NE(rv_of(patched), rv_of(created));
  json expected_dotted = dotted;
  expected_dotted["fieldsV1"] = {{"f:metadata", {{"f:labels", {{".", json::object()}}}}}};
  EXPECT_EQ(patched["metadata"]["managedFields"], json::array({entries[0], tool, expected_dotted}));
}

// A worker pod's life as the controller, the scheduler and the kubelet write it. managedFields
// are compared whole: which manager owns which field, and when each entry was last written.
TEST_F(StoreTest, ManagedFieldsFollowAPodsWriters) {
  json pod = a_pod("w", {{"app", "a"}, {"rank", "0"}});
  pod["spec"]["containers"][0]["env"] = {{{"name", "A"}, {"value", "1"}},
                                         {{"name", "B"}, {"value", "2"}}};
  must(store.create(core("pods", "default"), pod, {.field_manager = "controller"}), 201);
  clock.now += std::chrono::seconds(1);
  must(store.create(core("pods", "default", "w", "binding"),
                    {{"metadata", {{"name", "w"}}}, {"target", {{"name", "n1"}}}},
                    {.field_manager = "scheduler"}),
       201);
  clock.now += std::chrono::seconds(1);
  const ResourceRef status = core("pods", "default", "w", "status");
  must(store.patch(
      status, PatchType::Merge,
      R"({"status":{"phase":"Running","conditions":[{"type":"Ready","status":"False"}]}})",
      {.field_manager = "kubelet"}));
  clock.now += std::chrono::seconds(1);
  must(store.patch(
      status, PatchType::Merge,
      R"({"status":{"conditions":[{"type":"Ready","status":"True"}],"podIP":"10.0.0.1"}})",
      {.field_manager = "kubelet"}));
  clock.now += std::chrono::seconds(1);
  must(store.patch(core("pods", "default", "w"), PatchType::Strategic,
                   R"({"metadata":{"annotations":{"progress":"1"}}})",
                   {.field_manager = "controller"}));
  clock.now += std::chrono::seconds(1);
  // Another manager changes a label and the image the controller set (of a pod's spec, only images
  // may change): they become its own.
  json last = must(store.patch(
      core("pods", "default", "w"), PatchType::Strategic,
      R"({"metadata":{"labels":{"rank":"1"}},"spec":{"containers":[{"name":"main","image":"busybox:2"}]}})",
      {.field_manager = "operator"}));
  // The binding is no field manager's; the kubelet's second write kept its entry (same fields,
  // new time); the controller's patch added to its own; the operator took rank and the image.
  EXPECT_EQ(last["metadata"]["managedFields"], json::parse(R"([
    {"manager":"controller","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:04Z",
     "fieldsType":"FieldsV1","fieldsV1":{
       "f:metadata":{"f:annotations":{"f:progress":{}},"f:labels":{"f:app":{}}},
       "f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},
                   "f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}},
                            "k:{\"name\":\"B\"}":{".":{},"f:name":{},"f:value":{}}},
                   "f:imagePullPolicy":{},"f:name":{},"f:terminationMessagePath":{},
                   "f:terminationMessagePolicy":{}}},
                 "f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},
                 "f:terminationGracePeriodSeconds":{}}}},
    {"manager":"kubelet","operation":"Update","subresource":"status","apiVersion":"v1",
     "time":"2026-01-01T00:00:03Z","fieldsType":"FieldsV1","fieldsV1":{
       "f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},
                   "f:phase":{},"f:podIP":{}}}},
    {"manager":"operator","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:05Z",
     "fieldsType":"FieldsV1","fieldsV1":{
       "f:metadata":{"f:labels":{"f:rank":{}}},
       "f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{"f:image":{}}}}}}])"));
}

}  // namespace
}  // namespace depl::devcluster
