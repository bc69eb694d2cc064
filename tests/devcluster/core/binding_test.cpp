// The pods/binding subresource: one write sets spec.nodeName and PodScheduled=True; the
// registry's conflicts (bound already, being deleted), preconditions and the Binding's
// validation, worded as kube-apiserver words them.
#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using namespace testing;

ResourceRef binding_of(const std::string& pod, const std::string& ns = "default") {
  return core("pods", ns, pod, "binding");
}

json a_binding(const std::string& pod, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", {{"name", pod}, {"namespace", "default"}}},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
}

const json* condition_of(const json& pod, const std::string& type) {
  for (const auto& c : pod.at("status").at("conditions")) {
    if (c.at("type") == type) return &c;
  }
  return nullptr;
}

TEST_F(StoreTest, BindingSetsNodeNameAndPodScheduledInOneWrite) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  // What the scheduler left when no node fitted, after another condition.
  json unschedulable = must(store.patch(core("pods", "default", "p", "status"), PatchType::Merge,
                                        R"({"status":{"conditions":[
      {"type":"DisruptionTarget","status":"False","lastTransitionTime":"2025-12-31T00:00:00Z"},
      {"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/1 nodes",
       "lastProbeTime":null,"lastTransitionTime":"2025-12-31T00:00:00Z"}]}})"));
  ASSERT_TRUE(unschedulable["metadata"].contains("managedFields"));
  clock.now += std::chrono::seconds(90);
  auto watch = store.watch(core("pods", "default"), {.resource_version = rv_of(unschedulable)});
  ASSERT_TRUE(watch);
  std::vector<WriteRecord> records;
  store.set_write_recorder([&](const WriteRecord& r) { records.push_back(r); });

  json binding = a_binding("p", "a100-0");
  binding["metadata"]["annotations"] = {{"scheduled-by", "test"}};
  ApiResult bound = store.create(binding_of("p"), binding, {.field_manager = "depl-scheduler"});
  EXPECT_EQ(bound.code, 201);
  EXPECT_EQ(bound.body, json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
                                        "status":"Success","code":201})"));

  json pod = must(store.get(core("pods", "default", "p")));
  EXPECT_EQ(pod["spec"]["nodeName"], "a100-0");
  EXPECT_EQ(pod["metadata"]["annotations"]["scheduled-by"], "test");
  // PodScheduled is replaced in place (no reason or message left), the other condition stays.
  ASSERT_EQ(pod["status"]["conditions"].size(), 2u);
  EXPECT_EQ(pod["status"]["conditions"][0], unschedulable["status"]["conditions"][0]);
  EXPECT_EQ(pod["status"]["conditions"][1],
            json::parse(R"({"type":"PodScheduled","status":"True","lastProbeTime":null,
                            "lastTransitionTime":"2026-01-01T00:01:30Z"})"));
  // One write: one resourceVersion, one MODIFIED event carrying both changes. Like the real
  // registry it bypasses the field manager and the generation.
  EXPECT_EQ(std::stoull(rv_of(pod)), std::stoull(rv_of(unschedulable)) + 1);
  EXPECT_EQ(store.resource_version(), rv_of(pod));
  EXPECT_EQ(pod["metadata"]["generation"], unschedulable["metadata"]["generation"]);
  EXPECT_EQ(pod["metadata"]["managedFields"], unschedulable["metadata"]["managedFields"]);
  auto events = (*watch)->drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "MODIFIED");
  EXPECT_EQ(*events[0].object, pod);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].verb, "create");
  EXPECT_EQ(records[0].plural, "pods");
  EXPECT_EQ(records[0].subresource, "binding");
  EXPECT_EQ(records[0].ns, "default");
  EXPECT_EQ(records[0].name, "p");
  EXPECT_EQ(records[0].field_manager, "depl-scheduler");
  EXPECT_EQ(records[0].resource_version, rv_of(pod));
  EXPECT_EQ(records[0].code, 201);
}

TEST_F(StoreTest, BindingAPodWithoutConditionsAddsPodScheduled) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  must(store.create(binding_of("p"), a_binding("p", "t4-0")), 201);
  json pod = must(store.get(core("pods", "default", "p")));
  const json* scheduled = condition_of(pod, "PodScheduled");
  ASSERT_TRUE(scheduled);
  EXPECT_EQ((*scheduled)["status"], "True");
  EXPECT_EQ((*scheduled)["lastTransitionTime"], "2026-01-01T00:00:00Z");
}

TEST_F(StoreTest, BindingABoundOrDeletingPodConflicts) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  must(store.create(binding_of("p"), a_binding("p", "a100-0")), 201);
  const std::string rv = store.resource_version();
  ApiResult again = store.create(binding_of("p"), a_binding("p", "a100-1"));
  EXPECT_EQ(again.code, 409);
  EXPECT_EQ(again.body["reason"], "Conflict");
  EXPECT_EQ(again.body["message"],
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to "
            "node \"a100-0\"");
  EXPECT_EQ(store.resource_version(), rv);
  EXPECT_EQ(must(store.get(core("pods", "default", "p")))["spec"]["nodeName"], "a100-0");

  json held = a_pod("held");
  held["metadata"]["finalizers"] = {"tests.depl.dev/hold"};
  must(store.create(core("pods", "default"), held), 201);
  must(store.remove(core("pods", "default", "held")));
  ApiResult deleting = store.create(binding_of("held"), a_binding("held", "a100-0"));
  EXPECT_EQ(deleting.code, 409);
  EXPECT_EQ(deleting.body["message"],
            "Operation cannot be fulfilled on pods/binding \"held\": pod held is being deleted, "
            "cannot be assigned to a host");
  EXPECT_FALSE(must(store.get(core("pods", "default", "held")))["spec"].contains("nodeName"));

  json gated = a_pod("gated");
  gated["spec"]["schedulingGates"] = {{{"name", "tests.depl.dev/wait"}}};
  must(store.create(core("pods", "default"), gated), 201);
  ApiResult gated_bind = store.create(binding_of("gated"), a_binding("gated", "a100-0"));
  EXPECT_EQ(gated_bind.code, 409);
  EXPECT_EQ(gated_bind.body["message"],
            "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty "
            ".spec.schedulingGates");
}

TEST_F(StoreTest, BindingHonoursUidAndResourceVersionPreconditions) {
  json created = must(store.create(core("pods", "default"), a_pod("p")), 201);
  json wrong_uid = a_binding("p", "a100-0");
  wrong_uid["metadata"]["uid"] = "00000000-0000-4000-8000-000000000000";
  ApiResult uid = store.create(binding_of("p"), wrong_uid);
  EXPECT_EQ(uid.code, 409);
  EXPECT_EQ(uid.body["message"],
            "Operation cannot be fulfilled on pods \"p\": Precondition failed: UID in "
            "precondition: 00000000-0000-4000-8000-000000000000, UID in object meta: " +
                created["metadata"]["uid"].get<std::string>());
  json stale = a_binding("p", "a100-0");
  stale["metadata"]["resourceVersion"] = "1";
  ApiResult rv = store.create(binding_of("p"), stale);
  EXPECT_EQ(rv.code, 409);
  EXPECT_EQ(rv.body["message"],
            "Operation cannot be fulfilled on pods \"p\": Precondition failed: ResourceVersion in "
            "precondition: 1, ResourceVersion in object meta: " +
                rv_of(created));
  json current = a_binding("p", "a100-0");
  current["metadata"]["uid"] = created["metadata"]["uid"];
  current["metadata"]["resourceVersion"] = rv_of(created);
  must(store.create(binding_of("p"), current), 201);
}

TEST_F(StoreTest, BindingErrorsNameTheProblem) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  const std::string rv = store.resource_version();

  ApiResult missing = store.create(binding_of("nope"), a_binding("nope", "a100-0"));
  EXPECT_EQ(missing.code, 404);
  EXPECT_EQ(missing.body["message"], "pods \"nope\" not found");

  ApiResult other_name = store.create(binding_of("p"), a_binding("q", "a100-0"));
  EXPECT_EQ(other_name.code, 400);
  EXPECT_EQ(other_name.body["reason"], "BadRequest");
  EXPECT_EQ(other_name.body["message"], "name in URL does not match name in Binding object");

  json other_ns = a_binding("p", "a100-0");
  other_ns["metadata"]["namespace"] = "kube-system";
  EXPECT_EQ(store.create(binding_of("p"), other_ns).code, 400);

  json not_a_binding = a_binding("p", "a100-0");
  not_a_binding["kind"] = "Pod";
  ApiResult kind = store.create(binding_of("p"), not_a_binding);
  EXPECT_EQ(kind.code, 400);
  EXPECT_EQ(kind.body["message"],
            "the kind in the data (Pod) does not match the expected kind (Binding)");

  json no_target = a_binding("p", "a100-0");
  no_target.erase("target");
  ApiResult empty = store.create(binding_of("p"), no_target);
  EXPECT_EQ(empty.code, 422);
  EXPECT_EQ(empty.body["reason"], "Invalid");
  EXPECT_EQ(empty.body["message"], "Binding \"p\" is invalid: target.name: Required value");
  EXPECT_EQ(empty.body["details"]["kind"], "Binding");
  EXPECT_EQ(empty.body["details"]["causes"][0]["field"], "target.name");
  EXPECT_EQ(empty.body["details"]["causes"][0]["reason"], "FieldValueRequired");

  json to_a_pod = a_binding("p", "other");
  to_a_pod["target"]["kind"] = "Pod";
  ApiResult target_kind = store.create(binding_of("p"), to_a_pod);
  EXPECT_EQ(target_kind.code, 422);
  EXPECT_EQ(target_kind.body["message"],
            "Binding \"p\" is invalid: target.kind: Unsupported value: \"Pod\": supported values: "
            "\"Node\", \"<empty>\"");
  EXPECT_EQ(target_kind.body["details"]["causes"][0]["field"], "target.kind");

  json numeric = a_binding("p", "a100-0");
  numeric["target"]["name"] = 3;
  EXPECT_EQ(store.create(binding_of("p"), numeric).code, 400);

  // Nothing above wrote anything.
  EXPECT_EQ(store.resource_version(), rv);
  EXPECT_FALSE(must(store.get(core("pods", "default", "p")))["spec"].contains("nodeName"));
  // binding is create-only, and only for pods.
  EXPECT_EQ(store.get(binding_of("p")).code, 404);
  EXPECT_EQ(store.create(core("configmaps", "default", "c", "binding"), a_binding("c", "n")).code,
            405);
}

TEST_F(StoreTest, BindingDryRunChecksButStoresNothing) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  const std::string rv = store.resource_version();
  EXPECT_EQ(store.create(binding_of("p"), a_binding("p", "a100-0"), {.dry_run = true}).code, 201);
  EXPECT_EQ(store.resource_version(), rv);
  EXPECT_FALSE(must(store.get(core("pods", "default", "p")))["spec"].contains("nodeName"));
  EXPECT_EQ(store.create(binding_of("nope"), a_binding("nope", "a100-0"), {.dry_run = true}).code,
            404);
}

}  // namespace
}  // namespace depl::devcluster
