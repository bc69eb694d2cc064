// Fuzz target: a watch response body through WatchDecoder, fed in chunks split at points the
// fuzzer chooses, and each event's accessors. The input is
//   <n> <n chunk lengths> <body>
// (one byte each: n = first byte % 8, lengths 1..256, used in turn). Splitting must not change
// what is decoded: the events are compared with a decode of the whole body in one chunk.
// Decoding with a field filter must give the filtered objects of the same events, and the same
// errors.
#include <string>
#include <vector>

#include "depl/kube/watch_event.hpp"
#include "fuzz_target.hpp"

namespace depl::fuzz {
namespace {

using kube::ApiError;
using kube::WatchDecoder;
using kube::WatchEvent;
using kube::WatchEventType;

// What one decoded line came to, for comparing two decodes.
std::string summary(const Expected<WatchEvent, ApiError>& result) {
  if (!result) {
    check(result.error().is_transport() && result.error().reason == ApiError::kDecodeError,
          "a bad line is a DecodeError");
    check(!result.error().message.empty(), "a decode error says what is wrong");
    return "error: " + result.error().message;
  }
  const WatchEvent& event = *result;
  check(event.object.is_object(), "an event's object is an object");
  check(event.error.has_value() == (event.type == WatchEventType::Error),
        "error is set exactly for ERROR events");
  const std::string rv = event.resource_version();
  if (event.type == WatchEventType::Error) {
    check(rv.empty(), "an ERROR event has no resourceVersion");
    const ApiError& error = *event.error;
    check(error.code >= 100 && error.code <= 599, "an ERROR event's code is an HTTP status");
    if (auto code = event.object.find("code");
        code != event.object.end() && code->is_number_integer() &&
        code->get<std::int64_t>() >= 100 && code->get<std::int64_t>() <= 599) {
      check(error.code == code->get<std::int64_t>(), "an ERROR event keeps the Status code");
    }
    check(!error.to_string().empty(), "an ApiError prints");
    (void)error.is_gone();
  }
  const bool end = event.is_initial_events_end();
  check(!end || event.type == WatchEventType::Bookmark, "only a BOOKMARK ends initial events");
  return std::string(kube::to_string(event.type)) + " " + rv + (end ? " end" : "");
}

void drain(WatchDecoder& decoder, std::vector<std::string>& out) {
  while (auto next = decoder.next()) out.push_back(summary(*next));
}

}  // namespace

int watch_stream(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t count = data[0] % 8;
  if (size < 1 + count) return 0;
  std::vector<std::size_t> lengths;
  for (std::size_t i = 0; i < count; ++i) lengths.push_back(std::size_t{data[1 + i]} + 1);
  const std::string_view body = as_text(data + 1 + count, size - 1 - count);

  std::vector<std::string> whole;
  {
    WatchDecoder decoder;
    decoder.feed(body);
    drain(decoder, whole);
    decoder.finish();
    drain(decoder, whole);
    check(decoder.buffered() == 0, "finish() leaves nothing buffered");
  }

  std::vector<std::string> chunked;
  WatchDecoder decoder;
  std::size_t at = 0;
  for (std::size_t i = 0; at < body.size(); ++i) {
    const std::size_t length = lengths.empty() ? body.size() : lengths[i % lengths.size()];
    const std::string_view chunk = body.substr(at, length);
    decoder.feed(chunk);
    at += chunk.size();
    drain(decoder, chunked);
    check(decoder.buffered() <= body.size(), "buffered() is bounded by what was fed");
  }
  decoder.finish();
  drain(decoder, chunked);
  check(decoder.buffered() == 0, "finish() leaves nothing buffered");
  check(chunked == whole, "chunking does not change the decoded events");

  // parse_watch_event on its own, as the watcher uses it for a body without newlines.
  const auto full = kube::parse_watch_event(body);
  (void)summary(full);
  // Dropping managedFields while decoding: what a full parse and stripping them gives (text that
  // does not parse whole may parse without the cut member).
  const auto dropped = kube::parse_watch_event(body, /*drop_managed_fields=*/true);
  (void)summary(dropped);
  if (full) {
    check(dropped.has_value(), "a line that parses whole parses without its managedFields");
    check(dropped->type == full->type, "dropping managedFields keeps the event type");
    auto strip = [](nlohmann::json object) {
      if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
        meta->erase("managedFields");
      }
      return object;
    };
    check(strip(dropped->object) == strip(full->object),
          "dropping managedFields changes nothing else");
  }
  static const kube::FieldFilter kObjectFilter = [] {
    kube::FieldFilter f;
    f.keep({"metadata", "name"}).keep({"metadata", "labels"});
    f.keep({"spec", "containers", "name"}).keep({"status", "phase"});
    return f;
  }();
  static const kube::FieldFilter kEventFilter = kube::watch_event_filter(kObjectFilter);
  const auto filtered = kube::parse_watch_event(body, true, &kEventFilter);
  (void)summary(filtered);
  check(filtered.has_value() == dropped.has_value(), "a filter does not change what decodes");
  if (dropped) {
    check(filtered->type == dropped->type, "a filter keeps the event type");
    const bool filters = dropped->type == WatchEventType::Added ||
                         dropped->type == WatchEventType::Modified ||
                         dropped->type == WatchEventType::Deleted;
    check(filtered->object == (filters ? kObjectFilter.apply(dropped->object) : dropped->object),
          "a filter keeps what it names of ADDED/MODIFIED/DELETED objects, all of the others");
  } else {
    check(filtered.error().message == dropped.error().message,
          "a filter does not change decode errors");
  }
  return 0;
}

}  // namespace depl::fuzz

DEPL_FUZZ_ENTRY(watch_stream)
