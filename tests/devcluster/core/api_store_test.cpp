// ApiStore: create/get/list/update/patch semantics, resourceVersions, generation, the status
// subresource, conflicts, dry runs, CRDs and custom-resource validation.
#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using namespace testing;

TEST_F(StoreTest, StartsWithSystemNamespacesAndDefaultServiceAccounts) {
  json list = must(store.list(core("namespaces")));
  std::vector<std::string> names;
  for (const auto& ns : list["items"]) names.push_back(ns["metadata"]["name"]);
  EXPECT_EQ(names,
            (std::vector<std::string>{"default", "kube-node-lease", "kube-public", "kube-system"}));
  EXPECT_EQ(list["items"][0]["status"]["phase"], "Active");
  must(store.get(core("serviceaccounts", "default", "default")));
}

TEST_F(StoreTest, CreateFillsServerMetadataAndGenerateName) {
  json pod = a_pod("");
  pod["metadata"].erase("name");
  pod["metadata"]["generateName"] = "worker-";
  json created = must(store.create(core("pods", "default"), pod), 201);
  std::string name = created["metadata"]["name"];
  EXPECT_EQ(name.rfind("worker-", 0), 0u);
  EXPECT_EQ(name.size(), 12u);
  EXPECT_EQ(created["metadata"]["namespace"], "default");
  EXPECT_EQ(created["metadata"]["generation"], 1);
  EXPECT_EQ(created["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(created["metadata"]["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(created["status"]["phase"], "Pending");
  EXPECT_EQ(rv_of(created), store.resource_version());
  EXPECT_EQ(must(store.get(core("pods", "default", name))), created);
}

TEST_F(StoreTest, CreateErrors) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  ApiResult dup = store.create(core("pods", "default"), a_pod("p"));
  EXPECT_EQ(dup.code, 409);
  EXPECT_EQ(dup.body["reason"], "AlreadyExists");
  EXPECT_EQ(dup.body["message"], "pods \"p\" already exists");
  ApiResult no_ns = store.create(core("pods", "nope"), a_pod("p"));
  EXPECT_EQ(no_ns.code, 404);
  EXPECT_EQ(no_ns.body["message"], "namespaces \"nope\" not found");
  ApiResult bad_name = store.create(core("pods", "default"), a_pod("Bad_Name"));
  EXPECT_EQ(bad_name.code, 422);
  EXPECT_EQ(bad_name.body["details"]["causes"][0]["field"], "metadata.name");
  json wrong_kind = a_pod("q");
  wrong_kind["kind"] = "Service";
  EXPECT_EQ(store.create(core("pods", "default"), wrong_kind).code, 400);
  EXPECT_EQ(store.create({"", "v1", "widgets", "default", "", ""}, a_pod("w")).code, 404);
}

TEST_F(StoreTest, DryRunStoresNothing) {
  std::string before = store.resource_version();
  ApiResult r = store.create(core("pods", "default"), a_pod("p"), {.dry_run = true});
  EXPECT_EQ(r.code, 201);
  EXPECT_EQ(store.get(core("pods", "default", "p")).code, 404);
  EXPECT_EQ(store.resource_version(), before);
}

TEST_F(StoreTest, UpdateWithStaleResourceVersionConflicts) {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "c"}}},
             {"data", {{"a", "1"}}}};
  json created = must(store.create(core("configmaps", "default"), cm), 201);
  json first = created;
  first["data"]["a"] = "2";
  json updated = must(store.update(core("configmaps", "default", "c"), first));
  EXPECT_GT(std::stoull(rv_of(updated)), std::stoull(rv_of(created)));
  json stale = created;
  stale["data"]["a"] = "3";
  ApiResult r = store.update(core("configmaps", "default", "c"), stale);
  EXPECT_EQ(r.code, 409);
  EXPECT_EQ(r.body["reason"], "Conflict");
  EXPECT_EQ(r.body["message"],
            "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; "
            "please apply your changes to the latest version and try again");
  // Built-ins accept unconditional updates.
  json unconditional = updated;
  unconditional["metadata"].erase("resourceVersion");
  unconditional["data"]["a"] = "4";
  EXPECT_EQ(must(store.update(core("configmaps", "default", "c"), unconditional))["data"]["a"],
            "4");
}

TEST_F(StoreTest, NoOpUpdateKeepsTheResourceVersion) {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "c"}}},
             {"data", {{"a", "1"}}}};
  json created = must(store.create(core("configmaps", "default"), cm), 201);
  json same = must(store.update(core("configmaps", "default", "c"), created));
  EXPECT_EQ(rv_of(same), rv_of(created));
}

// /status writes the status alone: whatever else the request carries (spec, labels, its own
// managedFields, server-owned metadata) is the object's as it was; a null status removes it.
TEST_F(StoreTest, StatusWritesChangeTheStatusAlone) {
  json created = must(store.create(core("pods", "default"), a_pod("p", {{"app", "a"}}),
                                   {.field_manager = "controller"}),
                      201);
  auto watch = store.watch(core("pods", "default"), {.resource_version = rv_of(created)});
  ASSERT_TRUE(watch);
  json request = created;
  request["spec"]["containers"][0]["image"] = "other:2";
  request["spec"]["nodeName"] = "n9";
  request["metadata"]["labels"] = {{"app", "b"}};
  request["metadata"]["uid"] = "forged";
  request["metadata"]["managedFields"] = json::array();
  request["kind"] = "Pod";
  request["status"] = {{"phase", "Running"}, {"podIP", "10.0.0.1"}};
  json updated = must(
      store.update(core("pods", "default", "p", "status"), request, {.field_manager = "kubelet"}));
  EXPECT_EQ(updated["status"], json({{"phase", "Running"}, {"podIP", "10.0.0.1"}}));
  EXPECT_EQ(updated["spec"], created["spec"]);
  json expected_metadata = created["metadata"];
  expected_metadata["resourceVersion"] = rv_of(updated);
  expected_metadata["managedFields"].push_back(
      {{"manager", "kubelet"},
       {"operation", "Update"},
       {"subresource", "status"},
       {"apiVersion", "v1"},
       {"time", "2026-01-01T00:00:00Z"},
       {"fieldsType", "FieldsV1"},
       {"fieldsV1", {{"f:status", {{"f:phase", json::object()}, {"f:podIP", json::object()}}}}}});
  EXPECT_EQ(updated["metadata"], expected_metadata);

  // The same status again changes nothing: no new resourceVersion, no event.
  json same = must(store.patch(core("pods", "default", "p", "status"), PatchType::Merge,
                               R"({"status":{"phase":"Running"},"spec":{"nodeName":"n1"}})",
                               {.field_manager = "kubelet"}));
  EXPECT_EQ(same, updated);
  json cleared = same;
  cleared["status"] = nullptr;
  json without = must(
      store.update(core("pods", "default", "p", "status"), cleared, {.field_manager = "kubelet"}));
  EXPECT_FALSE(without.contains("status"));
  EXPECT_EQ(without["spec"], created["spec"]);
  std::vector<std::string> events;
  for (const auto& e : (*watch)->drain()) events.push_back(e.type + " " + rv_of(*e.object));
  EXPECT_EQ(events,
            (std::vector<std::string>{"MODIFIED " + rv_of(updated), "MODIFIED " + rv_of(without)}));
}

TEST_F(StoreTest, SharedAnswersAreTheStoredObjectNotACopy) {
  const WriteOptions shared{.field_manager = "controller", .shared_answer = true};
  ApiResult created = store.create(core("pods", "default"), a_pod("p"), shared);
  ASSERT_EQ(created.code, 201);
  EXPECT_TRUE(created.body.is_null());
  ASSERT_TRUE(created.object);
  EXPECT_EQ(created.answer(), must(store.get(core("pods", "default", "p"))));

  // The answer is the object the store keeps and its watches deliver: the same one, not a copy.
  auto watch = store.watch(core("pods", "default"), {.resource_version = rv_of(*created.object)});
  ASSERT_TRUE(watch);
  ApiResult patched = store.patch(core("pods", "default", "p", "status"), PatchType::Merge,
                                  R"({"status":{"phase":"Running"}})", shared);
  ASSERT_EQ(patched.code, 200);
  EXPECT_TRUE(patched.body.is_null());
  ASSERT_TRUE(patched.object);
  EXPECT_EQ((*patched.object)["status"]["phase"], "Running");
  json labelled = *patched.object;
  labelled["metadata"]["labels"] = {{"app", "a"}};
  ApiResult updated = store.update(core("pods", "default", "p"), labelled, shared);
  ASSERT_EQ(updated.code, 200);
  EXPECT_TRUE(updated.body.is_null());
  auto events = (*watch)->drain();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].object.get(), patched.object.get());
  EXPECT_EQ(events[1].object.get(), updated.object.get());

  // A failure answers with a Status in `body`, shared or not.
  ApiResult missing = store.patch(core("pods", "default", "q"), PatchType::Merge, "{}", shared);
  EXPECT_EQ(missing.code, 404);
  EXPECT_FALSE(missing.object);
  EXPECT_EQ(missing.answer()["kind"], "Status");

  // Without shared_answer (the default) the answer is a copy in `body`.
  ApiResult copied = store.patch(core("pods", "default", "p", "status"), PatchType::Merge,
                                 R"({"status":{"phase":"Succeeded"}})", {.field_manager = "k"});
  ASSERT_EQ(copied.code, 200);
  EXPECT_FALSE(copied.object);
  EXPECT_EQ(copied.body["status"]["phase"], "Succeeded");
  EXPECT_EQ(&copied.answer(), &copied.body);

  // A custom resource is answered as its clients see it (defaults of its schema applied), and a
  // dry run with what it would have stored.
  install_crd();
  ApiResult job = store.create(dtj("default"), a_job("j"), shared);
  ASSERT_EQ(job.code, 201);
  ASSERT_TRUE(job.object);
  EXPECT_EQ(*job.object, must(store.get(dtj("default", "j"))));
  ApiResult dry =
      store.create(core("pods", "default"), a_pod("d"), {.dry_run = true, .shared_answer = true});
  ASSERT_EQ(dry.code, 201);
  ASSERT_TRUE(dry.object);
  EXPECT_EQ((*dry.object)["metadata"]["name"], "d");
  EXPECT_EQ(store.get(core("pods", "default", "d")).code, 404);
}

TEST_F(StoreTest, CustomResourcesNeedAResourceVersionOnUpdate) {
  install_crd();
  json job = must(store.create(dtj("default"), a_job("j")), 201);
  job["metadata"].erase("resourceVersion");
  ApiResult r = store.update(dtj("default", "j"), job);
  EXPECT_EQ(r.code, 422);
  EXPECT_EQ(r.body["message"],
            "DependableTrainingJob.depl.dev \"j\" is invalid: metadata.resourceVersion: Invalid "
            "value: 0x0: must be specified for an update");
}

TEST_F(StoreTest, GenerationBumpsOnlyOnSpecChangesAndStatusIsASubresource) {
  install_crd();
  json job = a_job("j");
  job["status"] = {{"phase", "Done"}};
  json created = must(store.create(dtj("default"), job), 201);
  EXPECT_FALSE(created.contains("status")) << "create ignores status with a status subresource";
  EXPECT_EQ(created["metadata"]["generation"], 1);

  json labels = created;
  labels["metadata"]["labels"] = {{"a", "b"}};
  json after_labels = must(store.update(dtj("default", "j"), labels));
  EXPECT_EQ(after_labels["metadata"]["generation"], 1);

  json status = after_labels;
  status["status"] = {{"phase", "Running"}};
  status["spec"]["target"]["loss"] = 0.01;  // ignored by /status
  json after_status = must(store.update(dtj("default", "j", "status"), status));
  EXPECT_EQ(after_status["status"]["phase"], "Running");
  EXPECT_EQ(after_status["spec"]["target"]["loss"], 0.3);
  EXPECT_EQ(after_status["metadata"]["generation"], 1);

  json spec = after_status;
  spec["spec"]["target"]["loss"] = 0.2;
  spec["status"]["phase"] = "Ignored";  // main endpoint ignores status
  json after_spec = must(store.update(dtj("default", "j"), spec));
  EXPECT_EQ(after_spec["metadata"]["generation"], 2);
  EXPECT_EQ(after_spec["status"]["phase"], "Running");
}

TEST_F(StoreTest, CrdRegistersTypesAndSetsConditions) {
  EXPECT_FALSE(store.find_type("depl.dev", "v1alpha1", "dependabletrainingjobs"));
  auto generation = store.registry_generation();
  install_crd();
  auto type = store.find_type("depl.dev", "v1alpha1", "dependabletrainingjobs");
  ASSERT_TRUE(type);
  EXPECT_TRUE(type->custom);
  EXPECT_TRUE(type->namespaced);
  EXPECT_TRUE(type->has_status_subresource);
  EXPECT_EQ(type->short_names, std::vector<std::string>{"dtj"});
  EXPECT_EQ(type->kind, "DependableTrainingJob");
  EXPECT_FALSE(type->printer_columns.empty());
  EXPECT_GT(store.registry_generation(), generation);
  json crd = must(store.get(crds("dependabletrainingjobs.depl.dev")));
  std::map<std::string, std::string> conditions;
  for (const auto& c : crd["status"]["conditions"]) conditions[c["type"]] = c["status"];
  EXPECT_EQ(conditions["Established"], "True");
  EXPECT_EQ(conditions["NamesAccepted"], "True");
  EXPECT_EQ(crd["status"]["acceptedNames"]["kind"], "DependableTrainingJob");

  must(store.create(dtj("default"), a_job("j")), 201);
  must(store.remove(crds("dependabletrainingjobs.depl.dev")));
  EXPECT_FALSE(store.find_type("depl.dev", "v1alpha1", "dependabletrainingjobs"));
  EXPECT_EQ(store.get(crds("dependabletrainingjobs.depl.dev")).code, 404);
  install_crd();
  EXPECT_TRUE(must(store.list(dtj("default")))["items"].empty()) << "objects went with the CRD";
}

TEST_F(StoreTest, InvalidCrdIsRejected) {
  json crd = dtj_crd();
  crd["metadata"]["name"] = "wrong.depl.dev";
  ApiResult r = store.create(crds(), crd);
  EXPECT_EQ(r.code, 422);
  EXPECT_EQ(r.body["details"]["causes"][0]["field"], "metadata.name");
}

TEST_F(StoreTest, CustomResourceValidationErrorsUseTheStatusFormat) {
  install_crd();
  json job = a_job("x");
  job["spec"]["target"]["probability"] = 1.5;
  ApiResult r = store.create(dtj("default"), job);
  EXPECT_EQ(r.code, 422);
  EXPECT_EQ(r.body["kind"], "Status");
  EXPECT_EQ(r.body["reason"], "Invalid");
  EXPECT_EQ(r.body["message"],
            "DependableTrainingJob.depl.dev \"x\" is invalid: spec.target.probability: Invalid "
            "value: 1.5: spec.target.probability in body should be less than or equal to 0.9999");
  EXPECT_EQ(r.body["details"]["name"], "x");
  EXPECT_EQ(r.body["details"]["group"], "depl.dev");
  EXPECT_EQ(r.body["details"]["kind"], "DependableTrainingJob");
  EXPECT_EQ(r.body["details"]["causes"][0]["field"], "spec.target.probability");
}

TEST_F(StoreTest, CustomResourcesAreDefaultedAndPruned) {
  install_crd();
  json job = a_job("j");
  job["spec"]["bogus"] = 1;
  ApiResult r = store.create(dtj("default"), job);
  ASSERT_EQ(r.code, 201) << r.body.dump();
  EXPECT_EQ(r.body["spec"]["target"]["probability"], 0.9);
  EXPECT_FALSE(r.body["spec"].contains("bogus"));
  EXPECT_EQ(r.warnings, std::vector<std::string>{"unknown field \"spec.bogus\""});
  json unknown = a_job("k");
  unknown["spec"]["bogus"] = 1;
  ApiResult strict = store.create(dtj("default"), unknown, {.field_validation = "Strict"});
  EXPECT_EQ(strict.code, 400);
  EXPECT_EQ(strict.body["message"], "strict decoding error: unknown field \"spec.bogus\"");
}

TEST_F(StoreTest, MergeJsonAndStrategicPatches) {
  must(store.create(core("pods", "default"), a_pod("p", {{"app", "a"}})), 201);
  json merged = must(store.patch(core("pods", "default", "p"), PatchType::Merge,
                                 R"({"metadata":{"labels":{"app":null,"tier":"x"}}})"));
  EXPECT_EQ(merged["metadata"]["labels"], json({{"tier", "x"}}));
  json patched =
      must(store.patch(core("pods", "default", "p"), PatchType::Json,
                       R"([{"op":"add","path":"/metadata/annotations","value":{"k":"v"}}])"));
  EXPECT_EQ(patched["metadata"]["annotations"]["k"], "v");
  // Containers merge by name: the patch changes main's image (the one change of a pod's
  // containers kube-apiserver allows) and keeps its other fields.
  json smp = must(store.patch(core("pods", "default", "p"), PatchType::Strategic,
                              R"({"spec":{"containers":[{"name":"main","image":"busybox:2"}]}})"));
  ASSERT_EQ(smp["spec"]["containers"].size(), 1u);
  EXPECT_EQ(smp["spec"]["containers"][0]["image"], "busybox:2");
  EXPECT_EQ(smp["spec"]["containers"][0]["terminationMessagePath"], "/dev/termination-log");
  ApiResult stale = store.patch(core("pods", "default", "p"), PatchType::Merge,
                                R"({"metadata":{"resourceVersion":"1"}})");
  EXPECT_EQ(stale.code, 409);
  EXPECT_EQ(store.patch(core("pods", "default", "nope"), PatchType::Merge, "{}").code, 404);
  EXPECT_EQ(store.patch(core("pods", "default", "p"), PatchType::Merge, "{not json").code, 400);
}

TEST_F(StoreTest, StrategicPatchIsRefusedForCustomResources) {
  install_crd();
  must(store.create(dtj("default"), a_job("j")), 201);
  EXPECT_EQ(store.patch(dtj("default", "j"), PatchType::Strategic, "{}").code, 415);
  json status = must(store.patch(dtj("default", "j", "status"), PatchType::Merge,
                                 R"({"status":{"phase":"Pending"},"spec":{"target":{"loss":9}}})"));
  EXPECT_EQ(status["status"]["phase"], "Pending");
  EXPECT_EQ(status["spec"]["target"]["loss"], 0.3);
}

TEST_F(StoreTest, ListWithSelectorsAndPages) {
  for (int i = 0; i < 5; ++i) {
    json pod = a_pod("p" + std::to_string(i), {{"even", i % 2 == 0 ? "yes" : "no"}});
    pod["spec"]["nodeName"] = i < 2 ? "n1" : "n2";
    must(store.create(core("pods", "default"), pod), 201);
  }
  EXPECT_EQ(
      must(store.list(core("pods", "default"), {.label_selector = "even=yes"}))["items"].size(),
      3u);
  EXPECT_EQ(must(store.list(core("pods"), {.field_selector = "spec.nodeName=n1"}))["items"].size(),
            2u);
  EXPECT_EQ(must(store.list(core("pods", "kube-system")))["items"].size(), 0u);
  EXPECT_EQ(store.list(core("pods"), {.field_selector = "spec.bogus=1"}).code, 400);
  EXPECT_EQ(store.list(core("pods"), {.label_selector = "a in (b"}).code, 400);

  json page1 = must(store.list(core("pods", "default"), {.limit = 2}));
  ASSERT_EQ(page1["items"].size(), 2u);
  EXPECT_EQ(page1["metadata"]["remainingItemCount"], 3);
  std::string token = page1["metadata"]["continue"];
  must(store.create(core("pods", "default"), a_pod("p9")), 201);
  json page2 = must(store.list(core("pods", "default"), {.limit = 10, .continue_token = token}));
  EXPECT_EQ(page2["items"].size(), 4u);
  EXPECT_EQ(page2["items"][0]["metadata"]["name"], "p2");
  EXPECT_EQ(page2["metadata"]["resourceVersion"], page1["metadata"]["resourceVersion"]);
  EXPECT_FALSE(page2["metadata"].contains("continue"));
  store.compact();
  EXPECT_EQ(store.list(core("pods", "default"), {.limit = 1, .continue_token = token}).code, 410);
  EXPECT_EQ(store.list(core("pods"), {.continue_token = "garbage!"}).code, 400);
}

TEST_F(StoreTest, EventsAreServedByBothGroups) {
  json event = json::parse(R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"},
      "involvedObject":{"kind":"Pod","name":"p","namespace":"default","uid":"u1"},
      "reason":"Started","message":"hello","type":"Normal","count":3})");
  must(store.create(core("events", "default"), event), 201);
  ResourceRef v1{"events.k8s.io", "v1", "events", "default", "e1", ""};
  json seen = must(store.get(v1));
  EXPECT_EQ(seen["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(seen["regarding"]["name"], "p");
  EXPECT_EQ(seen["note"], "hello");
  EXPECT_EQ(seen["deprecatedCount"], 3);
  v1.name.clear();
  EXPECT_EQ(must(store.list(v1, {.field_selector = "regarding.name=p"}))["items"].size(), 1u);
  EXPECT_EQ(
      must(store.list(core("events", "default"),
                      {.field_selector = "involvedObject.uid=u1,involvedObject.kind=Pod"}))["items"]
          .size(),
      1u);
  json created =
      json::parse(R"({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e2"},
      "eventTime":"2026-01-01T00:00:00.000000Z","regarding":{"kind":"Pod","name":"q"},"note":"n",
      "reason":"R","type":"Warning","action":"A","reportingController":"c","reportingInstance":"i"})");
  must(store.create(v1, created), 201);
  json as_core = must(store.get(core("events", "default", "e2")));
  EXPECT_EQ(as_core["involvedObject"]["name"], "q");
  EXPECT_EQ(as_core["message"], "n");
  EXPECT_EQ(as_core["reportingComponent"], "c");
}

TEST_F(StoreTest, SecretsStringDataBecomesData) {
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "s"}}},
                 {"stringData", {{"token", "abc"}}}};
  json created = must(store.create(core("secrets", "default"), secret), 201);
  EXPECT_EQ(created["data"]["token"], "YWJj");
  EXPECT_EQ(created["type"], "Opaque");
  EXPECT_FALSE(created.contains("stringData"));
}

TEST_F(StoreTest, WriteRecorderSeesWhoWroteAndWhen) {
  std::vector<WriteRecord> records;
  store.set_write_recorder([&](const WriteRecord& r) { records.push_back(r); });
  const auto before = std::chrono::steady_clock::now();
  must(store.create(core("configmaps", "default"),
                    {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}}}},
                    {.user_agent = "depl-controller/0.1 (linux)"}),
       201);
  must(store.remove(core("configmaps", "default", "c"), {.user_agent = "kubectl/v1.32"}));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].verb, "create");
  EXPECT_EQ(records[0].field_manager, "depl-controller");
  EXPECT_EQ(records[0].name, "c");
  EXPECT_EQ(records[1].verb, "delete");
  EXPECT_EQ(records[1].user_agent, "kubectl/v1.32");
  // Stamped when the store applied each write, in the order it applied them.
  EXPECT_GE(records[0].time, before);
  EXPECT_GE(records[1].time, records[0].time);
  EXPECT_LE(records[1].time, std::chrono::steady_clock::now());
}

}  // namespace
}  // namespace depl::devcluster
