// Defaulting, pruning and validation of custom resources against the project's real CRD schema.
#include "depl/devcluster/structural_schema.hpp"

#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using namespace testing;

json schema() {
  return dtj_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

std::string messages(const std::vector<FieldError>& errors) {
  std::string out;
  for (const auto& e : errors) out += e.field + ": " + e.message + "\n";
  return out;
}

TEST(StructuralSchema, ValidJobHasNoErrorsAndGetsDefaults) {
  json job = a_job("j");
  apply_schema_defaults(job, schema());
  EXPECT_EQ(job["spec"]["target"]["probability"], 0.9);
  EXPECT_EQ(job["spec"]["target"]["guarantee"], "Gaussian");
  EXPECT_EQ(job["spec"]["datasets"][0]["quality"], 1);
  EXPECT_EQ(job["spec"]["models"][0]["gpusPerWorker"], 1);
  EXPECT_TRUE(validate_against_schema(job, schema()).empty())
      << messages(validate_against_schema(job, schema()));
}

TEST(StructuralSchema, MaximumMessageMirrorsTheApiserver) {
  json job = a_job("j");
  job["spec"]["target"]["probability"] = 1.5;
  auto errors = validate_against_schema(job, schema());
  ASSERT_EQ(errors.size(), 1u) << messages(errors);
  EXPECT_EQ(errors[0].field, "spec.target.probability");
  EXPECT_EQ(errors[0].message,
            "Invalid value: 1.5: spec.target.probability in body should be less than or equal "
            "to 0.9999");
}

TEST(StructuralSchema, RequiredEnumTypeMinItemsAndExclusiveBounds) {
  json job = a_job("j");
  job["spec"]["target"].erase("loss");
  job["spec"]["target"]["guarantee"] = "Magic";
  job["spec"]["datasets"] = json::array();
  job["spec"]["models"][0]["computePerSampleGflop"] = 0;
  job["spec"]["models"][0]["gpusPerWorker"] = "two";
  auto errors = validate_against_schema(job, schema());
  std::string all = messages(errors);
  EXPECT_NE(all.find("spec.target.loss: Required value"), std::string::npos) << all;
  EXPECT_NE(all.find("spec.target.guarantee: Unsupported value: \"Magic\": supported values: "
                     "\"Gaussian\", \"DistributionFree\""),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("spec.datasets: Invalid value: \"array\": spec.datasets in body should have "
                     "at least 1 items"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("spec.models[0].computePerSampleGflop in body should be greater than 0"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("spec.models[0].gpusPerWorker in body must be of type integer: \"string\""),
            std::string::npos)
      << all;
}

TEST(StructuralSchema, IntOrStringPatternLengthsAndNullable) {
  json s = json::parse(R"({"type":"object","properties":{
      "q":{"x-kubernetes-int-or-string":true},
      "name":{"type":"string","pattern":"^[a-z]+$","maxLength":4,"minLength":2},
      "n":{"type":"string","nullable":true},
      "list":{"type":"array","maxItems":1,"items":{"type":"integer"}}}})");
  EXPECT_TRUE(
      validate_against_schema(json::parse(R"({"q":"2Gi","name":"ab","n":null})"), s).empty());
  EXPECT_TRUE(validate_against_schema(json::parse(R"({"q":3})"), s).empty());
  auto errors = validate_against_schema(json::parse(R"({"q":1.5,"name":"ABCDE","list":[1,2]})"), s);
  std::string all = messages(errors);
  EXPECT_NE(all.find("q: Invalid value: 1.5: q in body must be of type integer,string"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("name in body should match '^[a-z]+$'"), std::string::npos) << all;
  EXPECT_NE(all.find("name: Too long: may not be longer than 4"), std::string::npos) << all;
  EXPECT_NE(all.find("list: Too many: 2: must have at most 1 items"), std::string::npos) << all;
}

TEST(StructuralSchema, PrunesUnknownFieldsUnlessPreserved) {
  json s = json::parse(R"({"type":"object","properties":{
      "spec":{"type":"object","properties":{"a":{"type":"integer"},
              "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
              "labels":{"type":"object","additionalProperties":{"type":"string"}}}}}})");
  json obj = json::parse(R"({"apiVersion":"x/v1","kind":"K","metadata":{"name":"n","anything":1},
      "spec":{"a":1,"b":2,"free":{"x":{"y":1}},"labels":{"k":"v"}},"extra":true})");
  auto removed = prune_unknown_fields(obj, s);
  EXPECT_EQ(removed, (std::vector<std::string>{"extra", "spec.b"}));
  EXPECT_EQ(obj["spec"], json::parse(R"({"a":1,"free":{"x":{"y":1}},"labels":{"k":"v"}})"));
  EXPECT_EQ(obj["metadata"]["anything"], 1);
}

}  // namespace
}  // namespace depl::devcluster
