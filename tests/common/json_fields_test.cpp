#include "depl/common/json_fields.hpp"

#include <gtest/gtest.h>

namespace depl {
namespace {

using nlohmann::json;

TEST(JsonFields, ReadsWhatIsThereAndNothingElse) {
  const json pod = {{"metadata", {{"name", "p"}, {"labels", {{"rank", "1"}}}, {"generation", 3}}},
                    {"spec", "not an object"},
                    {"count", 2.0},
                    {"half", 2.5},
                    {"flag", true}};
  EXPECT_EQ(json_string(pod["metadata"], "name"), "p");
  EXPECT_EQ(json_string(pod["metadata"], "generation"), "");
  EXPECT_EQ(json_string(pod, "missing", "fallback"), "fallback");
  EXPECT_EQ(json_string(json::array({1}), "name"), "");
  EXPECT_EQ(json_at(pod, {"metadata", "labels", "rank"}), "1");
  EXPECT_TRUE(json_at(pod, {"spec", "containers"}).is_null());
  EXPECT_TRUE(json_at(pod, {"metadata", "name", "deeper"}).is_null());
  EXPECT_EQ(json_object(pod, "metadata").size(), 3u);
  EXPECT_TRUE(json_object(pod, "spec").empty()) << "a string is not an object";
  EXPECT_EQ(json_integer(pod["metadata"], "generation"), 3);
  EXPECT_EQ(json_integer(pod, "count"), 2) << "a float with an integral value is an integer";
  EXPECT_EQ(json_integer(pod, "half"), std::nullopt);
  EXPECT_EQ(json_integer(json{{"huge", 1e300}}, "huge"), std::nullopt);
  EXPECT_EQ(json_number(pod, "half"), 2.5);
  EXPECT_EQ(json_number(pod, "flag"), std::nullopt);
  EXPECT_EQ(json_bool(pod, "flag"), true);
  EXPECT_EQ(json_bool(pod, "count"), std::nullopt);
}

TEST(JsonFields, StringsOfAListSkipWhatIsNoString) {
  const json rule = {{"verbs", {"get", 1, nullptr, "list"}}, {"groups", "admins"}};
  EXPECT_EQ(json_strings(rule, "verbs"), (std::vector<std::string>{"get", "list"}));
  EXPECT_TRUE(json_strings(rule, "groups").empty()) << "a string is not a list";
  EXPECT_TRUE(json_strings(rule, "missing").empty());
  EXPECT_TRUE(json_strings(json::array({"a"}), "verbs").empty());
}

TEST(JsonFields, FindTellsANullFieldFromAMissingOne) {
  const json object = {{"set", 1}, {"cleared", nullptr}};
  ASSERT_NE(json_find(object, "set"), nullptr);
  EXPECT_EQ(*json_find(object, "set"), 1);
  ASSERT_NE(json_find(object, "cleared"), nullptr) << "a field set to null is there";
  EXPECT_TRUE(json_find(object, "cleared")->is_null());
  EXPECT_EQ(json_find(object, "missing"), nullptr);
  EXPECT_EQ(json_find(json::array({1}), "set"), nullptr) << "an array has no fields";
  EXPECT_EQ(json_find(json("text"), "set"), nullptr);

  EXPECT_NE(json_find_non_null(object, "set"), nullptr);
  EXPECT_EQ(json_find_non_null(object, "cleared"), nullptr) << "null reads as not set";
  EXPECT_EQ(json_find_non_null(object, "missing"), nullptr);
  EXPECT_EQ(json_find_non_null(json(), "set"), nullptr);
}

}  // namespace
}  // namespace depl
