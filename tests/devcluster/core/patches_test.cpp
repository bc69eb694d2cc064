// JSON merge patch (RFC 7386 appendix A), JSON patch (RFC 6902) and strategic merge patch.
#include "depl/devcluster/patches.hpp"

#include <random>

#include <gtest/gtest.h>

namespace depl::devcluster {
namespace {

using nlohmann::json;

TEST(MergePatch, Rfc7386AppendixAExamples) {
  struct Case {
    const char* target;
    const char* patch;
    const char* result;
  };
  const Case cases[] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", R"(null)", R"(null)"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(apply_merge_patch(json::parse(c.target), json::parse(c.patch)), json::parse(c.result))
        << c.target << " + " << c.patch;
  }
}

// RFC 7386 as the RFC's pseudocode states it: copy the target, merge in place.
void merge_in_place(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it->is_null()) {
      target.erase(it.key());
    } else {
      merge_in_place(target[it.key()], *it);
    }
  }
}

json random_json(std::mt19937_64& random, int depth, bool top = false) {
  const auto below = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  switch (top && below(5) != 0 ? 6 : depth <= 0 ? below(4) : below(7)) {
    case 0:
      return nullptr;
    case 1:
      return below(3);
    case 2:
      return std::string(1, static_cast<char>('a' + below(3)));
    case 3:
      return below(2) == 0;
    case 4: {
      json a = json::array();
      for (int i = below(3); i > 0; --i) a.push_back(random_json(random, depth - 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = below(5); i > 0; --i) {
        o[std::string(1, static_cast<char>('k' + below(4)))] = random_json(random, depth - 1);
      }
      return o;
    }
  }
}

TEST(MergePatch, EqualsCopyingTheTargetThenMergingInPlace) {
  // apply_merge_patch copies only what the patch keeps; on overlapping random documents (few
  // keys, nested objects, nulls at every level) it must give what the RFC's algorithm gives.
  std::mt19937_64 random(7);
  int merged_objects = 0;
  for (int i = 0; i < 20000; ++i) {
    const json target = random_json(random, 4, true);
    const json patch = random_json(random, 4, true);
    json expected = target;
    merge_in_place(expected, patch);
    ASSERT_EQ(apply_merge_patch(target, patch), expected)
        << "case " << i << ": " << target.dump() << " + " << patch.dump();
    merged_objects += target.is_object() && patch.is_object() && !patch.empty();
  }
  EXPECT_GT(merged_objects, 10000);
}

TEST(JsonPatch, Rfc6902Operations) {
  json doc = json::parse(R"({"foo":["bar","baz"],"q":{"x":1}})");
  json patch = json::parse(R"([
    {"op":"add","path":"/foo/1","value":"qux"},
    {"op":"remove","path":"/q/x"},
    {"op":"replace","path":"/foo/0","value":"b"},
    {"op":"copy","from":"/foo/0","path":"/c"},
    {"op":"move","from":"/c","path":"/m"},
    {"op":"test","path":"/m","value":"b"},
    {"op":"add","path":"/foo/-","value":"end"}
  ])");
  auto result = apply_json_patch(doc, patch);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(*result, json::parse(R"({"foo":["b","qux","baz","end"],"q":{},"m":"b"})"));
}

TEST(JsonPatch, FailingTestNamesTheOperation) {
  auto result = apply_json_patch(json::parse(R"({"a":1})"),
                                 json::parse(R"([{"op":"replace","path":"/a","value":2},
                                                 {"op":"test","path":"/a","value":3}])"));
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("operation 1 (test /a)"), std::string::npos)
      << result.error().message;
}

TEST(JsonPatch, MissingPathIsAnError) {
  auto result = apply_json_patch(json::parse(R"({"a":1})"),
                                 json::parse(R"([{"op":"remove","path":"/nope"}])"));
  EXPECT_FALSE(result);
  EXPECT_FALSE(apply_json_patch(json::object(), json::object()));
}

json pod() {
  return json::parse(R"({
    "metadata":{"name":"p","finalizers":["a","b"]},
    "spec":{
      "containers":[
        {"name":"main","image":"img:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
         "ports":[{"containerPort":80,"name":"http"}],
         "volumeMounts":[{"name":"data","mountPath":"/data"}]},
        {"name":"side","image":"side:1"}],
      "volumes":[{"name":"data","emptyDir":{}}],
      "tolerations":[{"key":"gpu","operator":"Exists"}]},
    "status":{"conditions":[{"type":"Ready","status":"False"}]}})");
}

TEST(StrategicMergePatch, MergesContainersByNameAndEnvByName) {
  auto result = apply_strategic_merge_patch(pod(), json::parse(R"({"spec":{"containers":[
      {"name":"main","image":"img:2","env":[{"name":"B","value":"two"},{"name":"C","value":"3"}]}]}})"));
  ASSERT_TRUE(result) << result.error().message;
  const json& containers = (*result)["spec"]["containers"];
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0]["image"], "img:2");
  EXPECT_EQ(containers[1]["name"], "side");
  EXPECT_EQ(containers[0]["env"],
            json::parse(R"([{"name":"A","value":"1"},{"name":"B","value":"two"},
                                                  {"name":"C","value":"3"}])"));
  EXPECT_EQ(containers[0]["ports"].size(), 1u);
}

TEST(StrategicMergePatch, PortsVolumeMountsTolerationsConditionsByTheirKeys) {
  auto result = apply_strategic_merge_patch(pod(), json::parse(R"({
    "spec":{"containers":[{"name":"main",
              "ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443}],
              "volumeMounts":[{"mountPath":"/data","readOnly":true}]}],
            "tolerations":[{"key":"gpu","effect":"NoSchedule"}]},
    "status":{"conditions":[{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}]}})"));
  ASSERT_TRUE(result) << result.error().message;
  const json& main = (*result)["spec"]["containers"][0];
  EXPECT_EQ(main["ports"], json::parse(R"([{"containerPort":80,"name":"http","protocol":"TCP"},
                                           {"containerPort":443}])"));
  EXPECT_EQ(main["volumeMounts"],
            json::parse(R"([{"name":"data","mountPath":"/data","readOnly":true}])"));
  EXPECT_EQ((*result)["spec"]["tolerations"],
            json::parse(R"([{"key":"gpu","operator":"Exists","effect":"NoSchedule"}])"));
  EXPECT_EQ(
      (*result)["status"]["conditions"],
      json::parse(R"([{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}])"));
}

TEST(StrategicMergePatch, ServicePortsMergeByPort) {
  json svc = json::parse(R"({"spec":{"ports":[{"port":80,"targetPort":8080}]}})");
  auto result = apply_strategic_merge_patch(
      svc, json::parse(R"({"spec":{"ports":[{"port":80,"name":"web"}]}})"));
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["spec"]["ports"],
            json::parse(R"([{"port":80,"targetPort":8080,"name":"web"}])"));
}

TEST(StrategicMergePatch, PatchDeleteAndReplaceDirectives) {
  auto result = apply_strategic_merge_patch(pod(), json::parse(R"({"spec":{
      "containers":[{"name":"side","$patch":"delete"}],
      "tolerations":[{"$patch":"replace"},{"key":"x","operator":"Exists"}]}})"));
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ((*result)["spec"]["containers"].size(), 1u);
  EXPECT_EQ((*result)["spec"]["containers"][0]["name"], "main");
  EXPECT_EQ((*result)["spec"]["tolerations"], json::parse(R"([{"key":"x","operator":"Exists"}])"));

  auto replaced = apply_strategic_merge_patch(
      pod(), json::parse(R"({"metadata":{"$patch":"replace","name":"p2"}})"));
  ASSERT_TRUE(replaced);
  EXPECT_EQ((*replaced)["metadata"], json::parse(R"({"name":"p2"})"));
}

TEST(StrategicMergePatch, NullDeletesAndUnkeyedListsReplace) {
  json obj = json::parse(R"({"spec":{"args":["a","b"],"x":1}})");
  auto result =
      apply_strategic_merge_patch(obj, json::parse(R"({"spec":{"args":["c"],"x":null}})"));
  ASSERT_TRUE(result);
  EXPECT_EQ(*result, json::parse(R"({"spec":{"args":["c"]}})"));
}

TEST(StrategicMergePatch, DeleteFromPrimitiveListAndFinalizerUnion) {
  auto result = apply_strategic_merge_patch(
      pod(), json::parse(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],
                                         "finalizers":["c"]}})"));
  ASSERT_TRUE(result);
  EXPECT_EQ((*result)["metadata"]["finalizers"], json::parse(R"(["b","c"])"));
}

TEST(StrategicMergePatch, SetElementOrderReordersKeyedLists) {
  auto result = apply_strategic_merge_patch(
      pod(),
      json::parse(R"({"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"main"}],
                                     "containers":[{"name":"side","image":"side:2"}]}})"));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ((*result)["spec"]["containers"][0]["name"], "side");
  EXPECT_EQ((*result)["spec"]["containers"][0]["image"], "side:2");
  EXPECT_EQ((*result)["spec"]["containers"][1]["name"], "main");
}

TEST(StrategicMergePatch, RetainKeysDropsOtherVolumeSources) {
  json obj = json::parse(
      R"({"spec":{"volumes":[{"name":"v","emptyDir":{},"secret":{"secretName":"s"}}]}})");
  auto result = apply_strategic_merge_patch(obj, json::parse(R"({"spec":{"volumes":[
      {"name":"v","$retainKeys":["name","configMap"],"configMap":{"name":"cm"}}]}})"));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ((*result)["spec"]["volumes"],
            json::parse(R"([{"name":"v","configMap":{"name":"cm"}}])"));
}

TEST(StrategicMergePatch, KeyedItemWithoutKeyIsAnError) {
  auto result =
      apply_strategic_merge_patch(pod(), json::parse(R"({"spec":{"containers":[{"image":"x"}]}})"));
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("spec.containers"), std::string::npos);
  EXPECT_NE(result.error().message.find("\"name\""), std::string::npos);
}

}  // namespace
}  // namespace depl::devcluster
