// Watch events and the decoder that turns a watch body (newline-delimited JSON arriving in
// arbitrary chunks) into events. Lines are split only at '\n', never at chunk boundaries;
// BOOKMARK objects are skeletal (only metadata.resourceVersion) and ERROR objects are Status
// values without a resourceVersion, so nothing here assumes a full object.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/kube/api_error.hpp"
#include "depl/kube/field_filter.hpp"

namespace depl::kube {

enum class WatchEventType { Added, Modified, Deleted, Bookmark, Error };

const char* to_string(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::Added;
  nlohmann::json object{};          // the object; for Error the Status
  std::optional<ApiError> error{};  // set exactly when type == Error (code 410 = relist)

  // metadata.resourceVersion of the object; "" for ERROR events (they carry none, and a
  // watcher must never resume from an ERROR's "version").
  std::string resource_version() const;
  // BOOKMARK sent at the end of a streaming list's initial events.
  bool is_initial_events_end() const;
};

// Parses one event line (`{"type":..,"object":..}`). Unknown types and malformed JSON are
// ApiError{0, DecodeError} naming what is wrong. With `drop_managed_fields`, the object's
// metadata.managedFields are cut from the text before it is parsed (what an informer's
// strip-managed-fields transform would do after, without building them first: on pods they are
// a large share of each event).
// With `event_filter` (from watch_event_filter), the objects of ADDED, MODIFIED and DELETED
// events are built with only what its object filter keeps; BOOKMARK and ERROR events, and lines
// that do not decode, come out exactly as without it.
Expected<WatchEvent, ApiError> parse_watch_event(std::string_view line,
                                                 bool drop_managed_fields = false,
                                                 const FieldFilter* event_filter = nullptr);

// The filter for whole event lines that keeps `type` and filters `object` by `object_filter`.
FieldFilter watch_event_filter(const FieldFilter& object_filter);

// The bytes of `line` (a watch event) that hold its object's metadata.managedFields member,
// with one comma next to it: [first, second) to cut so that the rest stays valid JSON. nullopt
// when the event has none there or is not well-formed that far (the parser then says what).
std::optional<std::pair<std::size_t, std::size_t>> managed_fields_span(std::string_view line);

// Incremental splitter + parser. Not thread-safe (one reader).
class WatchDecoder {
 public:
  // See parse_watch_event.
  void drop_managed_fields(bool on) { drop_managed_fields_ = on; }
  // Objects keep only what `object_filter` keeps (see parse_watch_event); nullptr: everything.
  void filter_objects(const FieldFilter* object_filter);
  // Appends bytes as they arrived from the stream.
  void feed(std::string_view bytes);
  // At the end of the body: a final line without '\n' becomes decodable (a non-chunked 200
  // carrying one ERROR event may lack the newline).
  void finish();
  // The next complete event, nullopt when more bytes are needed, or the decode error of the
  // next line (that line is consumed; decoding continues after it). Blank lines are skipped.
  std::optional<Expected<WatchEvent, ApiError>> next();
  // Bytes buffered but not yet consumed as lines.
  std::size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  std::string buffer_{};
  std::size_t consumed_ = 0;  // bytes of buffer_ already returned as lines
  std::size_t scanned_ = 0;   // bytes of buffer_ known to contain no '\n' after consumed_
  bool finished_ = false;
  bool drop_managed_fields_ = false;
  std::optional<FieldFilter> event_filter_{};
};

}  // namespace depl::kube
