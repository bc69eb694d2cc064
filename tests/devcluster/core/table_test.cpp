// Table conversion: built-in columns, CRD printer columns and the JSONPath subset.
#include "depl/devcluster/table.hpp"

#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using namespace testing;

TEST(JsonPath, FieldsIndicesAndFilters) {
  json o = json::parse(R"({"a":{"b":[{"c":1},{"c":2}]},
      "status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Done","status":"True"}]}})");
  EXPECT_EQ(eval_json_path(o, ".a.b[1].c"), json(2));
  EXPECT_EQ(eval_json_path(o, ".status.conditions[?(@.type==\"Done\")].status"), json("True"));
  EXPECT_EQ(eval_json_path(o, "{.a.b[0].c}"), json(1));
  EXPECT_EQ(eval_json_path(o, ".a['b'][0].c"), json(1));
  EXPECT_FALSE(eval_json_path(o, ".a.x"));
  EXPECT_FALSE(eval_json_path(o, ".a.b[5]"));
  EXPECT_FALSE(eval_json_path(o, "a["));
}

TEST(HumanDuration, MatchesKubectlAges) {
  using std::chrono::seconds;
  EXPECT_EQ(human_duration(seconds(5)), "5s");
  EXPECT_EQ(human_duration(seconds(150)), "2m30s");
  EXPECT_EQ(human_duration(seconds(600)), "10m");
  EXPECT_EQ(human_duration(seconds(3 * 3600 + 120)), "3h2m");
  EXPECT_EQ(human_duration(seconds(50 * 3600)), "2d2h");
}

TEST(Table, PodColumnsAndPartialObjectMetadata) {
  ResourceType pods;
  pods.plural = "pods";
  pods.kind = "Pod";
  json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"p","namespace":"default","creationTimestamp":"2026-01-01T00:00:00Z",
                "resourceVersion":"7","managedFields":[{"manager":"x"}]},
    "spec":{"containers":[{"name":"a"},{"name":"b"}],"nodeName":"n1"},
    "status":{"phase":"Running","podIP":"127.0.0.2",
      "containerStatuses":[{"name":"a","ready":true,"restartCount":2},{"name":"b","ready":false,"restartCount":1}]}})");
  json list = {{"kind", "PodList"}, {"metadata", {{"resourceVersion", "9"}}}, {"items", {pod}}};
  auto now = std::chrono::system_clock::from_time_t(1767225600) + std::chrono::seconds(90);
  json table = to_table(pods, list, now);
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(table["metadata"]["resourceVersion"], "9");
  std::vector<std::string> names;
  for (const auto& c : table["columnDefinitions"]) names.push_back(c["name"]);
  EXPECT_EQ(names,
            (std::vector<std::string>{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"}));
  EXPECT_EQ(table["columnDefinitions"][5]["priority"], 1);
  EXPECT_EQ(table["rows"][0]["cells"],
            json::parse(R"(["p","1/2","Running","3","90s","127.0.0.2","n1"])"));
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_FALSE(table["rows"][0]["object"]["metadata"].contains("managedFields"));
}

TEST(Table, NodeStatusAndRoles) {
  ResourceType nodes;
  nodes.plural = "nodes";
  json node = json::parse(R"({"metadata":{"name":"n","labels":{"node-role.kubernetes.io/gpu":""},
     "creationTimestamp":"2026-01-01T00:00:00Z"},
     "spec":{"unschedulable":true},
     "status":{"conditions":[{"type":"Ready","status":"True"}],"nodeInfo":{"kubeletVersion":"v1.32.0"}}})");
  json table = to_table(nodes, node, std::chrono::system_clock::from_time_t(1767225600));
  EXPECT_EQ(table["rows"][0]["cells"][1], "Ready,SchedulingDisabled");
  EXPECT_EQ(table["rows"][0]["cells"][2], "gpu");
  EXPECT_EQ(table["rows"][0]["cells"][4], "v1.32.0");
}

TEST(Table, CustomResourcePrinterColumns) {
  ResourceType t;
  t.custom = true;
  t.plural = "dependabletrainingjobs";
  PrinterColumn phase{"Phase", "string", "", "", 0, ".status.phase"};
  PrinterColumn epoch{"Epoch", "integer", "", "", 0, ".status.progress.epoch"};
  PrinterColumn ready{"Ready", "string", "",
                      "",      1,        ".status.conditions[?(@.type==\"Ready\")].status"};
  PrinterColumn age{"Age", "date", "", "", 0, ".metadata.creationTimestamp"};
  t.printer_columns = {phase, epoch, ready, age};
  json job = json::parse(R"({"metadata":{"name":"j","creationTimestamp":"2026-01-01T00:00:00Z"},
      "status":{"phase":"Training","conditions":[{"type":"Ready","status":"True"}]}})");
  json table = to_table(t, job, std::chrono::system_clock::from_time_t(1767225600 + 3600));
  EXPECT_EQ(table["columnDefinitions"][0]["name"], "Name");
  EXPECT_EQ(table["columnDefinitions"][0]["format"], "name");
  EXPECT_EQ(table["columnDefinitions"][3]["priority"], 1);
  EXPECT_EQ(table["rows"][0]["cells"], json::parse(R"(["j","Training",null,"True","60m"])"));
}

TEST(Table, DefaultNameAndAge) {
  ResourceType t;
  t.plural = "roles";
  json table = to_table(
      t, json::parse(R"({"metadata":{"name":"r","creationTimestamp":"2026-01-01T00:00:00Z"}})"),
      std::chrono::system_clock::from_time_t(1767225600 + 30));
  EXPECT_EQ(table["rows"][0]["cells"], json::parse(R"(["r","30s"])"));
}

}  // namespace
}  // namespace depl::devcluster
