// FieldFilter: which members a path keeps, arrays transparent; parsing with a filter gives what
// applying it to the whole parse gives, on seeded random documents and filters, and refuses
// exactly the texts a whole parse refuses. Watch events: objects of ADDED/MODIFIED/DELETED are
// filtered, BOOKMARK and ERROR events and decode errors are as without a filter.
#include "depl/kube/field_filter.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "depl/common/random.hpp"
#include "depl/kube/watch_event.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;

TEST(FieldFilter, KeepsOnlyThePathsNamedAndLooksThroughArrays) {
  const json pod = json::parse(R"({
    "kind": "Pod",
    "metadata": {"name": "a", "labels": {"x": "1"}, "managedFields": [{"manager": "m"}]},
    "spec": {"nodeName": "n1", "volumes": [{"name": "v"}],
             "containers": [{"name": "c1", "image": "i", "resources": {"limits": {"gpu": 1}}},
                            {"name": "c2", "image": "j"}, "not-an-object", [{"name": "nested"}]]},
    "status": "not-an-object"})");
  FieldFilter filter;
  filter.keep({"metadata", "name"})
      .keep({"metadata", "labels"})
      .keep({"spec", "containers", "name"})
      .keep({"spec", "containers", "resources", "limits"})
      .keep({"status", "phase"});
  const json expected = json::parse(R"({
    "metadata": {"name": "a", "labels": {"x": "1"}},
    "spec": {"containers": [{"name": "c1", "resources": {"limits": {"gpu": 1}}},
                            {"name": "c2"}, "not-an-object", [{"name": "nested"}]]},
    "status": "not-an-object"})");
  EXPECT_EQ(filter.apply(pod), expected);
  auto parsed = parse_filtered(pod.dump(), filter);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, expected);
}

TEST(FieldFilter, PathsUnderAndAboveKeptOnes) {
  FieldFilter under;
  under.keep({"a"}).keep({"a", "b"});  // nothing more: a is kept whole
  FieldFilter a_only;
  a_only.keep({"a"});
  EXPECT_EQ(under, a_only);

  FieldFilter above;
  above.keep({"a", "b"}).keep({"a"});  // a, whole
  EXPECT_EQ(above, a_only);

  FieldFilter everything;
  everything.keep({});
  EXPECT_TRUE(everything.keeps_everything());
  const json doc = {{"a", 1}, {"b", {{"c", 2}}}};
  EXPECT_EQ(everything.apply(doc), doc);
  EXPECT_EQ(FieldFilter().apply(doc), json::object());
  EXPECT_EQ(FieldFilter().apply(json::array({1, doc})), json::array({1, json::object()}));

  FieldFilter grafted;
  grafted.keep({"x"}).keep({"x"}, a_only);
  EXPECT_EQ(grafted.apply({{"x", doc}, {"y", 1}}), json({{"x", {{"a", 1}}}}));
  EXPECT_EQ(grafted.member("y"), nullptr);
  ASSERT_NE(grafted.member("x"), nullptr);
  EXPECT_EQ(*grafted.member("x"), a_only);
}

// Random documents and filters over a small vocabulary, so that filters and documents meet.
class RandomJson {
 public:
  explicit RandomJson(std::uint64_t seed) : random_(seed) {}

  json document(int depth) {
    const auto kind = random_.uniform_int(0, depth > 0 ? 9 : 5);
    switch (kind) {
      case 0:
        return nullptr;
      case 1:
        return random_.uniform_int(0, 1) == 1;
      case 2:
        return random_.uniform_int(-1000, 1000);
      case 3:
        return random_.uniform() * 1e6;
      case 4:
        return std::numeric_limits<std::uint64_t>::max() - random_.uniform_int(0, 10);
      case 5:
        return name() + "\"\\\n\u00e9\u4e2d\U0001F600";  // escapes and multi-byte UTF-8
      case 6:
      case 7: {
        json array = json::array();
        for (auto n = random_.uniform_int(0, 4); n > 0; --n) array.push_back(document(depth - 1));
        return array;
      }
      default:
        return object(depth);
    }
  }

  json object(int depth) {
    json out = json::object();
    for (auto n = random_.uniform_int(0, 5); n > 0; --n) out[name()] = document(depth - 1);
    return out;
  }

  FieldFilter filter() {
    FieldFilter f;
    for (auto paths = random_.uniform_int(0, 6); paths > 0; --paths) {
      std::vector<std::string> path;
      for (auto n = random_.uniform_int(0, 4); n > 0; --n) path.push_back(name());
      switch (path.size()) {  // keep() takes a braced list
        case 0:
          if (random_.uniform_int(0, 9) == 0) f.keep({});
          break;
        case 1:
          f.keep({path[0]});
          break;
        case 2:
          f.keep({path[0], path[1]});
          break;
        case 3:
          f.keep({path[0], path[1], path[2]});
          break;
        default:
          f.keep({path[0], path[1], path[2], path[3]});
      }
    }
    return f;
  }

  // `text` with one byte deleted, inserted or replaced (often no longer JSON).
  std::string mutate(std::string text) {
    static const std::string kBytes = "{}[]\",:\\0123456789.eE-+ntfaslru \x01\x80\xff";
    const auto at = static_cast<std::size_t>(random_.uniform_int(0, std::int64_t(text.size()) - 1));
    const char byte = kBytes[static_cast<std::size_t>(random_.uniform_int(0, kBytes.size() - 1))];
    switch (random_.uniform_int(0, 2)) {
      case 0:
        text.erase(at, 1);
        break;
      case 1:
        text.insert(at, 1, byte);
        break;
      default:
        text[at] = byte;
    }
    return text;
  }

 private:
  std::string name() {
    static const char* kNames[] = {"a", "b", "c", "metadata", "spec", "é"};
    return kNames[random_.uniform_int(0, 5)];
  }
  RandomSource random_;
};

TEST(FieldFilter, ParsingWithAFilterIsFilteringTheWholeParseOnRandomDocuments) {
  int partly_kept = 0;  // neither everything nor nothing: the filter had work to do
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    RandomJson random(seed);
    const json doc = seed % 10 == 0 ? random.document(5) : random.object(5);
    const FieldFilter filter = random.filter();
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + doc.dump());
    auto parsed = parse_filtered(doc.dump(), filter);
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_EQ(*parsed, filter.apply(doc));
    if (*parsed != doc && *parsed != json::object() && doc.is_structured()) ++partly_kept;
    auto pretty = parse_filtered(doc.dump(2), filter);  // whitespace everywhere
    ASSERT_TRUE(pretty);
    ASSERT_EQ(*pretty, *parsed);
  }
  EXPECT_GT(partly_kept, 1000);
}

TEST(FieldFilter, RefusesExactlyWhatAWholeParseRefuses) {
  int refused = 0;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    RandomJson random(seed);
    const json doc = random.object(4);
    const FieldFilter filter = random.filter();
    const std::string text = random.mutate(doc.dump());
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + text);
    const json whole = json::parse(text, nullptr, /*allow_exceptions=*/false);
    auto parsed = parse_filtered(text, filter);
    ASSERT_EQ(parsed.has_value(), !whole.is_discarded());
    if (parsed) {
      ASSERT_EQ(*parsed, filter.apply(whole));
    } else {
      ++refused;
      EXPECT_FALSE(parsed.error().message.empty());
    }
  }
  EXPECT_GT(refused, 1000);  // the mutations do break most texts
  // Duplicate members: the last one counts, as in a whole parse.
  FieldFilter a;
  a.keep({"a", "x"});
  auto duplicate = parse_filtered(R"({"a":{"x":1,"y":2},"b":3,"a":{"x":4,"y":5}})", a);
  ASSERT_TRUE(duplicate);
  EXPECT_EQ(*duplicate, json({{"a", {{"x", 4}}}}));
  // A member name written with escapes is matched by what it spells.
  auto escaped = parse_filtered(R"({"\u0061":{"\u0078":1,"y":2}})", a);
  ASSERT_TRUE(escaped);
  EXPECT_EQ(*escaped, json({{"a", {{"x", 1}}}}));
}

FieldFilter name_only() {
  FieldFilter f;
  f.keep({"metadata", "name"});
  return f;
}

TEST(WatchEventFilter, FiltersTheObjectsOfAddedModifiedAndDeletedEventsOnly) {
  const FieldFilter event_filter = watch_event_filter(name_only());
  for (const char* type : {"ADDED", "MODIFIED", "DELETED"}) {
    const std::string line = std::string(R"({"type":")") + type +
                             R"(","object":{"kind":"Pod","metadata":{"name":"a","uid":"u"}}})";
    auto event = parse_watch_event(line, false, &event_filter);
    ASSERT_TRUE(event) << event.error().message;
    EXPECT_EQ(event->object, json({{"metadata", {{"name", "a"}}}})) << type;
    // The type may come after the object.
    auto reordered = parse_watch_event(
        std::string(R"({"object":{"metadata":{"name":"a","uid":"u"}},"type":")") + type + "\"}",
        false, &event_filter);
    ASSERT_TRUE(reordered);
    EXPECT_EQ(reordered->object, json({{"metadata", {{"name", "a"}}}})) << type;
  }
  const std::string bookmark =
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}})";
  const std::string error =
      R"({"object":{"kind":"Status","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410},"type":"ERROR"})";
  for (const std::string& line : {bookmark, error}) {
    auto filtered = parse_watch_event(line, false, &event_filter);
    auto whole = parse_watch_event(line);
    ASSERT_TRUE(filtered && whole);
    EXPECT_EQ(filtered->type, whole->type);
    EXPECT_EQ(filtered->object, whole->object);
    EXPECT_EQ(filtered->error.has_value(), whole->error.has_value());
  }
  EXPECT_TRUE(parse_watch_event(bookmark, false, &event_filter)->is_initial_events_end());
  EXPECT_TRUE(parse_watch_event(error, false, &event_filter)->error->is_gone());
}

TEST(WatchEventFilter, DecodeErrorsAreTheSameWithAFilter) {
  const FieldFilter event_filter = watch_event_filter(name_only());
  for (const std::string line : {
           R"({"type":"ADDED","object":{"metadata":{"name":"a","uid":}}})",
           R"({"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"x":tru}}})",
           R"({"type":"ADDED","object":[]})",
           R"({"type":"ADDED"})",
           R"({"type":7,"object":{}})",
           R"({"type":"NOPE","object":{"metadata":{"name":"a"}}})",
           R"(["ADDED"])",
       }) {
    SCOPED_TRACE(line);
    auto filtered = parse_watch_event(line, true, &event_filter);
    auto whole = parse_watch_event(line, true);
    ASSERT_FALSE(filtered);
    ASSERT_FALSE(whole);
    EXPECT_EQ(filtered.error().message, whole.error().message);
  }
}

TEST(WatchEventFilter, DecoderFiltersAcrossChunksAfterDroppingManagedFields) {
  const std::string stream =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"m":1}],"uid":"u"},"spec":{}}})"
      "\n"
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})"
      "\n";
  const FieldFilter filter = name_only();
  WatchDecoder decoder;
  decoder.drop_managed_fields(true);
  decoder.filter_objects(&filter);
  for (std::size_t at = 0; at < stream.size(); at += 5) decoder.feed(stream.substr(at, 5));
  auto first = decoder.next();
  ASSERT_TRUE(first && first->has_value());
  EXPECT_EQ((*first)->object, json({{"metadata", {{"name", "a"}}}}));
  auto second = decoder.next();
  ASSERT_TRUE(second && second->has_value());
  EXPECT_EQ((*second)->object, json({{"metadata", {{"resourceVersion", "7"}}}}));
  decoder.filter_objects(nullptr);  // and off again
  decoder.feed(stream.substr(0, stream.find('\n') + 1));
  auto whole = decoder.next();
  ASSERT_TRUE(whole && whole->has_value());
  EXPECT_EQ((*whole)->object["metadata"]["uid"], "u");
}

}  // namespace
}  // namespace depl::kube
