// dump_json must write exactly what nlohmann's dump() writes, for any value: generated values
// (every kind of string byte, integers at their limits, floats, nesting) replay from their seed.
#include "depl/common/json_dump.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace depl {
namespace {

using nlohmann::json;

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : random_(seed) {}

  json value(int depth) {
    switch (below(depth > 0 ? 10 : 7)) {
      case 0:
        return nullptr;
      case 1:
        return below(2) == 1;
      case 2:
        return integer();
      case 3:
        return static_cast<std::uint64_t>(random_());
      case 4:
        return floating();
      case 5:
      case 6:
        return text();
      case 7:
      case 8: {
        json object = json::object();
        for (int i = 0, n = below(5); i < n; ++i) object[text()] = value(depth - 1);
        return object;
      }
      default: {
        json array = json::array();
        for (int i = 0, n = below(5); i < n; ++i) array.push_back(value(depth - 1));
        return array;
      }
    }
  }

  // Mostly what Kubernetes objects hold (names, labels, images), with now and then every byte a
  // string can carry: quotes, backslashes, control characters, DEL, and valid UTF-8.
  std::string text() {
    static const std::vector<std::string> kPieces = {"a",
                                                     "metadata",
                                                     "nvidia.com/gpu",
                                                     "2026-11-26T04:00:00Z",
                                                     " ",
                                                     "/",
                                                     "k:{\"name\":\"x\"}",
                                                     "\"",
                                                     "\\",
                                                     "\n",
                                                     "\t",
                                                     "\x01",
                                                     "\x1f",
                                                     "\x7f",
                                                     "é",
                                                     "日本",
                                                     "💡",
                                                     "{}",
                                                     "[]",
                                                     "0"};
    std::string out;
    for (int i = 0, n = below(4); i < n; ++i) {
      const int pick = below(100) < 70 ? below(7) : below(static_cast<int>(kPieces.size()));
      out += kPieces[static_cast<std::size_t>(pick)];
    }
    return out;
  }

 private:
  int below(int n) { return static_cast<int>(random_() % static_cast<std::uint64_t>(n)); }

  std::int64_t integer() {
    switch (below(4)) {
      case 0:
        return std::numeric_limits<std::int64_t>::min();
      case 1:
        return std::numeric_limits<std::int64_t>::max();
      case 2:
        return below(2000) - 1000;
      default:
        return static_cast<std::int64_t>(random_());
    }
  }

  double floating() {
    static const double kSpecial[] = {0.0,
                                      -0.0,
                                      1.0,
                                      0.1,
                                      1e300,
                                      5e-324,
                                      std::numeric_limits<double>::quiet_NaN(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity()};
    if (below(3) == 0) return kSpecial[below(9)];
    return std::ldexp(static_cast<double>(random_() % 1000000) - 500000.0, below(80) - 40);
  }

  std::mt19937_64 random_;
};

TEST(JsonDump, WritesWhatDumpWritesForGeneratedValues) {
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
    Generator g(seed);
    const json value = g.value(4);
    ASSERT_EQ(dump_json(value), value.dump()) << "seed " << seed;
  }
}

TEST(JsonDump, WritesWhatDumpWritesForAKubernetesObject) {
  const json pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "job-0001-p0-w3", "namespace": "default", "uid": "2b1c-4d",
                 "labels": {"depl.dev/job": "job-0001", "depl.dev/phase": "0"},
                 "annotations": {"note": "line one\nline \"two\"\ttabbed \\ é"},
                 "managedFields": [{"manager": "depl-controller", "operation": "Update",
                                    "fieldsV1": {"f:spec": {"f:containers": {
                                        "k:{\"name\":\"worker\"}": {".": {}}}}}}]},
    "spec": {"containers": [{"name": "worker", "image": "registry.example.com/full:1",
                             "env": [{"name": "DEPL_LOSS_PROFILE",
                                      "value": "{\"initialLoss\":2.3,\"floorLoss\":0.25}"}],
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
             "priority": null, "terminationGracePeriodSeconds": 30, "hostNetwork": false},
    "status": {"phase": "Running", "podIP": "10.0.0.7", "ratio": 0.1, "big": 1e300}
  })");
  EXPECT_EQ(dump_json(pod), pod.dump());
  std::string out = "prefix ";
  append_json(out, pod);
  EXPECT_EQ(out, "prefix " + pod.dump());
}

TEST(JsonDump, EmptyContainersBinaryAndDiscardedValuesAreWrittenAsDumpWritesThem) {
  for (const json& value :
       {json::object(), json::array(), json(json::array({json::object()})),
        json::binary({1, 2, 3}, 7), json(json::value_t::discarded),
        json(std::uint64_t{18446744073709551615ull}), json(""), json(std::string("a\0b", 3))}) {
    EXPECT_EQ(dump_json(value), value.dump());
  }
}

TEST(JsonDump, InvalidUtf8IsRefusedAsDumpRefusesIt) {
  for (const std::string& bad :
       {std::string("\xff"), std::string("ok\xc3"), std::string("\xed\xa0\x80")}) {
    const json value = {{"key", bad}};
    EXPECT_THROW((void)value.dump(), json::type_error);
    try {
      (void)dump_json(value);
      ADD_FAILURE() << "no error for invalid UTF-8";
    } catch (const json::type_error& e) {
      EXPECT_EQ(e.id, 316);
    }
    const json as_key = {{bad, 1}};
    EXPECT_THROW((void)dump_json(as_key), json::type_error);
  }
}

}  // namespace
}  // namespace depl
