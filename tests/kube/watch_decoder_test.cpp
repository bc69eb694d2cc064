// Watch decoding: events split only at newlines whatever the chunking, skeletal bookmarks,
// ERROR events carrying a Status and no resourceVersion.
#include "depl/kube/watch_event.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace depl::kube {
namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"n","resourceVersion":"10"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a\nb","resourceVersion":"11"}}})"
    "\r\n\n"
    R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12"}}})"
    "\n"
    R"({"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"13"}}})"
    "\n"
    R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 13 (20)","reason":"Expired","code":410}})json"
    "\n";

struct Decoded {
  std::string type;
  std::string rv;
  std::string name;
};

std::vector<Decoded> decode(const std::vector<std::string_view>& chunks) {
  WatchDecoder decoder;
  std::vector<Decoded> out;
  auto drain = [&] {
    while (auto event = decoder.next()) {
      EXPECT_TRUE(event->has_value()) << event->error().message;
      if (!event->has_value()) continue;
      const WatchEvent& e = **event;
      out.push_back({to_string(e.type), e.resource_version(),
                     e.object.value("metadata", nlohmann::json::object()).value("name", "")});
    }
  };
  for (auto chunk : chunks) {
    decoder.feed(chunk);
    drain();
  }
  decoder.finish();
  drain();
  return out;
}

void expect_stream(const std::vector<Decoded>& events) {
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].type, "ADDED");
  EXPECT_EQ(events[0].rv, "10");
  EXPECT_EQ(events[1].type, "MODIFIED");
  EXPECT_EQ(events[1].name, "a\nb");  // an escaped newline inside a string is not a boundary
  EXPECT_EQ(events[2].type, "BOOKMARK");
  EXPECT_EQ(events[2].rv, "12");
  EXPECT_EQ(events[3].type, "DELETED");
  EXPECT_EQ(events[4].type, "ERROR");
  EXPECT_EQ(events[4].rv, "");  // never resume from an ERROR
}

TEST(WatchDecoder, WholeStreamInOneChunk) {
  expect_stream(decode({kStream}));
}

TEST(WatchDecoder, EveryTwoAndThreeWaySplit) {
  const std::string_view all(kStream);
  for (std::size_t i = 0; i <= all.size(); ++i) {
    expect_stream(decode({all.substr(0, i), all.substr(i)}));
    if (HasFailure()) FAIL() << "split at " << i;
  }
  for (std::size_t i = 0; i <= all.size(); i += 7) {
    for (std::size_t j = i; j <= all.size(); ++j) {
      expect_stream(decode({all.substr(0, i), all.substr(i, j - i), all.substr(j)}));
      if (HasFailure()) FAIL() << "split at " << i << "," << j;
    }
  }
}

TEST(WatchDecoder, ByteByByteAndSeededRandomChunks) {
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < kStream.size(); ++i)
    bytes.push_back(std::string_view(kStream).substr(i, 1));
  expect_stream(decode(bytes));
  std::mt19937 random(20260101);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string_view> chunks;
    std::size_t at = 0;
    while (at < kStream.size()) {
      std::size_t n = std::uniform_int_distribution<std::size_t>(0, 40)(random);
      chunks.push_back(std::string_view(kStream).substr(at, n));
      at += n;
    }
    expect_stream(decode(chunks));
    if (HasFailure()) FAIL() << "round " << round;
  }
}

TEST(WatchDecoder, IncompleteLineWaitsForNewline) {
  WatchDecoder decoder;
  decoder.feed(R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"}}})");
  EXPECT_FALSE(decoder.next());  // complete JSON but no newline yet: not an event
  decoder.feed("\n");
  auto event = decoder.next();
  ASSERT_TRUE(event && event->has_value());
  EXPECT_EQ((*event)->resource_version(), "1");
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(WatchDecoder, FinalLineWithoutNewlineAtEndOfBody) {
  // A non-chunked 200 carrying one ERROR event may end without a newline.
  WatchDecoder decoder;
  decoder.feed(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Gone","message":"too old"}})");
  EXPECT_FALSE(decoder.next());
  decoder.finish();
  auto event = decoder.next();
  ASSERT_TRUE(event && event->has_value());
  EXPECT_EQ((*event)->type, WatchEventType::Error);
  ASSERT_TRUE((*event)->error);
  EXPECT_TRUE((*event)->error->is_gone());
  EXPECT_EQ((*event)->resource_version(), "");
}

TEST(WatchDecoder, SkeletalBookmarkAndInitialEventsEnd) {
  auto event = parse_watch_event(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"99","annotations":{"k8s.io/initial-events-end":"true"}}}})");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->type, WatchEventType::Bookmark);
  EXPECT_EQ(event->resource_version(), "99");
  EXPECT_TRUE(event->is_initial_events_end());
  auto plain =
      parse_watch_event(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5"}}})");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->is_initial_events_end());
}

TEST(WatchDecoder, MalformedLinesAreErrorsAndDecodingContinues) {
  WatchDecoder decoder;
  decoder.feed(
      "{not json}\n{\"type\":\"SOMETHING\",\"object\":{}}\n{\"type\":\"ADDED\"}\n"
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"3\"}}}\n");
  auto bad_json = decoder.next();
  ASSERT_TRUE(bad_json && !bad_json->has_value());
  EXPECT_EQ(bad_json->error().reason, ApiError::kDecodeError);
  EXPECT_NE(bad_json->error().message.find("not valid JSON"), std::string::npos);
  auto bad_type = decoder.next();
  ASSERT_TRUE(bad_type && !bad_type->has_value());
  EXPECT_NE(bad_type->error().message.find("unknown type \"SOMETHING\""), std::string::npos);
  auto no_object = decoder.next();
  ASSERT_TRUE(no_object && !no_object->has_value());
  auto good = decoder.next();
  ASSERT_TRUE(good && good->has_value());
  EXPECT_EQ((*good)->resource_version(), "3");
}

// The object without metadata.managedFields, as a cache that strips them keeps it.
nlohmann::json without_managed_fields(nlohmann::json object) {
  if (object.contains("metadata") && object["metadata"].is_object()) {
    object["metadata"].erase("managedFields");
  }
  return object;
}

// Dropping managedFields while decoding gives what stripping them after a full parse gives,
// wherever the member sits in metadata, however the text is spaced; anything else named
// managedFields (a label, a field of the spec, text in a string) stays.
TEST(WatchDecoder, DropsManagedFieldsOfTheObjectOnly) {
  const std::string fields =
      R"([{"manager":"kubelet","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{}}}}},"note":"a \"]}\\"}])";
  const std::vector<std::string> lines = {
      // In the middle, as the API server orders metadata.
      R"({"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"managedFields":"x"},"managedFields":)" +
          fields + R"(,"name":"p","resourceVersion":"7"},"spec":{"managedFields":[1]}}})",
      // First, last, alone.
      R"({"type":"ADDED","object":{"metadata":{"managedFields":)" + fields +
          R"(,"name":"p","resourceVersion":"8"}}})",
      R"({"object":{"metadata":{"name":"p","resourceVersion":"9","managedFields":)" + fields +
          R"(}},"type":"ADDED"})",
      R"({"type":"ADDED","object":{"metadata":{"managedFields":)" + fields + R"(}}})",
      // Spaced out, and an annotation holding the text of a managedFields member.
      " { \"type\" : \"ADDED\" , \"object\" : { \"metadata\" : { \"annotations\" : "
      "{\"a\":\"\\\"managedFields\\\":[]\"} ,\n \"managedFields\" : " +
          fields + " \t} } } ",
      R"({"type":"ADDED","object":{"metadata":{"name":"none"}}})",
      R"({"type":"ADDED","object":{"metadata":{}}})",
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}})",
  };
  for (const auto& line : lines) {
    SCOPED_TRACE(line);
    auto full = parse_watch_event(line);
    ASSERT_TRUE(full.has_value()) << full.error().message;
    auto dropped = parse_watch_event(line, /*drop_managed_fields=*/true);
    ASSERT_TRUE(dropped.has_value()) << dropped.error().message;
    EXPECT_EQ(dropped->type, full->type);
    EXPECT_EQ(dropped->object, without_managed_fields(full->object));
  }
  // What stays: the label, the spec field, the annotation's text.
  auto first = parse_watch_event(lines[0], true);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->object["metadata"]["labels"]["managedFields"], "x");
  EXPECT_EQ(first->object["spec"]["managedFields"], nlohmann::json::array({1}));
  EXPECT_FALSE(first->object["metadata"].contains("managedFields"));

  // Through the decoder, in chunks.
  WatchDecoder decoder;
  decoder.drop_managed_fields(true);
  for (std::string line : lines) {
    std::replace(line.begin(), line.end(), '\n', ' ');  // a stream's lines end at newlines
    for (std::size_t at = 0; at < line.size(); at += 7) decoder.feed(line.substr(at, 7));
    decoder.feed("\n");
    auto event = decoder.next();
    ASSERT_TRUE(event && event->has_value());
    EXPECT_FALSE((*event)->object["metadata"].contains("managedFields"));
  }
}

// A line that is not well-formed is the same decode error with or without dropping.
TEST(WatchDecoder, DroppingManagedFieldsKeepsDecodeErrors) {
  for (const std::string line : {
           R"({"type":"ADDED","object":{"metadata":{"managedFields":[{"a":1}],"name":)",
           R"({"type":"ADDED","object":{"metadata":{"managedFields":[{"a":1}]]}}})",
           R"({"type":"ADDED","object":{"metadata":{"managedFields":[{"a":"unterminated}]}}})",
           R"({"type":"ADDED","object":{"metadata":{"managedFields":})",
           R"({"type":"NOPE","object":{"metadata":{"managedFields":[]}}})",
       }) {
    SCOPED_TRACE(line);
    auto full = parse_watch_event(line);
    auto dropped = parse_watch_event(line, true);
    ASSERT_FALSE(full.has_value());
    ASSERT_FALSE(dropped.has_value());
    EXPECT_EQ(dropped.error().reason, ApiError::kDecodeError);
  }
}

TEST(WatchDecoder, LargeStreamKeepsBufferBounded) {
  WatchDecoder decoder;
  const std::string line = R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"}}})"
                           "\n";
  int events = 0;
  for (int i = 0; i < 10000; ++i) {
    decoder.feed(line);
    while (auto event = decoder.next()) events += event->has_value() ? 1 : 0;
    ASSERT_EQ(decoder.buffered(), 0u);
  }
  EXPECT_EQ(events, 10000);
}

}  // namespace
}  // namespace depl::kube
