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

}  // namespace
}  // namespace depl::devcluster::testing
