#include "depl/kube/watch_event.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace depl::kube {

using nlohmann::json;

const char* to_string(WatchEventType type) {
  switch (type) {
    case WatchEventType::Added:
      return "ADDED";
    case WatchEventType::Modified:
      return "MODIFIED";
    case WatchEventType::Deleted:
      return "DELETED";
    case WatchEventType::Bookmark:
      return "BOOKMARK";
    case WatchEventType::Error:
      return "ERROR";
  }
  return "UNKNOWN";
}

std::string WatchEvent::resource_version() const {
  if (type == WatchEventType::Error || !object.is_object()) return {};
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return {};
  auto rv = metadata->find("resourceVersion");
  return (rv != metadata->end() && rv->is_string()) ? rv->get<std::string>() : std::string();
}

bool WatchEvent::is_initial_events_end() const {
  if (type != WatchEventType::Bookmark) return false;
  const json::json_pointer pointer("/metadata/annotations/k8s.io~1initial-events-end");
  return object.contains(pointer) && object.at(pointer) == "true";
}

static Unexpected<ApiError> decode_error(std::string message) {
  return unexpected(ApiError::transport(ApiError::kDecodeError, std::move(message)));
}

static std::string excerpt(std::string_view line) {
  constexpr std::size_t kMax = 120;
  std::string out(line.substr(0, kMax));
  if (line.size() > kMax) out += "...";
  return out;
}

namespace {

// A forward scan over JSON text that only finds where values end: enough to walk the few members
// on the way to metadata.managedFields and to skip the values in between without building them.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  std::size_t pos() const { return pos_; }
  bool done() const { return pos_ >= text_.size(); }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool eat(char c) {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  // A string at pos: its raw text between the quotes (escapes left as they are).
  std::optional<std::string_view> string() {
    if (!eat('"')) return std::nullopt;
    const std::size_t start = pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\\') {
        pos_ += 2;
      } else if (c == '"') {
        return text_.substr(start, pos_++ - start);
      } else {
        ++pos_;
      }
    }
    return std::nullopt;
  }
  // Moves past the value at pos. Brackets are only counted, not matched by kind: the parser
  // checks the text that is kept, and a span is only cut out of text that balances.
  bool skip_value() {
    skip_space();
    if (pos_ >= text_.size()) return false;
    const char first = text_[pos_];
    if (first == '"') return string().has_value();
    if (first != '{' && first != '[') {
      while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' &&
             text_[pos_] != ']' && text_[pos_] != ' ' && text_[pos_] != '\n') {
        ++pos_;
      }
      return true;
    }
    int depth = 0;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '"') {
        if (!string()) return false;
        continue;
      }
      ++pos_;
      if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return true;
      }
    }
    return false;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// In the object at the scanner's position, finds member `key` and leaves the scanner at its
// value; `member_start` is where its key begins and `after_comma` whether a comma came before.
bool find_member(Scanner& scan, std::string_view key, std::size_t& member_start,
                 bool& after_comma) {
  if (!scan.eat('{')) return false;
  after_comma = false;
  if (scan.peek('}')) return false;
  while (true) {
    scan.skip_space();
    member_start = scan.pos();
    auto name = scan.string();
    if (!name || !scan.eat(':')) return false;
    if (*name == key) return true;
    if (!scan.skip_value()) return false;
    if (!scan.eat(',')) return false;  // '}' (no such member) or malformed
    after_comma = true;
  }
}

}  // namespace

std::optional<std::pair<std::size_t, std::size_t>> managed_fields_span(std::string_view line) {
  Scanner scan(line);
  std::size_t start = 0;
  bool after_comma = false;
  if (!find_member(scan, "object", start, after_comma)) return std::nullopt;
  if (!find_member(scan, "metadata", start, after_comma)) return std::nullopt;
  if (!find_member(scan, "managedFields", start, after_comma)) return std::nullopt;
  if (!scan.skip_value()) return std::nullopt;
  std::size_t end = scan.pos();
  if (scan.eat(',')) {
    end = scan.pos();  // `"managedFields":[...],` then the next member
  } else if (scan.peek('}')) {
    if (after_comma) {
      // The last member: cut the comma before it too.
      std::size_t comma = start;
      while (comma > 0 && (line[comma - 1] == ' ' || line[comma - 1] == '\t' ||
                           line[comma - 1] == '\n' || line[comma - 1] == '\r')) {
        --comma;
      }
      if (comma == 0 || line[comma - 1] != ',') return std::nullopt;
      start = comma - 1;
    }
  } else {
    return std::nullopt;
  }
  return std::pair{start, end};
}

namespace {

// The event in a parsed line; `line` is for messages.
Expected<WatchEvent, ApiError> event_of(json parsed, std::string_view line) {
  if (!parsed.is_object())
    return decode_error("watch event is not a JSON object: " + excerpt(line));
  auto type = parsed.find("type");
  if (type == parsed.end() || !type->is_string()) {
    return decode_error("watch event has no string \"type\": " + excerpt(line));
  }
  auto object = parsed.find("object");
  if (object == parsed.end() || !object->is_object()) {
    return decode_error("watch event has no \"object\" object: " + excerpt(line));
  }
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ADDED") {
    event.type = WatchEventType::Added;
  } else if (name == "MODIFIED") {
    event.type = WatchEventType::Modified;
  } else if (name == "DELETED") {
    event.type = WatchEventType::Deleted;
  } else if (name == "BOOKMARK") {
    event.type = WatchEventType::Bookmark;
  } else if (name == "ERROR") {
    event.type = WatchEventType::Error;
  } else {
    return decode_error("watch event has unknown type \"" + name + "\"");
  }
  event.object = std::move(*object);
  if (event.type == WatchEventType::Error) event.error = ApiError::from_status(event.object);
  return event;
}

}  // namespace

FieldFilter watch_event_filter(const FieldFilter& object_filter) {
  FieldFilter filter;
  filter.keep({"type"});
  filter.keep({"object"}, object_filter);
  return filter;
}

Expected<WatchEvent, ApiError> parse_watch_event(std::string_view line, bool drop_managed_fields,
                                                 const FieldFilter* event_filter) {
  std::string kept;
  if (drop_managed_fields) {
    if (auto span = managed_fields_span(line)) {
      kept.reserve(line.size() - (span->second - span->first));
      kept.append(line.substr(0, span->first)).append(line.substr(span->second));
      line = kept;
    }
  }
  if (event_filter != nullptr) {
    // The type may come after the object, so the filter is applied to every line and the rare
    // event it must not touch (BOOKMARK, ERROR) or that does not decode is parsed again whole.
    if (auto parsed = parse_filtered(line, *event_filter)) {
      auto event = event_of(std::move(*parsed), line);
      if (event && event->type != WatchEventType::Bookmark && event->type != WatchEventType::Error)
        return event;
    }
  }
  json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    std::string why;
    try {
      json ignored = json::parse(line);
      (void)ignored;
    } catch (const json::exception& e) {
      why = e.what();
    }
    return decode_error("watch event is not valid JSON (" + why + "): " + excerpt(line));
  }
  return event_of(std::move(parsed), line);
}

void WatchDecoder::filter_objects(const FieldFilter* object_filter) {
  event_filter_.reset();
  if (object_filter != nullptr) event_filter_ = watch_event_filter(*object_filter);
}

void WatchDecoder::feed(std::string_view bytes) {
  // Drop consumed bytes once they dominate the buffer, keeping appends amortised O(1).
  if (consumed_ > 0 && consumed_ >= buffer_.size() / 2) {
    buffer_.erase(0, consumed_);
    scanned_ -= consumed_;
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

void WatchDecoder::finish() {
  finished_ = true;
}

std::optional<Expected<WatchEvent, ApiError>> WatchDecoder::next() {
  while (consumed_ < buffer_.size()) {
    std::size_t from = std::max(consumed_, scanned_);
    const void* found = std::memchr(buffer_.data() + from, '\n', buffer_.size() - from);
    std::size_t end;
    std::size_t after;
    if (found != nullptr) {
      end = static_cast<std::size_t>(static_cast<const char*>(found) - buffer_.data());
      after = end + 1;
    } else if (finished_) {
      end = buffer_.size();
      after = end;
    } else {
      scanned_ = buffer_.size();
      return std::nullopt;
    }
    std::string_view line(buffer_.data() + consumed_, end - consumed_);
    consumed_ = after;
    scanned_ = after;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    return parse_watch_event(line, drop_managed_fields_, event_filter_ ? &*event_filter_ : nullptr);
  }
  return std::nullopt;
}

}  // namespace depl::kube
