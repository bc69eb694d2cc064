#include "depl/common/yaml_json.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>

namespace depl {
namespace {

using nlohmann::json;

json parse_ok(std::string_view yaml) {
  auto parsed = yaml_to_json(yaml);
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().message);
  return parsed ? *parsed : json();
}

TEST(YamlToJson, PlainScalarsFollowTheCoreSchema) {
  const json j = parse_ok(
      "n1: null\nn2: ~\nn3:\nb1: true\nb2: False\ni1: 42\ni2: -7\ni3: 0x1F\ni4: 0o17\n"
      "f1: 1.5\nf2: 1e3\nf3: .5\nf4: -2.\ns1: yes\ns2: 40Gi\ns3: 1.2.3\ns4: hello world\n");
  EXPECT_TRUE(j["n1"].is_null());
  EXPECT_TRUE(j["n2"].is_null());
  EXPECT_TRUE(j["n3"].is_null());
  EXPECT_EQ(j["b1"], json(true));
  EXPECT_EQ(j["b2"], json(false));
  EXPECT_TRUE(j["i1"].is_number_integer());
  EXPECT_EQ(j["i1"].get<int>(), 42);
  EXPECT_EQ(j["i2"].get<int>(), -7);
  EXPECT_EQ(j["i3"].get<int>(), 31);
  EXPECT_EQ(j["i4"].get<int>(), 15);
  EXPECT_TRUE(j["f1"].is_number_float());
  EXPECT_DOUBLE_EQ(j["f1"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["f2"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(j["f3"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["f4"].get<double>(), -2);
  // YAML 1.2 reads `yes` as a string (1.1 made it a bool).
  EXPECT_EQ(j["s1"], json("yes"));
  EXPECT_EQ(j["s2"], json("40Gi"));
  EXPECT_EQ(j["s3"], json("1.2.3"));
  EXPECT_EQ(j["s4"], json("hello world"));
}

TEST(YamlToJson, QuotedAndBlockScalarsStayStrings) {
  const json j =
      parse_ok("a: \"true\"\nb: '42'\nc: \"1.0\"\nd: \"\"\ne: 'null'\nf: !!str 7\ng: |\n  line\n");
  EXPECT_EQ(j["a"], json("true"));
  EXPECT_EQ(j["b"], json("42"));
  EXPECT_EQ(j["c"], json("1.0"));
  EXPECT_EQ(j["d"], json(""));
  EXPECT_EQ(j["e"], json("null"));
  EXPECT_EQ(j["f"], json("7"));
  EXPECT_EQ(j["g"], json("line\n"));
}

TEST(YamlToJson, NonFiniteAndHugeNumbers) {
  const json j = parse_ok("a: .inf\nb: -.Inf\nc: .nan\nd: 1e999\ne: 99999999999999999999\n");
  EXPECT_TRUE(std::isinf(j["a"].get<double>()) && j["a"].get<double>() > 0);
  EXPECT_TRUE(std::isinf(j["b"].get<double>()) && j["b"].get<double>() < 0);
  EXPECT_TRUE(std::isnan(j["c"].get<double>()));
  EXPECT_TRUE(std::isinf(j["d"].get<double>()));
  EXPECT_DOUBLE_EQ(j["e"].get<double>(), 1e20);
  EXPECT_EQ(parse_ok("x: 18446744073709551615")["x"].get<std::uint64_t>(), 18446744073709551615ULL);
  EXPECT_EQ(parse_ok("x: -9223372036854775808")["x"].get<std::int64_t>(),
            std::numeric_limits<std::int64_t>::min());
}

TEST(YamlToJson, NestedStructuresAndAnchors) {
  const json j = parse_ok(
      "base: &b {x: 1, y: [a, b]}\n"
      "list:\n  - *b\n  - - 1\n    - 2\n  - []\n  - {}\n");
  EXPECT_EQ(j["list"][0], (json{{"x", 1}, {"y", {"a", "b"}}}));
  EXPECT_EQ(j["list"][1], (json{1, 2}));
  EXPECT_EQ(j["list"][2], json::array());
  EXPECT_EQ(j["list"][3], json::object());
}

TEST(YamlToJson, EmptyInputIsNullAndFirstDocumentWins) {
  EXPECT_TRUE(parse_ok("").is_null());
  EXPECT_TRUE(parse_ok("# only a comment\n").is_null());
  EXPECT_EQ(parse_ok("a: 1\n---\nb: 2\n"), (json{{"a", 1}}));
}

TEST(YamlDocumentsToJson, ReturnsEveryDocument) {
  auto docs = yaml_documents_to_json("a: 1\n---\nb: 2\n---\n- x\n");
  ASSERT_TRUE(docs.has_value()) << docs.error().message;
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0], (json{{"a", 1}}));
  EXPECT_EQ((*docs)[1], (json{{"b", 2}}));
  EXPECT_EQ((*docs)[2], (json{"x"}));
  auto none = yaml_documents_to_json("");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(YamlToJson, SyntaxErrorsCarryLineAndColumn) {
  auto bad = yaml_to_json("a: 1\nb: [1, 2\nc: 3\n", "job.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message.rfind("job.yaml:", 0), 0u) << bad.error().message;
  EXPECT_NE(bad.error().message.find(":3:"), std::string::npos) << bad.error().message;

  auto unnamed = yaml_to_json("a: 1\n  b: 2\n");
  ASSERT_FALSE(unnamed.has_value());
  EXPECT_EQ(unnamed.error().message.rfind("line 2, column ", 0), 0u) << unnamed.error().message;
}

TEST(YamlToJson, DuplicateAndComplexKeysAreErrors) {
  auto dup = yaml_to_json("a: 1\nb: 2\na: 3\n");
  ASSERT_FALSE(dup.has_value());
  EXPECT_EQ(dup.error().message, "line 3, column 1: duplicate key \"a\"");
  auto complex = yaml_to_json("? [a, b]\n: 1\n");
  ASSERT_FALSE(complex.has_value());
  EXPECT_NE(complex.error().message.find("must be a scalar"), std::string::npos);
}

TEST(YamlToJson, StrayCommasAreErrorsNotHangs) {
  // yaml-cpp 0.7's own LoadAll never returns on these.
  for (const char* text : {",", "- a\n,", "[a],", "a: [1]\n---\n,\n"}) {
    auto single = yaml_to_json(text);
    ASSERT_FALSE(single.has_value()) << text;
    EXPECT_NE(single.error().message.find("unexpected ','"), std::string::npos)
        << single.error().message;
    EXPECT_FALSE(yaml_documents_to_json(text).has_value()) << text;
  }
}

TEST(YamlToJson, SelfReferencingAnchorIsAnError) {
  auto cyclic = yaml_to_json("a: &x [1, *x]\n");
  ASSERT_FALSE(cyclic.has_value());
  EXPECT_NE(cyclic.error().message.find("anchor"), std::string::npos) << cyclic.error().message;
}

TEST(YamlToJson, InvalidUtf8IsAnErrorWithPosition) {
  auto bad = yaml_to_json("a: ok\nb: caf\xC3(\n", "x.yaml");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "x.yaml:2:7: not valid UTF-8 text");
}

TEST(YamlToJson, AliasBombsAndDeepNestingAreRefused) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 8; ++level) {
    bomb += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(level - 1);
    bomb += "]\n";
  }
  auto exploded = yaml_to_json(bomb);
  ASSERT_FALSE(exploded.has_value());
  EXPECT_NE(exploded.error().message.find("aliases expand to more than"), std::string::npos);

  for (std::size_t depth : {300, 5000}) {
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    auto nested = yaml_to_json(deep);
    ASSERT_FALSE(nested.has_value());
    EXPECT_NE(nested.error().message.find("nested deeper than 200 levels"), std::string::npos)
        << nested.error().message;
  }
  std::string block;
  for (int level = 0; level < 250; ++level) block += std::string(2 * level, ' ') + "a:\n";
  auto nested_block = yaml_to_json(block);
  ASSERT_FALSE(nested_block.has_value());
  EXPECT_NE(nested_block.error().message.find("nested deeper"), std::string::npos);
}

TEST(YamlToJson, SyntaxErrorsTakePrecedenceOverContentErrors) {
  // The duplicate key comes first, but an unclosed bracket later is what the user must fix.
  auto bad = yaml_to_json("a: 1\na: 2\nb: [1, 2\n");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message.find("duplicate"), std::string::npos) << bad.error().message;
}

TEST(YamlToJson, GarbageNeverThrows) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::string alphabet = "-:[]{}&*!|>'\"%@`#?, \n\t aZ09.~";
  for (int round = 0; round < 400; ++round) {
    std::string text;
    const int length = 1 + round % 64;
    for (int i = 0; i < length; ++i) {
      text += (round % 2) ? static_cast<char>(byte(rng))
                          : alphabet[static_cast<std::size_t>(byte(rng)) % alphabet.size()];
    }
    EXPECT_NO_THROW({
      auto a = yaml_to_json(text);
      auto b = yaml_documents_to_json(text);
      if (a) (void)json_to_yaml(*a);
    }) << "input #"
       << round;
  }
}

void expect_round_trip(const json& value) {
  const std::string text = json_to_yaml(value);
  auto back = yaml_to_json(text);
  ASSERT_TRUE(back.has_value()) << back.error().message << "\n" << text;
  EXPECT_EQ(*back, value) << text;
}

TEST(JsonToYaml, StringsThatLookLikeOtherTypesAreQuoted) {
  for (const char* s : {"true",
                        "False",
                        "null",
                        "~",
                        "",
                        "1.0",
                        "42",
                        "0x1F",
                        ".inf",
                        ".nan",
                        "yes",
                        "no",
                        "on",
                        "off",
                        "1_000",
                        "12:30",
                        "2024-01-01",
                        "a: b",
                        "a #b",
                        "ends:",
                        "- item",
                        "[x]",
                        "{y}",
                        "#c",
                        "&a",
                        "*a",
                        "!t",
                        "|",
                        ">",
                        "'q'",
                        "\"d\"",
                        "%p",
                        "@x",
                        "`b`",
                        " lead",
                        "trail ",
                        "two\nlines",
                        "tab\there",
                        "---",
                        "...",
                        "<<",
                        "nel\xC2\x85",
                        "bom\xEF\xBB\xBF"}) {
    const std::string text = json_to_yaml(json{{"k", s}});
    EXPECT_NE(text.find('"'), std::string::npos) << "not quoted: " << text;
    expect_round_trip(json{{"k", s}});
    expect_round_trip(json{{s, 1}});
  }
}

TEST(JsonToYaml, OrdinaryStringsStayPlain) {
  EXPECT_EQ(json_to_yaml(json{{"name", "quickstart"}, {"size", "40Gi"}, {"image", "r/x:1.2"}}),
            "image: r/x:1.2\nname: quickstart\nsize: 40Gi\n");
  EXPECT_EQ(json_to_yaml(json{{"greeting", "grüße, 世界"}}), "greeting: grüße, 世界\n");
  EXPECT_EQ(json_to_yaml(json{{"path", "C:\\dir"}}), "path: C:\\dir\n");
}

TEST(JsonToYaml, BlockStyleLayout) {
  const json value = {{"apiVersion", "v1"},
                      {"items", json::array({json{{"a", 1}, {"b", json::array({1, 2})}},
                                             json::array({"x", "z"}), json::object()})},
                      {"meta", {{"labels", json::object()}, {"m", nullptr}}}};
  EXPECT_EQ(json_to_yaml(value),
            "apiVersion: v1\n"
            "items:\n"
            "  - a: 1\n"
            "    b:\n"
            "      - 1\n"
            "      - 2\n"
            "  - - x\n"
            "    - z\n"
            "  - {}\n"
            "meta:\n"
            "  labels: {}\n"
            "  m: null\n");
  expect_round_trip(value);
}

TEST(JsonToYaml, NumbersKeepTheirType) {
  const json value = {
      {"f", 1.0},  {"g", 0.1}, {"h", 1e20}, {"i", -3}, {"u", 18446744073709551615ULL},
      {"t", true}, {"z", 0.0}};
  const std::string text = json_to_yaml(value);
  EXPECT_NE(text.find("f: 1.0\n"), std::string::npos) << text;
  expect_round_trip(value);
  auto back = yaml_to_json(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE((*back)["f"].is_number_float());
  EXPECT_TRUE((*back)["i"].is_number_integer());
}

TEST(JsonToYaml, RealManifestsRoundTrip) {
  for (const char* file : {"examples/quickstart/job.yaml", "examples/quickstart/pools.yaml"}) {
    std::ifstream in(std::string(DEPL_SOURCE_DIR) + "/" + file);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = yaml_to_json(text.str(), file);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    ASSERT_TRUE(parsed->is_object()) << file;
    expect_round_trip(*parsed);
  }
}

TEST(JsonToYaml, NonFiniteDoublesUseYamlSpellings) {
  const json value = {{"a", std::numeric_limits<double>::infinity()},
                      {"b", -std::numeric_limits<double>::infinity()},
                      {"c", std::numeric_limits<double>::quiet_NaN()}};
  EXPECT_EQ(json_to_yaml(value), "a: .inf\nb: -.inf\nc: .nan\n");
}

TEST(JsonToYaml, TopLevelScalarsAndEmptyContainers) {
  EXPECT_EQ(json_to_yaml(json("true")), "\"true\"\n");
  EXPECT_EQ(json_to_yaml(json(nullptr)), "null\n");
  EXPECT_EQ(json_to_yaml(json::array()), "[]\n");
  EXPECT_EQ(json_to_yaml(json::object()), "{}\n");
  expect_round_trip(json::array({json::array({json::array({1})})}));
}

TEST(JsonToYaml, InvalidUtf8IsReplacedNotThrown) {
  const json value = {{"k", std::string("bad\xFF")}};
  const std::string text = json_to_yaml(value);
  auto back = yaml_to_json(text);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ((*back)["k"], json("bad\xEF\xBF\xBD"));
}

TEST(JsonToYaml, ControlCharactersAreEscaped) {
  const json value = {{"k", std::string("a\x01") + "b\x7F" + "\r"}};
  const std::string text = json_to_yaml(value);
  EXPECT_EQ(text, "k: \"a\\x01b\\x7F\\r\"\n");
  expect_round_trip(value);
}

}  // namespace
}  // namespace depl
