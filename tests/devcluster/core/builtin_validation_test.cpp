// The dev cluster refuses the pods and Services kube-apiserver refuses, with its codes and field
// paths: a controller tested against it sees the answers a real cluster gives.
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace depl::devcluster::testing {
namespace {

json with_container(json pod, const json& fields) {
  for (const auto& [k, v] : fields.items()) pod["spec"]["containers"][0][k] = v;
  return pod;
}

// The fields of the 422's causes, in order.
std::vector<std::string> cause_fields(const ApiResult& r) {
  std::vector<std::string> out;
  for (const auto& c : r.body.value("/details/causes"_json_pointer, json::array()))
    out.push_back(c.value("field", ""));
  return out;
}

TEST_F(StoreTest, PodWithAValidSpecIsAccepted) {
  json pod = with_container(
      a_pod("ok"),
      {{"env", json::array({{{"name", "MY_VAR.x-1"}, {"value", "a=b"}}, {{"name", "_B"}}})},
       {"resources",
        {{"limits", {{"cpu", "2"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}}},
         {"requests", {{"cpu", "500m"}, {"memory", 1073741824}, {"nvidia.com/gpu", 1}}}}}});
  pod["spec"]["hostname"] = "ok-p0-w0";
  pod["spec"]["subdomain"] = "ok-p0";
  must(store.create(core("pods", "default"), pod), 201);
}

TEST_F(StoreTest, PodWithAQuantityThatIsNoneIsABadRequest) {
  ApiResult r =
      store.create(core("pods", "default"),
                   with_container(a_pod("p"), {{"resources", {{"limits", {{"memory", "lots"}}}}}}));
  EXPECT_EQ(r.code, 400);
  EXPECT_EQ(r.body["reason"], "BadRequest");
  EXPECT_EQ(r.body["message"],
            "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular "
            "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  EXPECT_EQ(store.get(core("pods", "default", "p")).code, 404);
}

TEST_F(StoreTest, PodWithInvalidResourcesNamesEachField) {
  ApiResult r = store.create(
      core("pods", "default"),
      with_container(a_pod("p"),
                     {{"resources",
                       {{"limits", {{"cpu", "1"}, {"gpu", "1"}, {"example.com/fpga", "500m"}}},
                        {"requests", {{"cpu", "2"}, {"memory", "-1Gi"}}}}}}));
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(r.body["reason"], "Invalid");
  EXPECT_EQ(cause_fields(r), (std::vector<std::string>{
                                 "spec.containers[0].resources.limits[example.com/fpga]",
                                 "spec.containers[0].resources.limits[gpu]",
                                 "spec.containers[0].resources.requests[memory]",
                                 "spec.containers[0].resources.requests",
                             }));
  const std::string message = r.body["message"];
  EXPECT_NE(message.find("Pod \"p\" is invalid: ["), std::string::npos) << message;
  EXPECT_NE(message.find("limits[example.com/fpga]: Invalid value: \"500m\": must be an integer"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("limits[gpu]: Invalid value: \"gpu\": must be a standard resource for "
                         "containers"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("requests[memory]: Invalid value: \"-1Gi\": must be greater than or "
                         "equal to 0"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("requests: Invalid value: \"2\": must be less than or equal to cpu limit "
                         "of 1"),
            std::string::npos)
      << message;
}

TEST_F(StoreTest, ExtendedResourcesCannotBeOvercommitted) {
  ApiResult unequal =
      store.create(core("pods", "default"),
                   with_container(a_pod("p"), {{"resources",
                                                {{"limits", {{"example.com/fpga", "2"}}},
                                                 {"requests", {{"example.com/fpga", "1"}}}}}}));
  ASSERT_EQ(unequal.code, 422) << unequal.body.dump();
  EXPECT_EQ(cause_fields(unequal),
            std::vector<std::string>{"spec.containers[0].resources.requests"});
  ApiResult no_limit = store.create(
      core("pods", "default"),
      with_container(a_pod("p"), {{"resources", {{"requests", {{"example.com/fpga", "1"}}}}}}));
  ASSERT_EQ(no_limit.code, 422) << no_limit.body.dump();
  EXPECT_EQ(cause_fields(no_limit),
            std::vector<std::string>{"spec.containers[0].resources.limits"});
}

TEST_F(StoreTest, PodWithInvalidEnvNamesNamesEachField) {
  ApiResult r = store.create(
      core("pods", "default"),
      with_container(a_pod("p"), {{"env", json::array({{{"name", "GOOD"}},
                                                       {{"name", "A=B"}, {"value", "x"}},
                                                       {{"name", ""}},
                                                       {{"name", "1ST"}}})}}));
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r), (std::vector<std::string>{"spec.containers[0].env[1].name",
                                                       "spec.containers[0].env[2].name",
                                                       "spec.containers[0].env[3].name"}));
  EXPECT_EQ(r.body["details"]["causes"][1]["reason"], "FieldValueRequired");
  EXPECT_NE(r.body["message"].get<std::string>().find(
                "env[1].name: Invalid value: \"A=B\": a valid environment variable name"),
            std::string::npos);
}

TEST_F(StoreTest, PodHostnameAndSubdomainAreDnsLabels) {
  json pod = a_pod("p");
  pod["spec"]["hostname"] = "dotted.job-p0-w0";
  pod["spec"]["subdomain"] = std::string(64, 'a');
  ApiResult r = store.create(core("pods", "default"), pod);
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r), (std::vector<std::string>{"spec.hostname", "spec.subdomain"}));
}

TEST_F(StoreTest, ServiceNamesAreDns1035Labels) {
  auto service = [](const std::string& name) {
    return json{{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata", {{"name", name}}},
                {"spec", {{"clusterIP", "None"}}}};
  };
  must(store.create(core("services", "default"), service("job-p0")), 201);
  for (const std::string& bad :
       std::vector<std::string>{"dotted.job-p0", "1job-p0", std::string(64, 'a')}) {
    ApiResult r = store.create(core("services", "default"), service(bad));
    ASSERT_EQ(r.code, 422) << bad << ": " << r.body.dump();
    EXPECT_EQ(cause_fields(r)[0], "metadata.name") << bad;
    EXPECT_NE(r.body["message"].get<std::string>().find("Service \"" + bad + "\" is invalid"),
              std::string::npos);
  }
}

TEST_F(StoreTest, UpdatesAreValidatedToo) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  json pod = must(store.get(core("pods", "default", "p")));
  pod["spec"]["containers"][0]["env"] = json::array({{{"name", "A=B"}}});
  EXPECT_EQ(store.update(core("pods", "default", "p"), pod).code, 422);
}

// kube-apiserver's ValidatePodUpdate: images, activeDeadlineSeconds, added tolerations and
// removed scheduling gates may change; the rest of the spec may not. (The store accepted all of it
// before: a merge patch replacing the containers was stored.)
TEST_F(StoreTest, PodSpecIsImmutableButForImagesDeadlinesTolerationsAndGates) {
  json pod = a_pod("p");
  pod["spec"]["containers"][0]["command"] = json::array({"sh", "-c", "sleep 9"});
  pod["spec"]["containers"][0]["env"] = json::array({{{"name", "A"}, {"value", "1"}}});
  pod["spec"]["schedulingGates"] = json::array({{{"name", "wait"}}});
  must(store.create(core("pods", "default"), pod), 201);
  const auto patch = [&](const std::string& body) {
    return store.patch(core("pods", "default", "p"), PatchType::Merge, body);
  };
  for (const std::string& refused : std::vector<std::string>{
           R"({"spec":{"containers":[{"name":"main","image":"busybox:2"}]}})",
           R"({"spec":{"restartPolicy":"Never"}})", R"({"spec":{"nodeName":"n1"}})"}) {
    ApiResult r = patch(refused);
    ASSERT_EQ(r.code, 422) << refused << ": " << r.body.dump();
    EXPECT_EQ(cause_fields(r), std::vector<std::string>{"spec"});
    EXPECT_EQ(r.body["message"].get<std::string>().rfind(
                  "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields "
                  "other than `spec.containers[*].image`",
                  0),
              0u)
        << r.body["message"];
  }
  json image = must(store.get(core("pods", "default", "p")));
  image["spec"]["containers"][0]["image"] = "busybox:2";
  must(store.update(core("pods", "default", "p"), image));
  must(patch(R"({"spec":{"activeDeadlineSeconds":60,"schedulingGates":null,)"
             R"("tolerations":[{"key":"k","operator":"Exists"}]}})"));
  EXPECT_EQ(patch(R"({"spec":{"activeDeadlineSeconds":120}})").code, 422);  // only lowered
  EXPECT_EQ(patch(R"({"spec":{"tolerations":[]}})").code, 422);             // only added
  // A PUT that leaves defaulted fields out changes nothing there.
  json bare = a_pod("p");
  bare["metadata"] = must(store.get(core("pods", "default", "p")))["metadata"];
  bare["spec"]["containers"][0]["image"] = "busybox:2";
  bare["spec"]["containers"][0]["command"] = json::array({"sh", "-c", "sleep 9"});
  bare["spec"]["containers"][0]["env"] = json::array({{{"name", "A"}, {"value", "1"}}});
  bare["spec"]["activeDeadlineSeconds"] = 60;
  bare["spec"]["tolerations"] = json::array({{{"key", "k"}, {"operator", "Exists"}}});
  must(store.update(core("pods", "default", "p"), bare));
  // Labels are metadata: always allowed; so is the status subresource.
  must(patch(R"({"metadata":{"labels":{"x":"y"}}})"));
  must(store.patch(core("pods", "default", "p", "status"), PatchType::Merge,
                   R"({"status":{"phase":"Running"}})"));
}

// A gated pod: created with PodScheduled=False/SchedulingGated (the pod registry's
// PrepareForCreate), its gates checked as validateSchedulingGates checks them, no node named while
// gated; afterwards gates only go (each added one named), and its nodeSelector only gains entries.
TEST_F(StoreTest, ScheduleGatesAreSetAtCreationAndOnlyRemovedAfter) {
  json pod = a_pod("p");
  pod["spec"]["schedulingGates"] =
      json::array({{{"name", "kueue.x-k8s.io/admission"}}, {{"name", "example.com/b"}}});
  pod["spec"]["nodeSelector"] = {{"depl.dev/pool", "a100"}};
  json created = must(store.create(core("pods", "default"), pod), 201);
  const json conditions = created["status"]["conditions"];
  ASSERT_EQ(conditions.size(), 1u) << created["status"].dump();
  EXPECT_EQ(conditions[0]["type"], "PodScheduled");
  EXPECT_EQ(conditions[0]["status"], "False");
  EXPECT_EQ(conditions[0]["reason"], "SchedulingGated");
  EXPECT_EQ(conditions[0]["message"], "Scheduling is blocked due to non-empty scheduling gates");
  EXPECT_EQ(conditions[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
  // An ungated pod has no such condition.
  EXPECT_FALSE(must(store.create(core("pods", "default"), a_pod("free")), 201)["status"].contains(
      "conditions"));

  const auto patch = [&](const std::string& body) {
    return store.patch(core("pods", "default", "p"), PatchType::Merge, body);
  };
  ApiResult added = patch(R"({"spec":{"schedulingGates":[{"name":"kueue.x-k8s.io/admission"},)"
                          R"({"name":"example.com/b"},{"name":"x"}]}})");
  ASSERT_EQ(added.code, 422) << added.body.dump();
  EXPECT_EQ(cause_fields(added), std::vector<std::string>{"spec.schedulingGates[2].name"});
  EXPECT_EQ(added.body["message"],
            "Pod \"p\" is invalid: spec.schedulingGates[2].name: Forbidden: only deletion is "
            "allowed, but found new scheduling gate 'x'");
  // Replacing one gate by another is an addition too.
  EXPECT_EQ(patch(R"({"spec":{"schedulingGates":[{"name":"y"}]}})").code, 422);

  // While gated, the nodeSelector may gain entries, not lose or change them.
  ApiResult changed = patch(R"({"spec":{"nodeSelector":{"depl.dev/pool":"t4"}}})");
  ASSERT_EQ(changed.code, 422) << changed.body.dump();
  EXPECT_EQ(cause_fields(changed), std::vector<std::string>{"spec.nodeSelector"});
  EXPECT_EQ(changed.body["message"],
            "Pod \"p\" is invalid: spec.nodeSelector: Invalid value: {\"depl.dev/pool\":\"t4\"}: "
            "only additions to spec.nodeSelector are allowed (no mutations or deletions)");
  EXPECT_EQ(patch(R"({"spec":{"nodeSelector":null}})").code, 422);
  must(patch(R"({"spec":{"nodeSelector":{"zone":"z1"}}})"));

  // Gates go one at a time, in any order; the condition stays until a scheduler acts.
  must(patch(R"({"spec":{"schedulingGates":[{"name":"example.com/b"}]}})"));
  json ungated = must(patch(R"({"spec":{"schedulingGates":null}})"));
  EXPECT_FALSE(ungated["spec"].contains("schedulingGates"));
  EXPECT_EQ(ungated["status"]["conditions"][0]["reason"], "SchedulingGated");
  // Once no gate is left, the nodeSelector is fixed again.
  EXPECT_EQ(patch(R"({"spec":{"nodeSelector":{"more":"x"}}})").code, 422);

  json bad = a_pod("bad");
  bad["spec"]["schedulingGates"] = json::array(
      {{{"name", "ok"}}, {{"name", "ok"}}, {{"name", "-no"}}, {{"name", "a/b/c"}}, {{"name", ""}}});
  ApiResult refused = store.create(core("pods", "default"), bad);
  ASSERT_EQ(refused.code, 422) << refused.body.dump();
  EXPECT_EQ(cause_fields(refused),
            (std::vector<std::string>{"spec.schedulingGates[1]", "spec.schedulingGates[2]",
                                      "spec.schedulingGates[3]", "spec.schedulingGates[4]"}));
  EXPECT_NE(refused.body["message"].get<std::string>().find(
                "spec.schedulingGates[1]: Duplicate value: \"ok\""),
            std::string::npos)
      << refused.body["message"];

  json bound = a_pod("bound");
  bound["spec"]["schedulingGates"] = json::array({{{"name", "wait"}}});
  bound["spec"]["nodeName"] = "a100-0";
  ApiResult named = store.create(core("pods", "default"), bound);
  ASSERT_EQ(named.code, 422) << named.body.dump();
  EXPECT_EQ(named.body["message"],
            "Pod \"bound\" is invalid: spec.nodeName: Forbidden: cannot be set until all "
            "schedulingGates have been cleared");
}

// With kueue_pod_webhook the store does what Kueue's pod webhook does to a pod on a queue, before
// the registry's defaults: the pod is created gated (and says so) and marked as Kueue's.
TEST(KueuePodWebhook, APodOnAQueueIsCreatedHeldByKueuesGate) {
  FixedClock clock;
  StoreOptions options{100, [&] { return clock.now; }, false, 7};
  options.kueue_pod_webhook = true;
  ApiStore store(options);
  const auto create = [&](const json& pod) {
    ApiResult r = store.create(core("pods", "default"), pod);
    EXPECT_EQ(r.code, 201) << r.body.dump();
    return r.body;
  };
  json queued = a_pod("queued", {{"kueue.x-k8s.io/queue-name", "team-a"}});
  queued["spec"]["schedulingGates"] = json::array({{{"name", "example.com/other"}}});
  const json held = create(queued);
  EXPECT_EQ(held["metadata"]["labels"]["kueue.x-k8s.io/managed"], "true");
  EXPECT_EQ(
      held["spec"]["schedulingGates"],
      (json::array({{{"name", "example.com/other"}}, {{"name", "kueue.x-k8s.io/admission"}}})));
  EXPECT_EQ(held["status"]["conditions"][0]["reason"], "SchedulingGated");
  // A pod on no queue is left alone.
  const json free = create(a_pod("free"));
  EXPECT_FALSE(free["spec"].contains("schedulingGates"));
  EXPECT_FALSE(free["metadata"]["labels"].contains("kueue.x-k8s.io/managed"));
  // Without the option, a pod on a queue is not gated either (no Kueue in that cluster).
  ApiStore plain(StoreOptions{100, [&] { return clock.now; }, false, 7});
  ApiResult r =
      plain.create(core("pods", "default"), a_pod("q", {{"kueue.x-k8s.io/queue-name", "team-a"}}));
  ASSERT_EQ(r.code, 201);
  EXPECT_FALSE(r.body["spec"].contains("schedulingGates"));
}

TEST_F(StoreTest, ServicePortsProtocolsTypesAndClusterIpAreChecked) {
  auto service = [](const json& spec) {
    return json{
        {"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", "s"}}}, {"spec", spec}};
  };
  ApiResult r = store.create(core("services", "default"), service({{"type", "Magic"}}));
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r), (std::vector<std::string>{"spec.type", "spec.ports"}));
  r = store.create(
      core("services", "default"),
      service({{"ports", json::array({{{"port", 80}},
                                      {{"name", "a"}, {"port", 70000}},
                                      {{"name", "a"}, {"port", 81}, {"protocol", "ICMP"}}})}}));
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r),
            (std::vector<std::string>{"spec.ports[0].name", "spec.ports[1].port",
                                      "spec.ports[1].targetPort",  // defaulted to the port
                                      "spec.ports[2].name", "spec.ports[2].protocol"}));
  json made = must(store.create(core("services", "default"),
                                service({{"ports", json::array({{{"port", 80}}})}})),
                   201);
  made["spec"]["clusterIP"] = "10.96.9.9";
  r = store.update(core("services", "default", "s"), made);
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r), std::vector<std::string>{"spec.clusterIP"});
}

TEST_F(StoreTest, SecretAndConfigMapKeysSizesTypesAndImmutability) {
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "s"}}},
                 {"type", "kubernetes.io/tls"},
                 {"stringData", {{"bad key", "x"}}}};
  ApiResult r = store.create(core("secrets", "default"), secret);
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r),
            (std::vector<std::string>{"data[bad key]", "data[tls.crt]", "data[tls.key]"}));
  secret = {{"apiVersion", "v1"},
            {"kind", "Secret"},
            {"metadata", {{"name", "s"}}},
            {"immutable", true},
            {"stringData", {{"token", "x"}}}};
  json made = must(store.create(core("secrets", "default"), secret), 201);
  made["data"]["token"] = "eQ==";
  made["type"] = "Other";
  r = store.update(core("secrets", "default", "s"), made);
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r), (std::vector<std::string>{"type", "data"}));
  json big = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", "c"}}},
              {"data", {{"k", std::string(1048577, 'x')}}}};
  r = store.create(core("configmaps", "default"), big);
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r), std::vector<std::string>{"data"});
}

TEST_F(StoreTest, LeasesAndEventsAreValidated) {
  const ResourceRef leases{"coordination.k8s.io", "v1", "leases", "default", "", ""};
  ApiResult r =
      store.create(leases, json::parse(R"({"metadata":{"name":"l"},"spec":{"leaseDurationSeconds":0,
        "leaseTransitions":-1,"preferredHolder":"me"}})"));
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r),
            (std::vector<std::string>{"spec.leaseDurationSeconds", "spec.leaseTransitions",
                                      "spec.preferredHolder"}));
  must(store.create(leases, json::parse(R"({"metadata":{"name":"ok"},"spec":{
        "holderIdentity":"me","leaseDurationSeconds":15}})")),
       201);
  r = store.create(core("events", "default"), json::parse(R"({"metadata":{"name":"e"},"type":"Loud",
        "involvedObject":{"kind":"Pod","namespace":"other","name":"p"}})"));
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r), (std::vector<std::string>{"involvedObject.namespace", "type"}));
  r = store.create({"events.k8s.io", "v1", "events", "default", "", ""},
                   json::parse(R"({"metadata":{"name":"e2"},"type":"Normal",
        "regarding":{"kind":"Pod","namespace":"default","name":"p"}})"));
  ASSERT_EQ(r.code, 422) << r.body.dump();
  EXPECT_EQ(cause_fields(r), (std::vector<std::string>{"eventTime", "reportingController",
                                                       "reportingInstance", "action", "reason"}));
}

// Built-in kinds are decoded into their types, as kube-apiserver decodes them: unknown fields are
// refused with fieldValidation=Strict, dropped with a warning by default, dropped silently with
// Ignore. (The store kept `spec.containerz` before, even under Strict.)
TEST_F(StoreTest, UnknownFieldsOfBuiltInKindsFollowFieldValidation) {
  json pod = a_pod("p");
  pod["spec"]["containerz"] = json::array();
  pod["spec"]["containers"][0]["imagez"] = "x";
  pod["status"] = {{"anything", "goes"}};  // a subtree the schema does not check
  ApiResult strict = store.create(core("pods", "default"), pod, {.field_validation = "Strict"});
  ASSERT_EQ(strict.code, 400) << strict.body.dump();
  EXPECT_EQ(strict.body["message"],
            "strict decoding error: unknown field \"spec.containers[0].imagez\", unknown field "
            "\"spec.containerz\"");
  ApiResult duplicate =
      store.create(core("pods", "default"), a_pod("d"),
                   {.field_validation = "Strict", .duplicate_fields = {"metadata.name"}});
  EXPECT_EQ(duplicate.code, 400);
  EXPECT_EQ(duplicate.body["message"], "strict decoding error: duplicate field \"metadata.name\"");
  ApiResult warned = store.create(core("pods", "default"), pod);
  ASSERT_EQ(warned.code, 201) << warned.body.dump();
  EXPECT_EQ(warned.warnings,
            (std::vector<std::string>{"unknown field \"spec.containers[0].imagez\"",
                                      "unknown field \"spec.containerz\""}));
  EXPECT_FALSE(warned.body["spec"].contains("containerz"));
  EXPECT_FALSE(warned.body["spec"]["containers"][0].contains("imagez"));
  pod["metadata"]["name"] = "q";
  ApiResult ignored = store.create(core("pods", "default"), pod, {.field_validation = "Ignore"});
  ASSERT_EQ(ignored.code, 201);
  EXPECT_TRUE(ignored.warnings.empty());
}

}  // namespace
}  // namespace depl::devcluster::testing
