// docs/reference.md is generated from the CRD (`make reference-docs`, with
// tools/packaging's depl-crd-reference); these tests fail when it is stale and check that the
// generator covers every schema field.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "depl/packaging/crd_reference.hpp"
#include "packaging/chart_files.hpp"

namespace depl::packaging {
namespace {

using ::testing::HasSubstr;

constexpr const char* kCrdPath = "crds/depl.dev_dependabletrainingjobs.yaml";

std::string generated() {
  auto crd = read_yaml(kRepo / kCrdPath);
  if (!crd) {
    ADD_FAILURE() << crd.error().message;
    return "";
  }
  return crd_reference_markdown(*crd, kCrdPath);
}

TEST(CrdReference, DocsReferenceIsUpToDate) {
  auto checked_in = read_text(kRepo / "docs" / "reference.md");
  ASSERT_TRUE(checked_in) << checked_in.error().message;
  EXPECT_TRUE(*checked_in == generated()) << "docs/reference.md is stale: make reference-docs";
}

TEST(CrdReference, ListsEveryFieldWithItsBoundsAndDefaults) {
  const std::string md = generated();
  EXPECT_THAT(md,
              HasSubstr("| `spec.target.probability` | number |  | `0.9` | >= 0.5, <= 0.9999 |"));
  EXPECT_THAT(md, HasSubstr("| `spec.target.loss` | number | yes |  | > 0 |"));
  EXPECT_THAT(
      md, HasSubstr("| `spec.models[].lossProfile.decayPerEpoch` | number | yes |  | > 0, < 1 |"));
  EXPECT_THAT(
      md,
      HasSubstr("| `spec.replan` | string |  | `OnDeviation` | one of `OnDeviation`, `Never` |"));
  EXPECT_THAT(md, HasSubstr("| `spec.datasets[].sizeBytes` | quantity (integer or string) |"));
  EXPECT_THAT(md, HasSubstr("| `spec.podTemplate.nodeSelector` | map of string |"));
  EXPECT_THAT(md, HasSubstr("| P(target) | string | `.status.display.probability` |"));
  EXPECT_THAT(md, HasSubstr("| Short names | `dtj` |"));
  // The solver's limits are stated, not enforced (solver/include/depl/solver/limits.hpp).
  EXPECT_THAT(md, HasSubstr("| `spec.datasets` | array of object | yes |  | at least 1 item(s) | "
                            "Candidate datasets; the operator picks a subset. The solver plans at "
                            "most 64. |"));
}

// maxItems and maxLength, which the CRD does not use, are rendered all the same.
TEST(CrdReference, RendersListAndStringBounds) {
  const nlohmann::json crd = {
      {"spec",
       {{"group", "example.com"},
        {"names", {{"kind", "Thing"}, {"plural", "things"}}},
        {"scope", "Namespaced"},
        {"versions",
         {{{"name", "v1"},
           {"schema",
            {{"openAPIV3Schema",
              {{"type", "object"},
               {"properties",
                {{"spec",
                  {{"type", "object"},
                   {"properties",
                    {{"names",
                      {{"type", "array"},
                       {"minItems", 1},
                       {"maxItems", 64},
                       {"items", {{"type", "string"}}}}},
                     {"image",
                      {{"type", "string"}, {"minLength", 1}, {"maxLength", 512}}}}}}}}}}}}}}}}}}};
  const std::string md = crd_reference_markdown(crd, "thing.yaml");
  EXPECT_THAT(md, HasSubstr("at least 1 item(s), at most 64 item(s)"));
  EXPECT_THAT(md, HasSubstr("at least 1 character(s), at most 512 character(s)"));
}

}  // namespace
}  // namespace depl::packaging
