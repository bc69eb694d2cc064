// validate_worker_fields: each field the pod builder copies into worker Pods, each rule, and the
// path of the job's field in every message.
#include "depl/controller/worker_spec_validation.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace depl::controller {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// A job whose operator-only fields are all set, and valid.
json valid_job() {
  return json{
      {"apiVersion", "depl.dev/v1alpha1"},
      {"kind", "DependableTrainingJob"},
      {"metadata", {{"name", "mnist"}, {"namespace", "ml"}}},
      {"spec",
       {{"datasets", json::array({{{"name", "a"}, {"source", {{"pvc", "data-a"}}}},
                                  {{"name", "b"}, {"source", {{"uri", "s3://b"}}}}})},
        {"models",
         json::array({{{"name", "full"},
                       {"image", "registry/full:1"},
                       {"resources",
                        {{"limits", {{"cpu", "2"}, {"memory", "8Gi"}, {"example.com/fpga", 1}}},
                         {"requests", {{"cpu", "500m"}, {"memory", 4294967296.0}}}}},
                       {"env", json::array({{{"name", "DEPL_SEED"}, {"value", "1"}},
                                            {{"name", "my.setting-x_1"}, {"value", "a=b"}},
                                            {{"name", "EMPTY"}}})}}})},
        {"checkpoint", {{"pvc", "ckpt"}, {"path", "/ckpt/"}}},
        {"podTemplate",
         {{"serviceAccountName", "trainer"},
          {"nodeSelector", {{"topology.kubernetes.io/zone", "z1"}, {"spot", ""}}},
          {"tolerations",
           json::array(
               {{{"key", "spot"}, {"operator", "Exists"}},
                {{"key", "example.com/dedicated"}, {"value", "ml"}, {"effect", "NoSchedule"}},
                {{"operator", "Exists"},
                 {"effect", "NoExecute"},
                 {"tolerationSeconds", 60}}})}}}}}};
}

json& model(json& job) {
  return job["spec"]["models"][0];
}

TEST(WorkerSpecValidation, AcceptsValidFieldsAndJobsWithoutThem) {
  EXPECT_THAT(validate_worker_fields(valid_job()), IsEmpty());
  json bare = valid_job();
  for (const char* key : {"checkpoint", "podTemplate", "datasets"}) bare["spec"].erase(key);
  model(bare).erase("resources");
  model(bare).erase("env");
  EXPECT_THAT(validate_worker_fields(bare), IsEmpty());
  // The shape of the rest is the solver's to report.
  EXPECT_THAT(validate_worker_fields(json{{"spec", {{"models", 3}}}}), IsEmpty());
  EXPECT_THAT(validate_worker_fields(json::array()), IsEmpty());
}

// The job's name begins its Services' and pods' names, which the API server holds to stricter
// rules than the job's own.
TEST(WorkerSpecValidation, JobNameMustMakeValidServiceAndPodNames) {
  auto problems_for = [](const std::string& name) {
    json job = valid_job();
    job["metadata"]["name"] = name;
    return validate_worker_fields(job);
  };
  const std::string longest(57, 'a');  // "<57>-p0-w0" is 63
  for (const std::string& fine : {std::string("a"), std::string("mnist-2"), longest}) {
    EXPECT_THAT(problems_for(fine), IsEmpty()) << fine;
  }
  for (const std::string& bad :
       {std::string("1mnist"), std::string("mnist.v2"), std::string("Mnist"), std::string("mnist-"),
        std::string("-mnist")}) {
    EXPECT_THAT(problems_for(bad),
                ElementsAre(AllOf(StartsWith("metadata.name: must start with a lowercase letter"),
                                  HasSubstr(json(bad).dump()))))
        << bad;
  }
  EXPECT_THAT(problems_for(longest + "a"),
              ElementsAre("metadata.name: must be at most 57 characters: the job's worker pods are "
                          "named <name>-p<phase>-w<rank>, at most 63; got 58 characters; create "
                          "the job under another name"));
  // No name (generateName, a spec checked on its own) is not this check's to judge.
  json unnamed = valid_job();
  unnamed["metadata"].erase("name");
  EXPECT_THAT(validate_worker_fields(unnamed), IsEmpty());
}

TEST(WorkerSpecValidation, ResourceQuantitiesMustParseAndNotBeNegative) {
  json job = valid_job();
  model(job)["resources"]["limits"]["memory"] = "lots";
  model(job)["resources"]["requests"]["cpu"] = "-1";
  model(job)["resources"]["limits"]["ephemeral-storage"] = true;
  EXPECT_THAT(
      validate_worker_fields(job),
      ElementsAre("spec.models[0].resources.limits.ephemeral-storage: must be a quantity such as "
                  "500m or 4Gi, got true",
                  "spec.models[0].resources.limits.memory: must be a quantity such as 10Gi or "
                  "1.5G, got \"lots\"",
                  "spec.models[0].resources.requests.cpu: must be >= 0, got \"-1\""));
}

TEST(WorkerSpecValidation, ResourceNamesMustBeContainerResources) {
  json job = valid_job();
  model(job)["resources"]["limits"] = {{"gpu", "1"}, {"Bad Name/x", "1"}, {"hugepages-2Mi", "2Mi"}};
  EXPECT_THAT(validate_worker_fields(job),
              ElementsAre(StartsWith("spec.models[0].resources.limits[Bad Name/x]: is not a valid "
                                     "resource name"),
                          StartsWith("spec.models[0].resources.limits.gpu: is not a container "
                                     "resource: use cpu, memory")));
}

TEST(WorkerSpecValidation, GpusAreTheOperatorsToSet) {
  json job = valid_job();
  model(job)["resources"]["requests"]["nvidia.com/gpu"] = "2";
  EXPECT_THAT(validate_worker_fields(job),
              ElementsAre("spec.models[0].resources.requests[nvidia.com/gpu]: is set by the "
                          "operator from the model's gpusPerWorker; remove it"));
}

TEST(WorkerSpecValidation, RequestsMayNotExceedLimits) {
  json job = valid_job();
  model(job)["resources"]["requests"]["memory"] = "9Gi";
  EXPECT_THAT(validate_worker_fields(job),
              ElementsAre("spec.models[0].resources.requests.memory: must be <= the limit "
                          "(\"8Gi\"), got \"9Gi\""));
}

TEST(WorkerSpecValidation, ResourcesHoldOnlyLimitsAndRequestsMappings) {
  json job = valid_job();
  model(job)["resources"] = {{"limits", "lots"}, {"claims", json::array()}};
  EXPECT_THAT(
      validate_worker_fields(job),
      ElementsAre("spec.models[0].resources.claims: unknown field (allowed: limits, requests)",
                  "spec.models[0].resources.limits: must be a mapping of resource names to "
                  "quantities, got \"lots\""));
  model(job)["resources"] = json::array();
  EXPECT_THAT(validate_worker_fields(job),
              ElementsAre(HasSubstr("spec.models[0].resources: must be a mapping")));
}

TEST(WorkerSpecValidation, EnvNamesMustBeValidUniqueAndNotTheContracts) {
  json job = valid_job();
  model(job)["env"] = json::array({{{"name", "A=B"}, {"value", "1"}},
                                   {{"name", ""}},
                                   {{"name", "1ST"}},
                                   {{"name", "RANK"}, {"value", "0"}},
                                   {{"name", "DEPL_PROGRESS_URL"}, {"value", "http://evil"}},
                                   {{"name", "DEPL_SEED"}, {"value", "1"}},
                                   {{"name", "DEPL_SEED"}, {"value", "2"}},
                                   {{"value", "orphan"}},
                                   {{"name", 7}},
                                   {{"name", "X"}, {"value", 3}, {"valueFrom", json::object()}}});
  EXPECT_THAT(
      validate_worker_fields(job),
      ElementsAre(
          StartsWith("spec.models[0].env[0].name: \"A=B\" is not a valid environment variable "
                     "name"),
          "spec.models[0].env[1].name: must not be empty",
          StartsWith("spec.models[0].env[2].name: \"1ST\" is not a valid environment variable "
                     "name"),
          StartsWith("spec.models[0].env[3].name: \"RANK\" is set by the operator"),
          StartsWith("spec.models[0].env[4].name: \"DEPL_PROGRESS_URL\" is set by the operator"),
          "spec.models[0].env[6].name: \"DEPL_SEED\" is already set by spec.models[0].env[5]",
          "spec.models[0].env[7].name: is required",
          "spec.models[0].env[8].name: must be a string, got 7",
          "spec.models[0].env[9].valueFrom: unknown field (allowed: name, value)",
          "spec.models[0].env[9].value: must be a string, got 3"));
  model(job)["env"] = json::object();
  EXPECT_THAT(validate_worker_fields(job),
              ElementsAre(StartsWith("spec.models[0].env: must be a list")));
}

TEST(WorkerSpecValidation, ImageHasNoSurroundingWhitespace) {
  json job = valid_job();
  model(job)["image"] = "registry/full:1 ";
  EXPECT_THAT(validate_worker_fields(job),
              ElementsAre("spec.models[0].image: must not have leading or trailing whitespace"));
}

TEST(WorkerSpecValidation, NamesTheModelByIndex) {
  json job = valid_job();
  job["spec"]["models"].push_back(model(job));
  job["spec"]["models"][1]["env"][0]["name"] = "WORLD_SIZE";
  EXPECT_THAT(validate_worker_fields(job),
              ElementsAre(StartsWith("spec.models[1].env[0].name: \"WORLD_SIZE\"")));
}

TEST(WorkerSpecValidation, PodTemplateFields) {
  json job = valid_job();
  json& pt = job["spec"]["podTemplate"];
  pt["serviceAccountName"] = "My_SA";
  pt["nodeSelector"] = {{"bad key!", "x"}, {"zone", "not valid!"}, {"n", 3}};
  pt["tolerations"] =
      json::array({{{"key", "a"}, {"operator", "In"}},
                   {{"key", "b"}, {"operator", "Exists"}, {"value", "v"}},
                   {{"operator", "Equal"}, {"value", "v"}},
                   {{"key", "c"}, {"effect", "NoRun"}},
                   {{"key", "d"}, {"effect", "NoSchedule"}, {"tolerationSeconds", 5}},
                   {{"key", "e"}, {"tolerationSeconds", 1.5}},
                   "spot"});
  pt["affinity"] = json::object();
  EXPECT_THAT(
      validate_worker_fields(job),
      ElementsAre(
          "spec.podTemplate.affinity: unknown field (allowed: serviceAccountName, nodeSelector, "
          "tolerations)",
          StartsWith("spec.podTemplate.serviceAccountName: \"My_SA\" is not a valid "
                     "ServiceAccount name"),
          StartsWith("spec.podTemplate.nodeSelector[bad key!]: is not a valid label key"),
          "spec.podTemplate.nodeSelector.n: must be a string, got 3",
          StartsWith("spec.podTemplate.nodeSelector.zone: \"not valid!\" is not a valid label "
                     "value"),
          "spec.podTemplate.tolerations[0].operator: must be Exists or Equal, got \"In\"",
          "spec.podTemplate.tolerations[1].value: must be empty when operator is Exists",
          "spec.podTemplate.tolerations[2].operator: must be Exists when key is empty (to "
          "tolerate every taint)",
          "spec.podTemplate.tolerations[3].effect: must be NoSchedule, PreferNoSchedule or "
          "NoExecute, got \"NoRun\"",
          "spec.podTemplate.tolerations[4].tolerationSeconds: may only be set when effect is "
          "NoExecute",
          "spec.podTemplate.tolerations[5].tolerationSeconds: must be a whole number of seconds, "
          "got 1.5",
          "spec.podTemplate.tolerations[6]: must be a mapping, got \"spot\""));
}

TEST(WorkerSpecValidation, VolumeClaimsAndCheckpointPath) {
  json job = valid_job();
  job["spec"]["datasets"][0]["source"]["pvc"] = "";
  job["spec"]["datasets"][1]["source"]["pvc"] = "Data_B";
  job["spec"]["checkpoint"] = {{"pvc", "ckpt"}, {"path", "checkpoints"}};
  EXPECT_THAT(
      validate_worker_fields(job),
      ElementsAre(StartsWith("spec.datasets[0].source.pvc: \"\" is not a PersistentVolumeClaim "
                             "name"),
                  StartsWith("spec.datasets[1].source.pvc: \"Data_B\" is not a "
                             "PersistentVolumeClaim name"),
                  "spec.checkpoint.path: must be an absolute path, got \"checkpoints\""));
  // The checkpoint volume may not be mounted where a dataset is.
  job = valid_job();
  job["spec"]["checkpoint"]["path"] = "/data/a/";
  EXPECT_THAT(validate_worker_fields(job),
              ElementsAre("spec.checkpoint.path: \"/data/a/\" is where spec.datasets[0] is "
                          "mounted; choose another path"));
  job["spec"]["checkpoint"].erase("pvc");  // no volume, nothing mounted there
  EXPECT_THAT(validate_worker_fields(job), IsEmpty());
}

}  // namespace
}  // namespace depl::controller
