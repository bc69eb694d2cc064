// kubectl against the dev cluster, custom resources: CRD establishment, apply (client- and
// server-side), printer columns, -o yaml, watch, wait, patch, validation and explain.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "depl/devcluster/api_store.hpp"
#include "kubectl_fixture.hpp"

namespace depl::devcluster::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kWidget = R"(apiVersion: tests.depl.dev/v1
kind: Widget
metadata:
  name: w1
  namespace: default
spec:
  size: 3
)";

TEST_F(KubectlTest, AppliesCrdAndWaitsForEstablished) {
  install_widget_crd();
  auto got = kubectl({"get", "crd", "widgets.tests.depl.dev", "-o",
                      "jsonpath={.status.conditions[?(@.type==\"NamesAccepted\")].status}"});
  EXPECT_EQ(got.exit_code, 0) << got.output;
  EXPECT_EQ(got.output, "True");
  auto resources = kubectl({"api-resources", "--api-group=tests.depl.dev"});
  EXPECT_EQ(resources.exit_code, 0) << resources.output;
  EXPECT_THAT(resources.output, HasSubstr("widgets"));
  EXPECT_THAT(resources.output, HasSubstr("wd"));
}

TEST_F(KubectlTest, ApplyingTheSameResourceTwiceIsUnchanged) {
  install_widget_crd();
  auto first = kubectl({"apply", "-f", "-"}, kWidget);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("widget.tests.depl.dev/w1 created"));
  auto second = kubectl({"apply", "-f", "-"}, kWidget);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_THAT(second.output, HasSubstr("widget.tests.depl.dev/w1 unchanged"));
  EXPECT_THAT(second.output, Not(HasSubstr("warning")));
  std::string changed = kWidget;
  changed.replace(changed.find("size: 3"), 7, "size: 4");
  auto third = kubectl({"apply", "-f", "-"}, changed);
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_THAT(third.output, HasSubstr("widget.tests.depl.dev/w1 configured"));
}

TEST_F(KubectlTest, GetShowsPrinterColumnsAndYaml) {
  install_widget_crd();
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, kWidget).exit_code, 0);
  auto table = kubectl({"get", "widgets"});
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_THAT(table.output, HasSubstr("NAME"));
  EXPECT_THAT(table.output, HasSubstr("SIZE"));
  EXPECT_THAT(table.output, HasSubstr("PHASE"));
  EXPECT_THAT(table.output, HasSubstr("w1"));
  auto short_name = kubectl({"get", "wd", "w1"});
  EXPECT_EQ(short_name.exit_code, 0) << short_name.output;
  auto yaml = kubectl({"get", "widget", "w1", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.output;
  EXPECT_THAT(yaml.output, HasSubstr("kind: Widget"));
  EXPECT_THAT(yaml.output, HasSubstr("size: 3"));
  EXPECT_THAT(yaml.output, HasSubstr("color: red"));  // defaulted by the schema
  EXPECT_THAT(yaml.output, HasSubstr("resourceVersion:"));
}

TEST_F(KubectlTest, GetWatchStreamsChanges) {
  install_widget_crd();
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, kWidget).exit_code, 0);
  Subprocess watch({"kubectl", "get", "widgets", "-w"}, kubectl_env());
  ASSERT_TRUE(watch.started());
  auto header = watch.read_line(std::chrono::seconds(20));
  ASSERT_TRUE(header) << watch.pending();
  EXPECT_THAT(*header, HasSubstr("SIZE"));
  auto row = watch.read_line(std::chrono::seconds(20));
  ASSERT_TRUE(row);
  EXPECT_THAT(*row, HasSubstr("w1"));
  auto patched = kubectl({"patch", "widget", "w1", "--type=merge", "-p", R"({"spec":{"size":7}})"});
  ASSERT_EQ(patched.exit_code, 0) << patched.output;
  auto update = watch.read_line(std::chrono::seconds(20));
  ASSERT_TRUE(update) << watch.pending();
  EXPECT_THAT(*update, HasSubstr("w1"));
  EXPECT_THAT(*update, HasSubstr("7"));
}

TEST_F(KubectlTest, WaitsForAConditionSetByAnotherClient) {
  install_widget_crd();
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, kWidget).exit_code, 0);
  Subprocess wait({"kubectl", "wait", "--for=condition=Ready", "widget/w1", "--timeout=30s"},
                  kubectl_env());
  ASSERT_TRUE(wait.started());
  // Another client sets the condition while kubectl waits on its watch.
  std::thread writer([&] {
    auto obj =
        cluster_->store().get(ResourceRef{"tests.depl.dev", "v1", "widgets", "default", "w1", ""});
    const auto generation = obj.body["metadata"].value("generation", 1);
    nlohmann::json status = {
        {"status",
         {{"phase", "Ready"},
          {"conditions",
           {{{"type", "Ready"}, {"status", "True"}, {"observedGeneration", generation}}}}}}};
    cluster_->store().patch(
        ResourceRef{"tests.depl.dev", "v1", "widgets", "default", "w1", "status"}, PatchType::Merge,
        status.dump());
  });
  const int code = wait.wait(std::chrono::seconds(40));
  writer.join();
  EXPECT_EQ(code, 0) << wait.pending();
  auto phase = kubectl({"get", "widget", "w1", "-o", "jsonpath={.status.phase}"});
  EXPECT_EQ(phase.output, "Ready");
}

TEST_F(KubectlTest, PatchesWithMergeAndAppliesServerSide) {
  install_widget_crd();
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, kWidget).exit_code, 0);
  auto patched =
      kubectl({"patch", "widget", "w1", "--type=merge", "-p", R"({"spec":{"color":"blue"}})"});
  ASSERT_EQ(patched.exit_code, 0) << patched.output;
  EXPECT_THAT(patched.output, HasSubstr("patched"));
  auto color = kubectl({"get", "widget", "w1", "-o", "jsonpath={.spec.color}"});
  EXPECT_EQ(color.output, "blue");

  constexpr const char* kServerSide = R"(apiVersion: tests.depl.dev/v1
kind: Widget
metadata:
  name: w2
spec:
  size: 5
)";
  auto ssa = kubectl({"apply", "--server-side", "-f", "-"}, kServerSide);
  ASSERT_EQ(ssa.exit_code, 0) << ssa.output;
  EXPECT_THAT(ssa.output, HasSubstr("widget.tests.depl.dev/w2 serverside-applied"));
  auto managers =
      kubectl({"get", "widget", "w2", "-o", "jsonpath={.metadata.managedFields[*].manager}"});
  EXPECT_THAT(managers.output, HasSubstr("kubectl"));
  auto again = kubectl({"apply", "--server-side", "-f", "-"}, kServerSide);
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

TEST_F(KubectlTest, RejectsAnInvalidResourceNamingTheField) {
  install_widget_crd();
  constexpr const char* kTooBig = R"(apiVersion: tests.depl.dev/v1
kind: Widget
metadata:
  name: big
spec:
  size: 100
  color: green
)";
  auto applied = kubectl({"apply", "-f", "-"}, kTooBig);
  EXPECT_NE(applied.exit_code, 0);
  EXPECT_THAT(applied.output, HasSubstr("spec.size"));
  EXPECT_THAT(applied.output, HasSubstr("spec.color"));
  auto created = kubectl({"create", "-f", "-"}, kTooBig);
  EXPECT_NE(created.exit_code, 0);
  EXPECT_THAT(created.output, HasSubstr("spec.size"));
}

TEST_F(KubectlTest, CreateValidatesUnknownFieldsStrictly) {
  install_widget_crd();
  constexpr const char* kUnknown = R"(apiVersion: tests.depl.dev/v1
kind: Widget
metadata:
  name: odd
spec:
  size: 2
  flavour: vanilla
)";
  auto created = kubectl({"create", "-f", "-"}, kUnknown);
  EXPECT_NE(created.exit_code, 0) << created.output;
  EXPECT_THAT(created.output, HasSubstr("flavour"));
  auto created_ok = kubectl({"create", "-f", "-"}, kWidget);
  EXPECT_EQ(created_ok.exit_code, 0) << created_ok.output;
  EXPECT_THAT(created_ok.output, HasSubstr("created"));
}

TEST_F(KubectlTest, ExplainsTheCustomResourceSchema) {
  install_widget_crd();
  auto explained = kubectl({"explain", "widgets.spec"});
  ASSERT_EQ(explained.exit_code, 0) << explained.output;
  EXPECT_THAT(explained.output, HasSubstr("size"));
  EXPECT_THAT(explained.output, HasSubstr("How big the widget is"));
}

TEST_F(KubectlTest, DeleteWaitsForFinalizers) {
  install_widget_crd();
  constexpr const char* kFinalized = R"(apiVersion: tests.depl.dev/v1
kind: Widget
metadata:
  name: held
  finalizers: [tests.depl.dev/hold]
spec:
  size: 1
)";
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, kFinalized).exit_code, 0);
  auto deleted = kubectl({"delete", "widget", "held", "--wait=false"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  auto still = kubectl({"get", "widget", "held", "-o", "jsonpath={.metadata.deletionTimestamp}"});
  ASSERT_EQ(still.exit_code, 0) << still.output;
  EXPECT_FALSE(still.output.empty());
  auto released = kubectl(
      {"patch", "widget", "held", "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
  ASSERT_EQ(released.exit_code, 0) << released.output;
  auto gone = kubectl({"wait", "--for=delete", "widget/held", "--timeout=20s"});
  EXPECT_EQ(gone.exit_code, 0) << gone.output;
  auto missing = kubectl({"get", "widget", "held"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.output, HasSubstr("NotFound"));
}

}  // namespace
}  // namespace depl::devcluster::testing
