// Label and field selector parsing and matching.
#include "depl/devcluster/selectors.hpp"

#include <gtest/gtest.h>

namespace depl::devcluster {
namespace {

using nlohmann::json;

bool label_match(const char* selector, const json& labels) {
  auto parsed = LabelSelector::parse(selector);
  EXPECT_TRUE(parsed) << selector << ": " << (parsed ? "" : parsed.error().message);
  return parsed && parsed->matches(labels);
}

TEST(LabelSelector, EqualityInequalityAndSets) {
  json labels = {{"app", "web"}, {"tier", "front"}, {"gpu", "a100"}};
  EXPECT_TRUE(label_match("", labels));
  EXPECT_TRUE(label_match("app=web", labels));
  EXPECT_TRUE(label_match("app==web,tier=front", labels));
  EXPECT_FALSE(label_match("app=db", labels));
  EXPECT_TRUE(label_match("app!=db", labels));
  EXPECT_TRUE(label_match("missing!=x", labels));
  EXPECT_TRUE(label_match("gpu in (a100, h100)", labels));
  EXPECT_FALSE(label_match("gpu notin (a100,h100)", labels));
  EXPECT_TRUE(label_match("missing notin (a)", labels));
  EXPECT_TRUE(label_match("tier", labels));
  EXPECT_FALSE(label_match("!tier", labels));
  EXPECT_TRUE(label_match("!missing,app in (web),tier", labels));
  EXPECT_FALSE(label_match("app", json()));
  EXPECT_TRUE(label_match("depl.dev/pool=a", json{{"depl.dev/pool", "a"}}));
}

TEST(LabelSelector, ErrorsNameTheProblem) {
  auto bad = LabelSelector::parse("app in (a,b");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("missing ')'"), std::string::npos);
  auto bad_key = LabelSelector::parse("a b=c");
  ASSERT_FALSE(bad_key);
  EXPECT_NE(bad_key.error().message.find("invalid label key"), std::string::npos);
  EXPECT_FALSE(LabelSelector::parse("app=a,,b=c"));
}

TEST(FieldSelector, MatchesDottedPathsWithAllOperators) {
  json pod = {{"metadata", {{"name", "p1"}, {"namespace", "ns"}}},
              {"spec", {{"nodeName", "n1"}}},
              {"status", {{"phase", "Running"}}}};
  auto sel = FieldSelector::parse("spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed");
  ASSERT_TRUE(sel);
  EXPECT_TRUE(sel->matches(pod));
  auto name = FieldSelector::parse("metadata.name==p2");
  ASSERT_TRUE(name);
  EXPECT_FALSE(name->matches(pod));
  auto empty_node = FieldSelector::parse("spec.nodeName=");
  ASSERT_TRUE(empty_node);
  EXPECT_FALSE(empty_node->matches(pod));
  EXPECT_TRUE(empty_node->matches(json{{"spec", json::object()}}));
  EXPECT_FALSE(FieldSelector::parse("justafield"));
}

TEST(FieldSelector, RenamesEventsFields) {
  auto sel = FieldSelector::parse("regarding.name=p1");
  ASSERT_TRUE(sel);
  sel->rename_prefix("regarding.", "involvedObject.");
  EXPECT_TRUE(sel->matches(json{{"involvedObject", {{"name", "p1"}}}}));
}

}  // namespace
}  // namespace depl::devcluster
